"""``--lf`` and ``--ff``: the cases that failed last time, alone or first (pytest's semantics).

A case "failed last time" when its latest recorded run (against the same agent, in the run
history) failed or errored in it; a case cut short by Ctrl-C did neither. When none of the
selected cases did, ``--lf`` runs them all, and says so.
"""

from __future__ import annotations

from typing import Any

from .errors import UsageError
from .history import CaseKey, History, HistoryError, case_suite, settings
from .project import Project


def rerun_failed(pairs: list[tuple[Any, Any]], project: Project, *, last_failed: bool) -> tuple[list[Any], str]:
    """The plan's (case, agent) pairs for ``--lf`` (``last_failed``) or ``--ff``, and a line
    saying what was chosen."""
    flag = "--lf" if last_failed else "--ff"
    where = settings(project.root, project.config).path
    if where is None:
        raise UsageError(f"{flag} reads the run history, which is off (history: false in specrun.yaml)")
    known: dict[int, str] = {}
    keys = [CaseKey(case_suite(case, project.root, known), case.id, agent.id) for case, agent in pairs]
    failed: set[CaseKey] = set()
    if where.is_file():
        history = History.open(project.root, project.config)
        try:
            failed = history.last_failed(sorted({key.suite for key in keys}))
        except HistoryError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        finally:
            history.close()
    chosen = [pair for pair, key in zip(pairs, keys, strict=True) if key in failed]
    if not chosen:
        return pairs, f"{flag}: no case here failed in its last recorded run; running all {len(pairs)}"
    count = f"{len(chosen)} case{'s' * (len(chosen) != 1)}"
    if last_failed:
        return chosen, f"--lf: rerunning the {count} that failed last time ({len(pairs) - len(chosen)} deselected)"
    rest = [pair for pair, key in zip(pairs, keys, strict=True) if key not in failed]
    return chosen + rest, f"--ff: running the {count} that failed last time first, then the other {len(rest)}"
