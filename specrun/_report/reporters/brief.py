"""The ``.txt`` reporter (``brief``): V1's ``report.summary``, a brief text summary of a run.

Registered through register_reporters (see this package). A few lines: who was tested, the
counts and pass rate, the duration, then one line per case that did not pass (at most
``MAX_LISTED``, each reason cut to one line), and the verdict. Short enough for a chat message
or a CI step summary; the JSON report has the details.
"""

from __future__ import annotations

from typing import IO

from ..display import shorten, visible
from ._common import ICONS, LABELS, Report, WholeFileReporter, fmt_ms, pct

MAX_LISTED = 20  # cases listed by name; the rest are counted
REASON_CHARS = 160


def lines(report: Report) -> list[str]:
    """The summary's lines."""
    s = report.summary
    out = ["Agent Test Summary"]
    out += [f"{key}: {visible(str(value))}" for key, value in report.title_fields()]
    counts = [("Total", s.get("total_cases", s.get("total"))), ("Passed", s.get("passed")), ("Failed", s.get("failed"))]
    counts += [("Errors", s.get("errors")), ("Skipped", s.get("skipped"))]
    out.append(", ".join(f"{label}: {value or 0}" for label, value in counts))
    out.append(f"Pass Rate: {pct(s.get('overall_pass_rate'))}, Duration: {fmt_ms(s.get('duration_ms'))}")
    if report.multi:
        out.append(
            f"Runs per case: {s.get('runs_per_case')}, stable cases: {s.get('stable_cases')},"
            f" unstable cases: {s.get('unstable_cases')},"
            f" consistently failing cases: {s.get('consistently_failing_cases') or 0}"
        )
    bad = [c for c in report.cases if c.status in ("failed", "error")]
    for case in bad[:MAX_LISTED]:
        reason = shorten(" ".join(visible(case.reason or "").split()), REASON_CHARS)
        label = f"{ICONS[case.status]} {visible(case.id)} - {LABELS[case.status]}"
        out.append(f"{label}: {reason}" if reason else label)
    if len(bad) > MAX_LISTED:
        out.append(f"... and {len(bad) - MAX_LISTED} more (see the JSON report)")
    if report.interrupted:
        out.append("INTERRUPTED: the run was cut short; these are the results recorded before the stop")
    if report.incomplete:
        out.append(f"INCOMPLETE: {report.incomplete_note()}")
    verdict = "FAILED" if bad or report.incomplete else ("NO TESTS RAN" if not s.get("passed") else "PASSED")
    out.append(f"Result: {verdict}")
    return out


class SummaryReporter(WholeFileReporter):
    """A brief text summary (V1's ``report.summary``)."""

    name = "brief"
    aliases = ("summary",)  # V1's report.summary
    description = "Brief text summary: counts, pass rate, duration, the cases that did not pass"
    extensions = (".txt",)

    def render(self, report: Report, out: IO[str]) -> None:
        out.write("\n".join(lines(report)) + "\n")
