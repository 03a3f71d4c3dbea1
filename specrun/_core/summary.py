"""A run's totals as ``run_finished`` hands them to plugins: the stream's ``summary`` line, typed.

``Summary`` is the summary record itself (a ``dict``: ``summary["passed"]`` and
``summary.get("usage")`` read it as they always did, and it is written as it is), with its
fields also readable as typed attributes (``summary.passed``, ``summary.interrupted``). The
runner makes it once; the stream, the reports, the history and the command line read that one
object. Field definitions are in ``docs/reports.md``.
"""

from __future__ import annotations

from typing import Any


class Summary(dict[str, Any]):
    """The totals of a run (see the module docstring); a field the run did not set reads as its
    empty value (``incomplete`` None, counts 0)."""

    @property
    def total(self) -> int:
        """Cases (each with its agent) that the run counted."""
        return int(self.get("total") or 0)

    @property
    def passed(self) -> int:
        return int(self.get("passed") or 0)

    @property
    def failed(self) -> int:
        return int(self.get("failed") or 0)

    @property
    def errors(self) -> int:
        return int(self.get("errors") or 0)

    @property
    def skipped(self) -> int:
        return int(self.get("skipped") or 0)

    @property
    def not_run(self) -> int:
        """Scheduled runs that did not run (an interrupt, ``--fail-fast``)."""
        return int(self.get("not_run") or 0)

    @property
    def total_runs(self) -> int:
        return int(self.get("total_runs") or 0)

    @property
    def duration_ms(self) -> float:
        """The run's wall time."""
        return float(self.get("duration_ms") or 0.0)

    @property
    def interrupted(self) -> bool:
        return bool(self.get("interrupted"))

    @property
    def incomplete(self) -> str | None:
        """Why the result stream lacks results (it could not be written), when it does."""
        return self.get("incomplete") or None

    @property
    def min_pass_rate(self) -> float | None:
        """The run's pass-rate gate (``--min-pass-rate``), when it has one."""
        return self.get("min_pass_rate")

    @property
    def usage(self) -> dict[str, Any] | None:
        """Tokens and cost the run spent (agents and judges), when any were reported."""
        return self.get("usage")
