"""The JUnit XML document of a report (the ``.xml`` reporter, ``junit.py``): built with
ElementTree (correct escaping) and written one test case at a time; characters that XML 1.0
forbids are removed from agent text. Imported only when such a report is written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby
from typing import IO, Any
from xml.sax.saxutils import quoteattr

from ..rates import interval_text, wilson_pct
from ..stability import CaseStats
from ._common import (
    Report,
    as_text,
    bad_assertions,
    clip,
    input_text,
    reason_label,
    shown_turns,
)

_COUNTS = {"failures": "failed", "errors": "error", "skipped": "skipped"}
_ILLEGAL = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any, limit: int = 0) -> str:
    """Text with the characters XML 1.0 cannot hold removed (control characters, surrogates)."""
    return _ILLEGAL.sub("", clip(as_text(value), limit) if limit else as_text(value))


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _open_tag(tag: str, attrs: dict[str, Any]) -> str:
    body = "".join(f" {k}={quoteattr(xml_text(v))}" for k, v in attrs.items() if v is not None)
    return f"<{tag}{body}>"


def _run_lines(record: dict[str, Any], limit: int) -> list[str]:
    lines = []
    if record.get("error"):
        lines.append(f"{reason_label(record).lower()}: {clip(str(record['error']), limit)}")
    if record.get("traceback"):  # where the agent raised, as CI shows a test's traceback
        lines.append(clip(str(record["traceback"]).rstrip("\n"), limit))
    for a in bad_assertions(record):
        lines.append(f"assertion {a.get('type')} {a.get('status')}: {a.get('message', '')}")
        for key in ("expected", "actual"):
            if key in a:
                lines.append(f"  {key}: {clip(as_text(a[key]), limit)}")
    return lines


def _problem(case: CaseStats, records: list[dict[str, Any]], multi: bool, limit: int) -> ET.Element | None:
    if case.status not in ("failed", "error"):
        return None
    tag = "failure" if case.status == "failed" else "error"
    bad = [r for r in records if r.get("status") == case.status] or records
    if multi:
        gate = f" (gate {case.min_pass_rate:g}%)" if case.min_pass_rate is not None else ""
        ci = interval_text(wilson_pct(case.passed, case.runs))
        message = f"pass rate {case.pass_rate or 0:.1f}% ({ci}){gate} over {case.runs} runs: {case.reason or ''}"
    else:
        message = case.reason or case.status
    el = ET.Element(
        tag, {"message": xml_text(message, 1000), "type": "AssertionFailed" if tag == "failure" else "Error"}
    )
    text = []
    for r in bad[:10]:
        text.append(f"run {r.get('run', 1)}: {r.get('status')}")
        text += _run_lines(r, limit)
    el.text = xml_text("\n".join(text), limit * 5)
    return el


def testcase(case: CaseStats, records: list[dict[str, Any]], multi: bool, limit: int, name: str = "") -> ET.Element:
    """One ``<testcase>`` element for a case and the records of its runs (``name``: its label,
    ``id [agent]`` when the run tested several agents)."""
    el = ET.Element("testcase", {"classname": xml_text(case.file), "name": xml_text(name or case.id)})
    el.set("time", _seconds(case.total_ms))
    el.set("file", xml_text(case.file))
    el.set("line", str(case.line))
    props = ET.SubElement(el, "properties")
    if case.pass_rate is not None:
        ET.SubElement(props, "property", {"name": "pass_rate", "value": f"{case.pass_rate:.1f}"})
    if multi:
        d = case.to_dict()
        for key in ("runs", "consistency", "classification", "avg_duration_ms", "std_deviation_ms"):
            if d.get(key) is not None:
                ET.SubElement(props, "property", {"name": key, "value": xml_text(d[key])})
        if d.get("pass_rate_ci") is not None:  # its 95% Wilson interval, as "low-high" in percent
            low, high = d["pass_rate_ci"]
            ET.SubElement(props, "property", {"name": "pass_rate_ci", "value": f"{low:.1f}-{high:.1f}"})
    if case.name:
        ET.SubElement(props, "property", {"name": "title", "value": xml_text(case.name)})
    if case.agent:
        ET.SubElement(props, "property", {"name": "agent", "value": xml_text(case.agent)})
    if case.flaky:
        ET.SubElement(props, "property", {"name": "flaky", "value": "true"})  # in the run history
    problem = _problem(case, records, multi, limit)
    if problem is not None:
        el.append(problem)
    elif case.status == "skipped":
        reason = next((r.get("error") for r in records if r.get("error")), None)
        ET.SubElement(el, "skipped", {"message": xml_text(reason or "skipped", 1000)})
    out = []
    for r in records:
        if multi:
            out.append(f"--- run {r.get('run', 1)}: {r.get('status')} ({r.get('duration_ms', 0)}ms)")
        if r.get("input") is not None and (r is records[0]):
            out.append(f"input:\n{clip(input_text(r['input']), limit)}")
        for t in shown_turns(r, limit):
            if isinstance(t, str):
                out.append(t)
            else:
                out.append(f"turn {t.get('turn')} user: {clip(input_text(t.get('input')), limit)}")
                out.append(f"turn {t.get('turn')} agent: {clip(as_text(t.get('output')), limit)}")
        if not r.get("turns"):
            out.append(f"output:\n{clip(as_text(r.get('output')), limit)}")
        if multi:
            out += _run_lines(r, limit)
    if out:  # every run is listed, within the same bound as the failure's text
        ET.SubElement(el, "system-out").text = xml_text("\n".join(out), limit * 5)
    return el


def write(report: Report, out: IO[str], limit: int) -> None:
    """Write the JUnit document to ``out``, one test case at a time."""
    s = report.summary
    out.write('<?xml version="1.0" encoding="utf-8"?>\n')
    cases = report.cases
    total_ms = sum(c.total_ms for c in cases)
    counts = {k: sum(c.status == v for c in cases) for k, v in _COUNTS.items()}
    missing = bool(report.incomplete)  # one more test, in error: CI must not show the rest as green
    counts["errors"] += missing
    attrs = {"name": "specrun", "tests": len(cases) + missing, **counts, "time": _seconds(total_ms)}
    out.write(_open_tag("testsuites", attrs) + "\n")
    if report.incomplete:
        out.write('  <testsuite name="specrun" tests="1" failures="0" errors="1" skipped="0" time="0.000">\n')
        el = ET.Element("testcase", {"classname": "specrun", "name": "incomplete report", "time": "0.000"})
        ET.SubElement(el, "error", {"message": xml_text(report.incomplete_note(), 1000), "type": "Incomplete"})
        out.write("    " + ET.tostring(el, encoding="unicode") + "\n  </testsuite>\n")
    for file, group in groupby(cases, key=lambda c: c.file):
        members = list(group)
        counts = {k: sum(c.status == v for c in members) for k, v in _COUNTS.items()}
        attrs = {"name": file or "specrun", "tests": len(members), **counts}
        attrs.update(time=_seconds(sum(c.total_ms for c in members)), timestamp=report.info.get("started_at") or None)
        out.write("  " + _open_tag("testsuite", attrs) + "\n")
        props = ET.Element("properties")
        passed = sum(c.passed for c in members)
        executed = sum(c.runs for c in members)
        if executed:
            ET.SubElement(props, "property", {"name": "pass_rate", "value": f"{100 * passed / executed:.1f}"})
        ET.SubElement(props, "property", {"name": "runs_per_case", "value": str(s.get("runs_per_case", 1))})
        if s.get("min_pass_rate") is not None:
            ET.SubElement(props, "property", {"name": "min_pass_rate", "value": str(s["min_pass_rate"])})
        if report.interrupted:
            ET.SubElement(props, "property", {"name": "interrupted", "value": "true"})
        out.write("    " + ET.tostring(props, encoding="unicode") + "\n")
        for case in members:
            el = testcase(case, report.records(case), report.multi, limit, report.label(case))
            out.write("    " + ET.tostring(el, encoding="unicode") + "\n")
        out.write("  </testsuite>\n")
    out.write("</testsuites>\n")
