"""The ``.md`` reporter: the seed's Markdown report (summary, environment, one section per case).

Registered through register_reporters (see this package). Agent and suite text never becomes
markup: multi-line text goes in fenced code blocks whose fence is longer than any backtick run
inside, and inline text (headings, table cells) is escaped by ``specrun._report.display.md_text``.
"""

from __future__ import annotations

from typing import IO, Any

from ..display import md_block, md_text
from ..rates import interval_text, pair_lines, rate_text, sample_lines, summary_runs, wilson_pct
from ..stability import CaseStats
from ._common import (
    ICONS,
    LABELS,
    Report,
    WholeFileReporter,
    as_text,
    bad_assertions,
    clip,
    cost,
    fmt_ms,
    input_text,
    pct,
    reason_label,
    shown_runs,
    shown_turns,
)

MAX_CHARS = 20_000  # per block; the JSON report has everything


def _table(rows: list[tuple[str, Any]], head: tuple[str, str]) -> list[str]:
    """A two-column table; rows are already Markdown (escape user text before)."""
    lines = [f"| {head[0]} | {head[1]} |", "| --- | --- |"]
    lines += [f"| {k} | {'-' if v is None else v} |" for k, v in rows]
    return [*lines, ""]


def _block(label: str, value: Any, limit: int, info: str = "") -> list[str]:
    text = value if isinstance(value, str) else as_text(value)
    return [f"**{label}:**", "", md_block(clip(text, limit), info), ""]


def summary_rows(report: Report) -> list[tuple[str, Any]]:
    s = report.summary
    rows: list[tuple[str, Any]] = [(k, md_text(v)) for k, v in report.title_fields()]
    rows += [("Total", s.get("total_cases")), ("Passed", s.get("passed")), ("Failed", s.get("failed"))]
    rows += [("Errors", s.get("errors")), ("Skipped", s.get("skipped"))]
    runs = summary_runs(s) if report.multi else None  # with --runs, the rate of runs and its interval
    rate = rate_text(*runs) if runs and runs[1] else pct(s.get("overall_pass_rate"))
    rows += [("Pass Rate", md_text(rate)), ("Duration", fmt_ms(s.get("duration_ms")))]
    if s.get("uncertain_cases"):
        rows.append(("Uncertain cases (a judge's samples disagreed)", s["uncertain_cases"]))
    if report.multi:
        k = s.get("runs_per_case")
        rows += [("Runs per case", k), ("Total runs", s.get("total_runs"))]
        rows += [("Stable cases", s.get("stable_cases")), ("Unstable cases", s.get("unstable_cases"))]
        rows += [("Consistently failing cases", s.get("consistently_failing_cases") or 0)]
        rows += [(f"pass^{k} (all runs passed)", pct(s.get("pass_hat_k")))]
        rows += [(f"pass@{k} (a run passed)", pct(s.get("pass_at_k")))]
    if s.get("min_pass_rate") is not None:
        rows.append(("Gate (min pass rate)", pct(s["min_pass_rate"])))
    usage = s.get("usage")
    if isinstance(usage, dict):
        rows += [("Tokens", usage.get("total_tokens")), ("Cost", cost(usage.get("cost")))]
    if s.get("not_run"):
        rows.append(("Not run", s["not_run"]))
    return rows


