"""The agent x case matrix of a run that tested several agents (``-n a -n b``, ``targets:``).

Built from the per-(case, agent) statistics of :mod:`specrun._report.stability`; the console, the
reports and the viewer show it. A run where each case ran against one agent has no matrix
(even when cases name different agents with their own ``target``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


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
        rows.setdefault(c.key.any_agent, {})[c.agent] = c
    return Matrix(sorted(agents), [(f, i, cells) for (f, i), cells in rows.items()])
