"""A case's identity, the one every room keys by: its suite, its id and its agent.

``CaseKey(suite, id, agent)`` is a case against one agent (``agent`` is ``""`` when none is
named); ``ResultKey`` adds ``run``, the repetition (``--runs``), where one result of the case
matters, and ``.case`` drops it again. Two types, not one with an optional run: a key that may
or may not hold a run could not be compared with either kind, and most readers want the case.

The suite part is a path. Where the project is known (the history, ``--lf``, ``--shard``,
calibration) it is :func:`suite_key`, the suite's file from the project root, so it does not
depend on the folder a run started in. Read back from a result record (``CaseKey.of``: a
stream, a report, ``diff``, ``merge``, the statistics) it is the record's ``file``, the path
the run showed; the record knows no root.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .data import Case


class CaseKey(NamedTuple):
    """A case against one agent: its suite (see the module docstring), its id and the agent's id."""

    suite: str
    id: str
    agent: str

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> CaseKey:
        """The key of a ``result`` record (a stream line or a report's result): ``file``, ``id``, ``agent``."""
        # made as NamedTuple._make makes one, without the Python __new__ (once per result)
        key = (str(record.get("file") or ""), str(record.get("id")), str(record.get("agent") or ""))
        return tuple.__new__(cls, key)

    @property
    def any_agent(self) -> tuple[str, str]:
        """``(suite, id)``: the case whichever agent ran it."""
        return self.suite, self.id

    def paired(self, matrix: bool, *, suite: bool = True) -> tuple[str, ...]:
        """What pairs this case with itself in another run (``specrun diff``, the viewer's
        comparison). In a matrix the agent is part of a case's identity; otherwise it is not, so
        that one agent's run compares with another's (a new version under a new id). Without
        ``suite``: by id alone, for cases whose file moved (another checkout)."""
        head = self.any_agent if suite else (self.id,)
        return (*head, self.agent) if matrix else head


class ResultKey(NamedTuple):
    """One result of a case: its ``CaseKey`` and ``run``, its 1-based repetition."""

    suite: str
    id: str
    agent: str
    run: int

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> ResultKey:
        """The key of a ``result`` record: ``CaseKey.of`` and its ``run`` (1 when it has none)."""
        return cls(*CaseKey.of(record), int(record.get("run") or 1))

    @property
    def case(self) -> CaseKey:
        return CaseKey(self.suite, self.id, self.agent)


def suite_key(path: Path | str, root: Path, outside: str | None = None) -> str:
    """The suite part of a key: the file at ``path`` from the project ``root`` (``/``-separated).
    A file outside the root is named by ``outside`` when given, else by ``path`` as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return str(path) if outside is None else outside


def case_suite(case: Case, root: Path, known: dict[int, str]) -> str:
    """The ``suite_key`` of ``case``'s suite (of its file, for a case of no suite); ``known``
    keeps them by suite, as a run has few suites and many cases."""
    key = known.get(id(case.suite))
    if key is None:
        path = case.suite.path if case.suite is not None else Path(case.location.file)
        key = known[id(case.suite)] = suite_key(path, root)
    return key
