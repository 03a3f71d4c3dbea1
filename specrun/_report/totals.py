"""What a run's summary adds up over its cases: the run's totals and each agent's.

Added up one case at a time, so that a run that drops each case once it is counted
(``Aggregator(keep=False)``) gives the same summary as one that keeps them all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .rates import wilson_pct

_COUNTERS = {"passed": "passed", "failed": "failed", "error": "errors", "skipped": "skipped"}


class Totals:
    """What the run summary adds up over cases (``CaseStats``), one case at a time."""

    def __init__(self) -> None:
        self.verdicts: Counter[str] = Counter()
        self.cases = self.passed = self.failed = self.errors = self.skipped = self.timeouts = 0
        self.agents = AgentTotals()
        self.stable = self.unstable = self.failing = self.all_passed = self.any_passed = 0
        self.uncertain = 0  # cases in which a judge's samples disagreed
        self.total_ms = 0.0
        self.usage_seen = False
        self.usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "cost": None}

    def add(self, c: Any) -> None:
        status, runs, passed = c.status, c.runs, c.passed  # each worked out once: this runs per case
        self.cases += 1
        self.verdicts[status] += 1
        self.passed += passed
        self.failed += c.failed
        self.errors += c.errors
        self.skipped += c.skipped
        self.timeouts += c.timeouts
        self.total_ms += c.total_ms
        self.agents.add(c, status, runs)
        self.uncertain += c.uncertain > 0
        if runs:
            # 0 of N passed is as consistent as N of N: it is failing, not unstable
            self.stable += passed == runs  # CaseStats.stable
            self.unstable += 0 < passed < runs
            self.failing += passed == 0
            self.all_passed += passed == runs
            self.any_passed += passed > 0
        if c.has_usage:
            self.usage_seen = True
            for k, v in c.usage().items():
                self.usage[k] = v if self.usage[k] is None else self.usage[k] + (v or 0)


class AgentTotals:
    """Per agent: case verdicts, pass rate of its runs, mean latency, tokens and cost, added up one
    ``CaseStats`` at a time (those of no named agent are left out)."""

    def __init__(self) -> None:
        self.out: dict[str, dict[str, Any]] = {}
        self.sums: dict[str, list[float]] = {}

    def add(self, c: Any, status: str, runs: int) -> None:
        """Count ``c`` (a ``CaseStats``, whose ``status`` and ``runs`` are given) for its agent."""
        if c.agent is None:
            return
        row = self.out.get(c.agent)
        if row is None:
            row = self.out[c.agent] = {"cases": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
            self.sums[c.agent] = [0, 0, 0.0, 0]
        row["cases"] += 1
        row[_COUNTERS.get(status, "skipped")] += 1
        acc = self.sums[c.agent]
        acc[0] += runs
        acc[1] += c.passed
        acc[2] += c.total_ms
        acc[3] += c.total_tokens
        if c.cost is not None:
            row["cost"] = (row.get("cost") or 0.0) + c.cost

    def rows(self) -> dict[str, dict[str, Any]]:
        out = {agent: dict(row) for agent, row in self.out.items()}
        for agent, row in out.items():
            runs, passed, ms, tokens = self.sums[agent]
            row["pass_rate"] = round(100.0 * passed / runs, 1) if runs else None
            row["pass_rate_ci"] = wilson_pct(int(passed), int(runs))
            row["avg_duration_ms"] = round(ms / runs, 1) if runs else None
            row["tokens"] = int(tokens)
            row.setdefault("cost", None)
        return dict(sorted(out.items()))