def _stability_table(report: Report) -> list[str]:
    head = "| Case | Status | Pass rate | 95% CI | Consistency | Runs (✅/❌/⚠️) | Avg | Std dev | Class |"
    lines = ["## Stability", "", head, "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for c in report.cases:
        d = c.to_dict()
        runs = f"{c.runs} ({c.passed}/{c.failed}/{c.errors})"
        consistency = "-" if d["consistency"] is None else f"{d['consistency']:.2f}"
        lines.append(
            f"| {md_text(c.id)} | {ICONS[c.status]} {LABELS[c.status]} | {pct(d['pass_rate'])} "
            f"| {_ci(d.get('pass_rate_ci'))} | {consistency} | {runs} | {fmt_ms(d['avg_duration_ms'])} "
            f"| {fmt_ms(d['std_deviation_ms'])} | {d['classification']} |"
        )
    return [*lines, ""]


def _agents_section(report: Report) -> list[str]:
    """Each agent's totals, then the agent x case matrix (runs that tested several agents)."""
    agents, grid = report.agents, report.matrix
    if not agents or not grid:
        return []
    lines = ["## Agents", "", "| Agent | Cases | ✅ | ❌ | ⚠️ | Pass rate | 95% CI | Latency (mean) | Tokens | Cost |"]
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, a in agents.items():
        lines.append(
            f"| {md_text(name)} | {a['cases']} | {a['passed']} | {a['failed']} | {a['errors']} | {pct(a['pass_rate'])} "
            f"| {_ci(a.get('pass_rate_ci'))} | {fmt_ms(a['avg_duration_ms'])} | {a['tokens']} | {cost(a['cost'])} |"
        )
    lines += ["", "| Case | " + " | ".join(md_text(n) for n in grid.agents) + " |"]
    lines.append("| --- |" + " :---: |" * len(grid.agents))
    for _, case_id, cells in grid.rows:
        marks = [f"{ICONS[cells[n].status]} {pct(cells[n].pass_rate)}" if n in cells else "-" for n in grid.agents]
        lines.append(f"| {md_text(case_id)} | " + " | ".join(marks) + " |")
    return [*lines, ""]


def _ci(interval: Any) -> str:
    return md_text(interval_text(interval, False)) or "-"


def _assertions(record: dict[str, Any], limit: int) -> list[str]:
    lines: list[str] = []
    for a in bad_assertions(record):
        verdict = "failed" if a.get("status") == "failed" else "could not decide"
        lines += [f"- **{md_text(a.get('type', '?'))}** {verdict}: {md_text(a.get('message') or '', 500)}"]
        lines += [f"  - {md_text(line, 300)}" for line in sample_lines(a)]
        lines.append("")
        for key in ("expected", "actual"):
            if key in a:
                lines += _block(f"{key.capitalize()}", a[key], limit)
    return lines


def _turns(record: dict[str, Any], limit: int) -> list[str]:
    turns = record.get("turns")
    if not turns:
        return []
    lines = [f"**Conversation ({len(turns)} turns):**", ""]
    for t in shown_turns(record, limit):
        if isinstance(t, str):
            lines += [f"_{md_text(t)}_", ""]
            continue
        n = t.get("turn", "?")
        lines += _block(f"Turn {md_text(n)} · user", input_text(t.get("input")), limit)
        lines += _block(f"Turn {md_text(n)} · agent", t.get("output"), limit)
    checkpoints = record.get("checkpoints") or []
    if checkpoints:
        lines += ["| Checkpoint | Reached at turn | Passed |", "| --- | --- | --- |"]
        for cp in checkpoints:
            ok = "✅" if cp.get("passed") else "❌"
            lines.append(f"| {md_text(cp.get('id', '?'))} | {md_text(cp.get('reached_at_turn') or '-')} | {ok} |")
        lines.append("")
    return lines


def _run_body(record: dict[str, Any], limit: int) -> list[str]:
    lines: list[str] = []
    if record.get("error"):
        label = reason_label(record)
        lines += _block(label, str(record["error"]), limit)
    lines += _turns(record, limit)
    if not record.get("turns") and record.get("output") is not None:
        lines += _block("Output", record.get("output"), limit)
    if record.get("tool_calls"):
        lines += _block("Tool calls", record["tool_calls"], limit, "json")
    return lines + _assertions(record, limit)


def case_section(report: Report, case: CaseStats, limit: int) -> list[str]:
    records = report.records(case)
    name = f" · {md_text(case.name, 200)}" if case.name else ""
    title = f"### {ICONS[case.status]} {md_text(report.label(case), 200)}{name} - {LABELS[case.status]}"
    if report.multi:
        ci = interval_text(wilson_pct(case.passed, case.runs))
        title += f" ({pct(case.pass_rate)} of {case.runs} runs" + (f", {md_text(ci)})" if ci else ")")
    else:
        title += f" ({fmt_ms(case.total_ms)})"
    if case.flaky:
        title += " · flaky in the run history"
    if case.uncertain:
        title += " · uncertain: a judge's samples disagreed"
    lines = [title, "", f"{md_text(case.file)}:{case.line}", ""]
    first = records[0] if records else {}
    if first.get("input") is not None:
        lines += _block("Input", input_text(first.get("input")), limit)
    if "expected" in first:
        lines += _block("Expected", first["expected"], limit)
    if not report.multi:
        return lines + (_run_body(first, limit) if first else [])
    d = case.to_dict()
    consistency = "-" if d["consistency"] is None else f"{d['consistency']:.2f}"
    lines += [
        f"Pass rate {pct(d['pass_rate'])} · consistency {consistency} ({d['distinct_outputs']} distinct "
        f"outputs) · {d['classification']} · avg {fmt_ms(d['avg_duration_ms'])} ± {fmt_ms(d['std_deviation_ms'])}",
        "",
        "| Run | Status | Duration | Reason |",
        "| --- | --- | ---: | --- |",
    ]
    for r in records:
        status = str(r.get("status"))
        reason = "" if status == "passed" else md_text(r.get("error") or _first_message(r), 200)
        lines.append(
            f"| {md_text(r.get('run', '?'))} | {ICONS.get(status, '')} {md_text(status)} "
            f"| {fmt_ms(r.get('duration_ms'))} | {reason} |"
        )
    lines.append("")
    shown = shown_runs(records, limit)
    for r in shown:
        lines += [f"#### Run {md_text(r.get('run', '?'))}: {md_text(r.get('status'))}", ""]
        lines += _run_body(r, limit)
    if len(records) > len(shown):
        lines += [f"_{len(records) - len(shown)} more runs in the JSON report._", ""]
    return lines


def _first_message(record: dict[str, Any]) -> str:
    bad = bad_assertions(record)
    return f"{bad[0].get('type')}: {bad[0].get('message', '')}" if bad else ""


def write(report: Report, out: IO[str], limit: int = MAX_CHARS) -> None:
    """Write the report to ``out``, one case section at a time."""
    lines = ["# specrun report", ""]
    if report.interrupted:
        lines += [
            f"> ⚠️ **Interrupted**: the run was cut short; this report covers the {report.summary.get('total_runs')} "
            "results recorded before it stopped.",
            "",
        ]
    if report.incomplete:
        lines += [f"> ⚠️ **Incomplete**: {md_text(report.incomplete_note())}", ""]
    lines += ["## Summary", "", *_table(summary_rows(report), ("Metric", "Value"))]
    env = report.environment
    if env:
        names = {"user_id": "User", "team_id": "Team", "locale": "Locale"}
        rows = [(md_text(names.get(k, k)), md_text(v)) for k, v in env.items()]
        lines += ["## Environment", "", *_table(rows, ("Setting", "Value"))]
    lines += _agents_section(report)
    pairs = pair_lines(report.summary.get("pairwise"))
    if pairs:
        lines += ["## Pairwise", "", "A win counts when the judge named it in both orders; otherwise a tie.", ""]
        lines += [f"- {md_text(line)}" for line in pairs] + [""]
    if report.multi:
        lines += _stability_table(report)
    lines += ["## Results", ""]
    out.write("\n".join(lines) + "\n")
    if not report.cases:
        out.write("_No results were recorded._\n")
    for case in report.cases:
        out.write("\n".join(case_section(report, case, limit)) + "\n")


class MarkdownReporter(WholeFileReporter):
    """A Markdown report; options: ``max_chars`` per text block (20,000; 0 for no limit)."""

    name = "markdown"
    description = "Markdown report: summary, environment, stability, per-case sections"
    extensions = (".md", ".markdown")

    def render(self, report: Report, out: IO[str]) -> None:
        write(report, out, int(self.options.get("max_chars", MAX_CHARS)))
