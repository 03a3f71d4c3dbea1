"""GitHub Actions: failures as annotations on the suite lines, and a summary on the run's page.

When ``GITHUB_ACTIONS=true`` (GitHub sets it in every job), a run has one more plugin on the
lifecycle hooks (see :mod:`specrun._run.lifecycle`). At the end, each failed or errored case becomes
an ``::error file=<suite>,line=<case line>,title=<case id>::<why>`` workflow command, so the
failure shows on the suite file in the pull request, and a Markdown summary (totals, each
failure with expected vs actual, the cases the run history finds flaky against the agent they
ran against: their results say ``flaky``, see :mod:`specrun._history.store`) is appended to
``$GITHUB_STEP_SUMMARY``. A flaky mark names its agent: a case flaky against agent a is not
flaky against agent b.

An agent's text must not become a workflow command: while the cases run, command processing is
stopped (``::stop-commands::<random token>``, GitHub's own switch) and it resumes only after the
console has printed everything, just before the annotations. What goes into an annotation or the
summary is read back from the result stream, whose secrets are masked already.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .. import hookimpl
from .._core.data import format_duration, to_json
from .._core.results import RunInfo
from .console import reader_gone
from .display import md_text, shorten, visible
from .stability import CaseStats, verdict
from .stream import Stream, scan

MAX_ANNOTATIONS = 50  # GitHub keeps 50 annotations of a kind per job (10 per step): say more in the summary
MAX_DETAILED = 50  # failures shown with their assertions in the summary; the rest by id
MAX_LISTED = 500
CELL = 300  # characters of an expected or actual value in a summary cell
ICONS = {"passed": "✅", "failed": "❌", "error": "⚠️", "skipped": "⏭️"}


def github_actions(environ: Mapping[str, str]) -> list[object]:
    """The GitHub Actions plugin for a run when ``environ`` says the run is in a GitHub job, else none."""
    if environ.get("GITHUB_ACTIONS") != "true":
        return []
    summary = environ.get("GITHUB_STEP_SUMMARY")
    workspace = environ.get("GITHUB_WORKSPACE")
    return [GitHubActions(Path(summary) if summary else None, Path(workspace) if workspace else None)]


@contextlib.contextmanager
def commands_stopped(environ: Mapping[str, str], out: IO[str] | None = None) -> Iterator[None]:
    """In a GitHub job, workflow commands are off while the block prints (what an agent wrote,
    outside a run's lifecycle: direct mode's answer); elsewhere nothing is printed."""
    if environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    out = out or sys.stdout
    token = secrets.token_hex(16)
    out.write(f"::stop-commands::{token}\n")
    out.flush()
    try:
        yield
    finally:
        out.flush()
        out.write(f"::{token}::\n")
        out.flush()


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class GitHubActions:
    """Annotations on stdout and a step summary; a plugin of one run (see the module docstring)."""

    def __init__(self, summary: Path | None, workspace: Path | None, out: IO[str] | None = None):
        self.summary = summary
        self.workspace = workspace.resolve() if workspace else None
        self.out = out or sys.stdout
        self._token = secrets.token_hex(16)
        self._gone = False

    def _command(self, line: str) -> None:
        if self._gone:
            return
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except BrokenPipeError:  # ``specrun ... | head``: the summary is still written
            self._gone = True
            reader_gone(self.out)

    @hookimpl(tryfirst=True)
    def run_started(self, info: RunInfo) -> None:
        self._command(f"::stop-commands::{self._token}")

    @hookimpl(trylast=True)  # after the console: every line an agent's text could be on is out
    def run_finished(self, info: RunInfo, summary: dict[str, Any], stream: Path) -> None:
        self._command(f"::{self._token}::")
        scanned = scan(stream, summary.get("min_pass_rate"))  # the reports' own scan, shared with them
        failures = [c for c in scanned.aggregator.cases() if c.status in ("failed", "error")]
        for case in failures[:MAX_ANNOTATIONS]:
            self._command(self._annotation(case, _failing_record(scanned, case)))
        if len(failures) > MAX_ANNOTATIONS:
            more = len(failures) - MAX_ANNOTATIONS
            self._command(f"::warning title=specrun::{more} more failed cases: see the job summary")
        if self.summary is not None:
            with open(self.summary, "a", encoding="utf-8") as fh:
                fh.write(self._markdown(summary, scanned, failures))

    def _is_flaky(self, case: CaseStats) -> bool:
        return case.flaky

    def _flaky_note(self, case: CaseStats) -> str:
        """``flaky against AGENT in the run history`` when it is, else nothing."""
        if not self._is_flaky(case):
            return ""
        return f"flaky against {case.agent} in the run history" if case.agent else "flaky in the run history"

    def _file(self, file: str) -> str:
        """The suite's path from the repository root, as annotations need it."""
        path = Path(file).resolve()
        if self.workspace is not None and path.is_relative_to(self.workspace):
            return path.relative_to(self.workspace).as_posix()
        return file

    def _annotation(self, case: CaseStats, record: dict[str, Any]) -> str:
        lines = [f"{case.status}: {case.reason or case.status}"]
        if case.runs > 1:
            lines[0] += f" ({case.passed} of {case.runs} runs passed)"
        if self._is_flaky(case):
            lines[0] += f" ({self._flaky_note(case)})"
        for assertion in _bad_assertions(record)[:3]:
            if "expected" in assertion or "actual" in assertion:
                lines.append(f"{assertion.get('type')}: expected {_value(assertion.get('expected'), CELL)}")
                lines.append(
                    f"{' ' * len(str(assertion.get('type')))}  actual   {_value(assertion.get('actual'), CELL)}"
                )
        where = f"file={_escape_property(self._file(case.file))},line={case.line},title={_escape_property(case.id)}"
        return f"::error {where}::{_escape_data(visible(chr(10).join(lines)))}"

    def _markdown(self, summary: dict[str, Any], scanned: Stream, failures: list[CaseStats]) -> str:
        outcome, label = verdict(summary)
        icon = ICONS.get(outcome, "⚠️")
        rate = summary.get("overall_pass_rate")
        lines = [
            f"## {icon} specrun: {md_text(label)}",
            "",
            "| Total | Passed | Failed | Errors | Skipped | Pass rate | Duration |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {summary.get('total', 0)} | {summary.get('passed', 0)} | {summary.get('failed', 0)} "
            f"| {summary.get('errors', 0)} | {summary.get('skipped', 0)} | {'-' if rate is None else f'{rate}%'} "
            f"| {format_duration((summary.get('duration_ms') or 0) / 1000)} |",
            "",
        ]
        if failures:
            lines += ["### Failures", ""]
        for case in failures[:MAX_DETAILED]:
            lines += self._failure(case, _failing_record(scanned, case))
        rest = failures[MAX_DETAILED:]
        if rest:
            lines += [f"{len(rest)} more: " + ", ".join(f"`{md_text(c.id, 100)}`" for c in rest[:MAX_LISTED])]
            lines += [
                f"and {len(rest) - MAX_LISTED} more (see the result stream)" if len(rest) > MAX_LISTED else "",
                "",
            ]
        flaky = [c for c in scanned.aggregator.cases() if self._is_flaky(c)]
        if flaky:
            lines += [
                "### Flaky in the run history",
                "",
                "| Case | Suite | Agent | This run |",
                "| --- | --- | --- | --- |",
            ]
            for case in flaky:
                where = f"{md_text(self._file(case.file))}:{case.line}"
                agent = md_text(case.agent or "", 100)
                lines.append(
                    f"| {md_text(case.id, 200)} | {where} | {agent} | {ICONS.get(case.status, '')} {case.status} |"
                )
            lines.append("")
        return "\n".join(lines) + "\n"

    def _failure(self, case: CaseStats, record: dict[str, Any]) -> list[str]:
        icon = ICONS[case.status]
        name = f" · {md_text(case.name, 120)}" if case.name else ""
        runs = f" · {case.passed} of {case.runs} runs passed" if case.runs > 1 else ""
        runs += f" · {md_text(self._flaky_note(case))}" if self._is_flaky(case) else ""
        lines = [
            f"#### {icon} {md_text(case.id, 200)}{name}",
            "",
            f"{md_text(self._file(case.file))}:{case.line} · {case.status}{runs}",
            "",
        ]
        bad = _bad_assertions(record)
        if record.get("error") or not bad:
            lines += [f"{case.status}: {md_text(record.get('error') or case.reason or '', 500)}", ""]
        if bad:
            lines += ["| Assertion | Message | Expected | Actual |", "| --- | --- | --- | --- |"]
            for a in bad:
                cells = [md_text(a.get("type", "?")), md_text(a.get("message") or a.get("status"), 500)]
                cells += [md_text(_value(a.get(k), CELL)) if k in a else "" for k in ("expected", "actual")]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        return lines


def _failing_record(scanned: Stream, case: CaseStats) -> dict[str, Any]:
    """The first run of a case that did not pass (its record as the stream has it)."""
    return next((r for r in scanned.records(case) if r.get("status") in ("failed", "error")), {})


def _bad_assertions(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in record.get("assertions") or [] if isinstance(a, dict) and a.get("status") in ("failed", "error")]


def _value(value: Any, limit: int) -> str:
    """A value on one line: text as is, anything else as JSON."""
    text = value if isinstance(value, str) else to_json(value)
    return shorten(" ".join(text.split()), limit)
