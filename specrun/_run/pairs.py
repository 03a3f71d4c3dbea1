"""The plan's compact index of the selected cases: which case of which suite runs against which
agent, stored as columns (``Selection``) so that a million cases cost tens of MB, never the
cases themselves (they are read again from their files when the run reaches them)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any, NamedTuple

from .._core.data import Agent, Suite

ModelUse = tuple[str | None, Mapping[str, Any] | None]


class CaseRef(NamedTuple):
    """A selected case as the plan keeps it: enough to pick or order cases by, and to find the
    case again (case ``number`` of the plan's suite ``suite``)."""

    id: str
    name: str | None
    file: str  # as results have it (``file`` in the stream)
    line: int
    suite: int
    number: int
    model: bool = False  # the case calls a model (a judge, an LLM simulator, a model-backed target)
    uses: tuple[ModelUse, ...] = ()  # the models it names (``case_model_uses``)


class Selection:
    """The plan's ``(CaseRef, Agent)`` pairs, in run order, stored as columns: about 25 bytes
    and the id's per case (a million cases: tens of MB). ``select(indices)`` makes a new one: a
    step that drops or reorders cases (``--lf``, ``--ff``, ``--shard``) picks indices and stays
    as compact."""

    def __init__(self, suites: list[Suite]):
        self.suites = suites
        self.agents: list[Agent] = []
        self._agent_index: dict[int, int] = {}
        self._files: dict[int, str] = {}  # suite -> its cases' file
        self._ids = bytearray()  # every id in UTF-8, one after the other: a str each costs 50 bytes more
        self._ends = array("Q")  # where each id ends in _ids
        self._names: dict[int, str] = {}  # most cases have none
        self._lines = array("I")
        self._suite = array("I")
        self._number = array("I")
        self._agent = array("I")
        self._model = bytearray()  # 1 when the case calls a model (see Plan.needs_model)
        self._uses = array("I")  # each case's models (``case_model_uses``): an index in _use_sets
        self._use_sets: list[tuple[ModelUse, ...]] = [()]  # each distinct set once (a suite has few)
        self._use_index: dict[str, int] = {"()": 0}
        self._runs: tuple[int, list[tuple[int, int]]] | None = None  # runs_of, for a length

    def add(self, ref: CaseRef, agent: Agent) -> None:
        self._files.setdefault(ref.suite, ref.file)
        index = self._agent_index.get(id(agent))
        if index is None:
            index = self._agent_index[id(agent)] = len(self.agents)
            self.agents.append(agent)
        if ref.name is not None:
            self._names[len(self)] = ref.name
        self._ids += ref.id.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._ids))
        self._lines.append(ref.line)
        self._suite.append(ref.suite)
        self._number.append(ref.number)
        self._agent.append(index)
        self._model.append(ref.model)
        key = repr(ref.uses)
        index = self._use_index.get(key)
        if index is None:
            index = self._use_index[key] = len(self._use_sets)
            self._use_sets.append(ref.uses)
        self._uses.append(index)

    def __len__(self) -> int:
        return len(self._ends)

    def __bool__(self) -> bool:
        return bool(self._ends)

    def __getitem__(self, i: int) -> tuple[CaseRef, Agent]:
        i = i + len(self) if i < 0 else i
        n, model = self._suite[i], bool(self._model[i])
        start = self._ends[i - 1] if i > 0 else 0
        case_id = self._ids[start : self._ends[i]].decode("utf-8", "surrogatepass")
        uses = self._use_sets[self._uses[i]]
        ref = CaseRef(case_id, self._names.get(i), self._files[n], self._lines[i], n, self._number[i], model, uses)
        return ref, self.agents[self._agent[i]]

    def __iter__(self) -> Iterator[tuple[CaseRef, Agent]]:
        return (self[i] for i in range(len(self)))

    def select(self, indices: Iterable[int]) -> Selection:
        """The entries at ``indices``, in that order."""
        return Selection.of(self.suites, (self[i] for i in indices))

    @classmethod
    def of(cls, suites: list[Suite], pairs: Iterable[tuple[CaseRef, Agent]]) -> Selection:
        """A selection of ``(CaseRef, Agent)`` pairs (a list a step built, say)."""
        made = cls(suites)
        for ref, agent in pairs:
            made.add(ref, agent)
        return made

    def used_agents(self) -> list[Agent]:
        """The agents of the selected cases."""
        return [self.agents[i] for i in sorted(set(self._agent))]

    def needs_model(self) -> bool:
        return any(self._model)

    def model_uses(self) -> list[ModelUse]:
        """The models the selected cases name (``case_model_uses``), each once, in run order."""
        uses: dict[str, ModelUse] = {}
        for index in dict.fromkeys(self._uses):
            for use in self._use_sets[index]:
                uses.setdefault(repr(use), use)
        return list(uses.values())

    def runs_of(self) -> list[tuple[int, int]]:
        """``(start, end)`` of each stretch of entries of one suite in file order (a case repeated
        for its agents), one read each; found once (the run, its hooks and its history ask)."""
        if self._runs is None or self._runs[0] != len(self):
            suite, number = self._suite, self._number
            cuts = [
                i
                for i, (s0, s1, n0, n1) in enumerate(zip(suite, suite[1:], number, number[1:], strict=False), 1)
                if s1 != s0 or n1 < n0
            ]
            edges = [0, *cuts, len(self)] if len(self) else []
            self._runs = len(self), list(pairwise(edges))
        return self._runs[1]

    def suite_numbers(self) -> list[int]:
        """The numbers (in the plan's ``suites``) of the suites with selected cases, each once, in
        run order."""
        return list(dict.fromkeys(self._suite[start] for start, _ in self.runs_of()))
