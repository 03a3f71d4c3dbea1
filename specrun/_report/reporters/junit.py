"""The ``.xml`` reporter: JUnit XML for CI (GitHub, GitLab, Jenkins, Azure read it).

Registered through register_reporters (see this package). A ``<testsuite>`` per suite file and
a ``<testcase classname=FILE name=ID>`` per case with the case's verdict: with ``--runs`` above
1 that is the aggregated verdict (every run passed, or the gate met) and each run is listed in
``<system-out>``, so CI counts cases, not runs. ``failed`` becomes ``<failure>``, ``error``
becomes ``<error>``, ``skipped`` ``<skipped>``; the pass rate is a ``<property>``. The document is
written by ``_junit_xml.py``, imported only when a JUnit report is asked for.
"""

from __future__ import annotations

from typing import IO

from ._common import Report, WholeFileReporter

MAX_CHARS = 20_000


class JUnitReporter(WholeFileReporter):
    """JUnit XML; options: ``max_chars`` per text (20,000; 0 for no limit)."""

    name = "junit"
    description = "JUnit XML: a testsuite per suite file, a testcase per case (failures and errors apart)"
    extensions = (".xml",)

    def render(self, report: Report, out: IO[str]) -> None:
        from ._junit_xml import write

        write(report, out, int(self.options.get("max_chars", MAX_CHARS)))
