"""``--lf`` and ``--ff``: the cases that failed last time, alone or first (pytest's semantics).

A case "failed last time" when its latest recorded run (against the same agent, in the run
history) failed or errored in it; a case cut short by Ctrl-C did neither. When none of the
selected cases did, ``--lf`` runs them all, and says so.
"""

from __future__ import annotations

import itertools
from array import array
from typing import TYPE_CHECKING

from .._core.errors import UsageError
from .._core.identity import CaseKey, suite_key
from .._history.store import History, HistoryError, settings
from .._project.project import Project

if TYPE_CHECKING:
    from .pairs import Selection


def rerun_failed(pairs: Selection, project: Project, *, last_failed: bool) -> tuple[Selection, str]:
    """The plan's (case, agent) pairs for ``--lf`` (``last_failed``) or ``--ff`` (picked with
    ``pairs.select``: as compact as the plan's), and a line saying what was chosen."""
    flag = "--lf" if last_failed else "--ff"
    where = settings(project.root, project.config).path
    if where is None:
        raise UsageError(f"{flag} reads the run history, which is off (history: false in specrun.yaml)")
    suites = [suite_key(suite.path, project.root) for suite in pairs.suites]
    failed: set[CaseKey] = set()
    if where.is_file():
        history = History.open(project.root, project.config)
        try:
            failed = history.last_failed(sorted({suites[ref.suite] for ref, _ in pairs}))
        except HistoryError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        finally:
            history.close()
    keys = (CaseKey(suites[ref.suite], ref.id, agent.id) for ref, agent in pairs)
    chosen = array("Q", (i for i, key in enumerate(keys) if key in failed))
    if not chosen:
        return pairs, f"{flag}: no case here failed in its last recorded run; running all {len(pairs)}"
    count = f"{len(chosen)} case{'s' * (len(chosen) != 1)}"
    if last_failed:
        deselected = len(pairs) - len(chosen)
        return pairs.select(chosen), f"--lf: rerunning the {count} that failed last time ({deselected} deselected)"
    picked = set(chosen)
    rest = (i for i in range(len(pairs)) if i not in picked)
    note = f"--ff: running the {count} that failed last time first, then the other {len(pairs) - len(chosen)}"
    return pairs.select(itertools.chain(chosen, rest)), note
