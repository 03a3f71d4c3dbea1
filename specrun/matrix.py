"""The agent x case matrix of a run that tested several agents (``-n a -n b``, ``targets:``).

Built from the per-(case, agent) statistics of :mod:`specrun.stability`; the console, the
reports and the viewer show it. A run where each case ran against one agent has no matrix
(even when cases name different agents with their own ``target``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_COUNTERS = {"passed": "passed", "failed": "failed", "error": "errors", "skipped": "skipped"}


def agent_totals(cases: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Per agent: case verdicts, pass rate of its runs, mean latency, tokens and cost (``cases``:
    ``CaseStats``; those of no named agent are left out)."""
    out: dict[str, dict[str, Any]] = {}
    sums: dict[str, list[float]] = {}
    for c in cases:
        if c.agent is None:
            continue
        row = out.setdefault(c.agent, {"cases": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0})
        row["cases"] += 1
        row[_COUNTERS.get(c.status, "skipped")] += 1
        acc = sums.setdefault(c.agent, [0, 0, 0.0, 0])
        acc[0] += c.runs
        acc[1] += c.passed
        acc[2] += c.total_ms
        acc[3] += c.total_tokens
        if c.cost is not None:
            row["cost"] = (row.get("cost") or 0.0) + c.cost
    for agent, row in out.items():
        runs, passed, ms, tokens = sums[agent]
        row["pass_rate"] = round(100.0 * passed / runs, 1) if runs else None
        row["avg_duration_ms"] = round(ms / runs, 1) if runs else None
        row["tokens"] = int(tokens)
        row.setdefault("cost", None)
    return dict(sorted(out.items()))


@dataclass
class Matrix:
    """Cases as rows, agents as columns; each cell the ``CaseStats`` of that pair (or None)."""

    agents: list[str]
    rows: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (file, case id, agent -> stats)

    def __bool__(self) -> bool:
        """A matrix: some case ran against more than one agent (not just cases with agents of their own)."""
        return any(len(cells) > 1 for _, _, cells in self.rows)


def matrix(cases: Iterable[Any]) -> Matrix:
    """The matrix of ``cases`` (``CaseStats`` in suite order); falsy when no case ran against several agents."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    agents: dict[str, None] = {}
    for c in cases:
        if c.agent is None:
            continue
        agents[c.agent] = None
        rows.setdefault((c.file, c.id), {})[c.agent] = c
    return Matrix(sorted(agents), [(f, i, cells) for (f, i), cells in rows.items()])
