"""From inputs to jobs: load every source, pick each case's agent, filter, repeat for ``--runs``.

All mistakes (in suites, agent files, agent configs) are found here, before anything runs.
The plan keeps a compact entry per selected case (``Selection``), never the case itself: a
suite file's cases are read from it again when the run reaches them (``Plan.cases``), so
memory does not grow with the suite.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.data import Agent, Assertion, Case, Suite
from .._core.errors import Problem, SpecrunError, SuiteError, TargetError, UsageError
from .._core.kinds import Job, Source, SourceContext, Target
from .._load.documents import load_mapping
from .._load.loader import FileCases
from .._load.problems import display_path
from .._project.plugin_manager import Plugins
from .._project.project import Project
from .case_hooks import check_case_hooks
from .pairs import CaseRef, ModelUse, Selection


def _every_assertion(case: Case) -> list[Assertion]:
    """The case's assertions and its checkpoints' (most cases have none: no generator for them)."""
    return [*case.assertions, *(c.assertion for c in case.checkpoints)] if case.checkpoints else case.assertions


def case_needs_model(case: Case, agent: Agent, registry: Any, config: dict[str, Any]) -> bool:
    """True when running ``case`` against ``agent`` calls a model: a judge, an LLM simulator or
    a model-backed target (``config``: the project's ``specrun.yaml``)."""
    if any(registry.get("assertion", a.type).uses_model(a, config) for a in _every_assertion(case)):
        return True
    if case.simulator is not None and registry.simulator_for(case.simulator).needs_model:
        return True
    return bool(getattr(registry.get("target", agent.target.get("type", "")), "needs_model", False))


def case_model_uses(case: Case, agent: Agent, registry: Any) -> Iterator[ModelUse]:
    """The ``(model, params)`` a case names beyond the run's own models (for
    ``ModelClient.preload``): a judge's or simulator's ``model`` (sent with the run's params),
    a model-backed target's ``model`` and ``params`` (an empty model: one chosen at run time)."""
    for assertion in _every_assertion(case):
        if isinstance(model := assertion.params.get("model"), str):
            yield model, None
    if case.simulator is not None and isinstance(model := case.simulator.get("model"), str):
        yield model, None
    if getattr(registry.get("target", agent.target.get("type", "")), "needs_model", False):
        params = agent.target.get("params")
        yield str(agent.target.get("model") or ""), params if isinstance(params, dict) else {}


@dataclass
class Plan:
    """What a run will do: the suites, and the cases selected from them with their agents."""

    suites: list[Suite]
    _pairs: Selection | None = field(default=None, repr=False)
    # For the run's header, found as build_plan selects the cases (not read again for a step
    # that then drops some): every case is dynamic; the simulator agents dynamic cases name.
    all_dynamic: bool = False
    simulators: set[str] = field(default_factory=set)

    @property
    def pairs(self) -> Selection:
        """The selected cases with their agents, in run order (see ``Selection``). A list of
        ``(CaseRef, Agent)`` pairs may be assigned too."""
        if self._pairs is None:
            self._pairs = Selection(self.suites)
        return self._pairs

    @pairs.setter
    def pairs(self, value: Iterable[tuple[CaseRef, Agent]]) -> None:
        self._pairs = value if isinstance(value, Selection) else Selection.of(self.suites, value)

    def cases(self) -> Iterator[tuple[Case, Agent]]:
        """Each selected case with its agent, in run order; a suite file's are read from it as
        they are reached (once per stretch of the file taken in order)."""
        sel = self.pairs
        for start, end in sel.runs_of():
            suite = self.suites[sel._suite[start]]
            numbers = (sel._number[i] for i in range(start, end))
            read = getattr(suite.cases, "read", None)
            found = read(numbers) if read is not None else (suite.cases[n] for n in numbers)
            for i, case in zip(range(start, end), found, strict=False):
                yield case, sel.agents[sel._agent[i]]

    def jobs(self, runs: int) -> Jobs:
        return Jobs(self, runs)

    @property
    def agent_ids(self) -> list[str]:
        return sorted({agent.id for agent in self.pairs.used_agents()})

    def needs_model(self, registry: Any = None, config: dict[str, Any] | None = None) -> bool:
        """True when a judge, an LLM simulator or a model-backed target will be called (known
        per case when it was planned)."""
        return self.pairs.needs_model()

    def model_uses(self, registry: Any = None) -> list[ModelUse]:
        """The models (with their params) that the selected cases and their agents name, each
        once, for ``ModelClient.preload``: noted as the plan was made (no file is read again)."""
        return self.pairs.model_uses()


@dataclass
class Jobs:
    """A plan's jobs, made as workers take them: each case read once and run ``runs`` times
    in a row, so that a case's runs are done together and nothing waits on the whole suite."""

    plan: Plan
    runs: int = 1
    mark: Callable[[Job], None] | None = None  # called on each job as it is made (flaky marks)
    keep: Callable[[Job], bool] | None = None  # False: the job is not run (a rejudge's, not recorded): not_run

    def __len__(self) -> int:
        return len(self.plan.pairs) * self.runs

    held: list[Job] | None = None  # every job, made once (``hold``)

    def hold(self) -> None:
        """Make every job now and keep them: an executor that ships the cases elsewhere (``ray``)
        needs them all, and the same ones when they run. The only run that holds every case."""
        if self.held is None:
            self.held = list(self._made())

    def __iter__(self) -> Iterator[Job]:
        return iter(self.held) if self.held is not None else self._made()

    def _made(self) -> Iterator[Job]:
        for case, agent in self.plan.cases():
            for run in range(1, self.runs + 1):
                job = Job(case, agent, run)
                if self.keep is not None and not self.keep(job):
                    continue
                if self.mark is not None:
                    self.mark(job)
                yield job

    def cases(self) -> Iterator[Case]:
        if self.held is not None:
            return iter({id(job.case): job.case for job in self.held}.values())
        return (case for case, _ in self.plan.cases())

    @property
    def agents(self) -> list[Agent]:
        return self.plan.pairs.used_agents()

    @property
    def folders(self) -> list[Path]:
        """The folders of the suites that have selected cases (where global hooks are looked for)."""
        return [self.plan.suites[n].base_dir for n in sorted(self.plan.pairs.suite_numbers())]


def pick_source(spec: str, plugins: Plugins) -> tuple[Source, str]:
    """The source for ``-i spec``: by ``name:`` prefix, else the first that claims it."""
    registry = plugins.registry
    sources = registry.classes("source")
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in sources and not os.path.exists(spec):  # os.path: a long message is no error
        return sources[prefix](), rest
    for cls in sorted(sources.values(), key=lambda c: c.priority):
        if cls.claims(spec):
            return cls(), spec
    raise UsageError(f"no input source takes {spec!r} (sources: {', '.join(sources)})")


async def load_inputs(specs: list[str], context: SourceContext, plugins: Plugins) -> list[Suite]:
    """Suites from every input; the problems of all of them are raised together."""
    suites: list[Suite] = []
    problems: list[Problem] = []
    for spec in specs:
        source, rest = pick_source(spec, plugins)
        try:
            suites.extend(await source.load(rest, context))
        except SuiteError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SuiteError(problems)
    return suites


def build_plan(
    suites: list[Suite],
    project: Project,
    plugins: Plugins,
    name: str | list[str] | None = None,
    select: Callable[[Case], bool] | None = None,
    connector: str | None = None,
    simulator: str | None = None,
) -> Plan:
    """Pick each case's agents (``-n`` > case ``target`` > suite ``target``/``targets`` > nearest
    agent.yaml; several ``-n`` or ``targets`` run every case against each), keep the cases
    ``select`` takes (``--run``, ``-m``, ``-k``: :mod:`specrun._run.selection`), and build every target
    once so config mistakes show before the run."""
    return Planner(project, plugins, name, select, connector, simulator).plan(suites)


class _SuitePlan:
    """What was planned of one suite: its entries ``start:end`` of a selection, or why planning
    it stopped (``error``; ``missing``: a case has no agent), as ``build_plan`` would stop."""

    def __init__(self, suite: Suite, number: int, start: int):
        self.suite, self.number, self.start, self.end = suite, number, start, start
        self.targets = (suite.target, suite.targets)  # planned with these: a source may change them
        self.agents: list[Agent | None] = []
        self.error: SpecrunError | None = None
        self.missing = False
        self.selected, self.dynamic = 0, True  # cases selected; whether every one is dynamic
        self.simulators: set[str] = set()

    @property
    def stopped(self) -> bool:
        return self.error is not None or self.missing


class Planner:
    """``build_plan``'s work, for whole suites (``plan``) or, fed by the loader through ``visit``,
    one case at a time as it is validated: a suite file is then read once to validate and to
    plan it, not twice. A case visited is planned as ``plan`` would plan it; the first mistake
    in a suite stops its planning and is raised by ``plan``, in suite order, after every
    suite has loaded (so that mistakes in the suites themselves are still reported first)."""

    def __init__(
        self,
        project: Project,
        plugins: Plugins,
        name: str | list[str] | None = None,
        select: Callable[[Case], bool] | None = None,
        connector: str | None = None,
        simulator: str | None = None,
    ):
        self.project, self.registry, self.config = project, plugins.registry, project.config
        self.names = [name] if isinstance(name, str) else list(name or [])
        self.select, self.connector, self.simulator = select, connector, simulator
        self.tags: set[str] = set()  # of every case seen, selected or not (``-m``'s unknown tags)
        self.problems: list[Problem] = []  # what a target cannot run (an unknown tool): all of them, then stop
        self._visited = Selection([])  # the cases visited, each suite's numbered in the order visited
        self._parts: dict[int, _SuitePlan] = {}  # id(suite) -> what was planned of it as it was read

    def visit(self, suite: Suite, index: int, case: Case) -> None:
        """Plan case ``index`` of ``suite``, validated (the loader calls this as it reads the file)."""
        part = self._parts.get(id(suite))
        if part is None:
            part = self._parts[id(suite)] = self._start(suite, len(self._parts), self._visited)
        if not part.stopped:
            try:
                self._case(part, self._visited, index, case)
            except SpecrunError as exc:
                part.error = exc
            part.end = len(self._visited)
        self.tags.update(case.tags)

    def plan(self, suites: list[Suite]) -> Plan:
        """The plan of ``suites`` (those loaded, in order): what ``visit`` planned of a suite as
        it was read, else planned now; the first mistake, in suite order, is raised."""
        plan = Plan(suites)
        parts = [self._usable(suite) for suite in suites]
        visited_in_order = len(self._parts) == len(suites) and all(
            p is not None and p.number == n for n, p in enumerate(parts)
        )
        if visited_in_order:  # the usual run: every suite planned as it was read, nothing to copy
            self._visited.suites = suites
            plan.pairs = self._visited
        missing: list[str] = []
        selected: list[bool] = []  # of each suite with selected cases: whether every one is dynamic
        for number, suite in enumerate(suites):
            part = parts[number]
            if part is None:  # a suite a source made (or changed after loading): planned now
                part = self._start(suite, number, plan.pairs)
                for i, case in enumerate(suite.cases):
                    self.tags.update(case.tags)
                    if not part.stopped:
                        self._case(part, plan.pairs, i, case)
            elif not visited_in_order:
                for i in range(part.start, part.end):
                    ref, agent = self._visited[i]
                    plan.pairs.add(ref._replace(suite=number), agent)
            if part.error is not None:
                raise part.error
            if part.missing:
                missing.append(str(suite.path))
            plan.simulators |= part.simulators
            if part.selected:
                selected.append(part.dynamic)
        plan.all_dynamic = bool(selected) and all(selected)  # every selected case is dynamic
        if missing:
            raise UsageError(
                "no agent to test for "
                + ", ".join(sorted(set(missing)))
                + ": pass -n AGENT, set 'target' in the suite, or put an agent.yaml next to it or above it"
            )
        if self.problems:
            raise SuiteError(self.problems)
        return plan

    def _usable(self, suite: Suite) -> _SuitePlan | None:
        """What ``visit`` planned of ``suite``, if it still holds: the suite is the one read,
        with its cases and targets as the loader left them."""
        part = self._parts.get(id(suite))
        usable = part is not None and part.suite is suite and isinstance(suite.cases, FileCases)
        return part if usable and part is not None and part.targets == (suite.target, suite.targets) else None

    def _start(self, suite: Suite, number: int, selection: Selection) -> _SuitePlan:
        part = _SuitePlan(suite, number, len(selection))
        try:
            part.agents = _suite_agents(suite, self.project, self.names)
        except SpecrunError as exc:
            part.error = exc
        return part

    def _case(self, part: _SuitePlan, selection: Selection, index: int, case: Case) -> None:
        """Plan one case of ``part``'s suite into ``selection``; raise what is wrong with it."""
        if self.select is not None and not self.select(case):
            return
        suite, project, names = part.suite, self.project, self.names
        agents = part.agents
        own = not names and case.target is not None
        if own:
            try:
                agents = [project.resolve(case.target, suite.base_dir)]  # type: ignore[arg-type]
            except UsageError as exc:
                raise _located(exc, suite, case) from None
        if None in agents:
            part.missing = True
            return
        part.selected += 1
        dynamic = case.dynamic
        part.dynamic = part.dynamic and dynamic
        if dynamic and case.simulator and case.simulator.get("use"):
            part.simulators.add(str(case.simulator.get("use")))
        where, registry = case.location, self.registry
        for agent in agents:
            assert agent is not None
            target = _check_pair(case, agent, suite, project, self.simulator, self.connector, own, bool(names))
            self.problems.extend(case_problems(case, target, agent, len(agents) > 1))
            model = case_needs_model(case, agent, registry, self.config)
            uses = tuple(case_model_uses(case, agent, registry))
            ref = CaseRef(case.id, case.name, where.file, where.line, part.number, index, model, uses)
            selection.add(ref, agent)


def case_problems(
    case: Case, target: Target, agent: Agent, name_agent: bool = False, strict: bool = False
) -> list[Problem]:
    """What ``target`` cannot run in ``case`` (``Target.case_problems``), at the case's line;
    ``name_agent`` when the case runs against several agents. A target that cannot even be
    asked (its server is down) finds none here, and each case then fails with that error; with
    ``strict`` (``specrun validate``), its ``TargetError`` is raised."""
    found = []
    if case.tools and not target.mock_tools:  # they would never be reached: say so before the run
        message = f"the {target.name} target does not give its agent mocked tools (python, process and http do)"
        found.append(("tools", f"{message}: run this case against one of those, or leave tools out"))
    if case.tools:
        from .._mocks import missing_sdk

        if missing := missing_sdk():
            found.append(("tools", missing))
    try:
        found += list(target.case_problems(case))
    except TargetError:
        if strict:
            raise
    if not found:  # the usual case
        return []
    loc, who = case.location, f"agent {agent.id!r}: " if name_agent else ""
    return [
        Problem(loc.file, loc.line, loc.column, who + message, f"{loc.pointer}.{field}" if loc.pointer else field)
        for field, message in found
    ]


def _suite_agents(suite: Suite, project: Project, names: list[str]) -> list[Agent | None]:
    """The agents a suite's cases run against, unless a case names its own."""
    agents: list[Agent | None] = []
    for n in names:
        try:
            agents.append(project.resolve(n, Path.cwd()))
        except SuiteError:
            raise
        except UsageError as exc:
            raise UsageError(f"-n {n}: {exc}") from None
    if names:
        return _distinct(agents)  # -n a -n a runs a once
    if suite.targets is not None:
        for i, ref in enumerate(suite.targets):
            try:
                agents.append(project.resolve(ref, suite.base_dir))
            except UsageError as exc:
                raise _located(exc, suite, None, f"targets.{i}") from None
        return _distinct(agents)
    if suite.target is not None:
        try:
            return [project.resolve(suite.target, suite.base_dir)]
        except UsageError as exc:
            raise _located(exc, suite, None) from None
    return [project.nearest_agent(suite.path)]


def _distinct(agents: list[Agent | None]) -> list[Agent | None]:
    seen: dict[str | None, Agent | None] = {}
    for agent in agents:
        seen.setdefault(agent.id if agent else None, agent)
    return list(seen.values())


def _check_pair(
    case: Case,
    agent: Agent,
    suite: Suite,
    project: Project,
    simulator: str | None,
    connector: str | None,
    own: bool,
    named: bool,
) -> Target:
    """What running ``case`` against ``agent`` needs is there: a simulator, the case's hooks, a
    target that builds (``own``: the case named the agent; ``named``: ``-n`` did); that target."""
    if case.dynamic:
        _check_simulator(case, suite, project, simulator)
    # a missing hook is bad input, found now (a case with none: no generator to ask)
    for hook, missing_hook in check_case_hooks(case, agent) if case.before or case.after else ():
        raise _located(missing_hook, suite, case, hook)
    own_connector = case.options.get("connector") if not connector else None
    if own_connector and not project.takes_model(agent):
        raise _located(UsageError(_unused_connector(own_connector, agent)), suite, case, "options.connector")
    try:
        return project.target(agent, connector or own_connector)
    except UsageError as exc:  # an inline target mapping: point at the suite or case
        if named or agent.path is not None:
            raise
        raise _located(exc, suite, case if own else None) from None


def _unused_connector(connector: str, agent: Agent) -> str:
    return (
        f"connector {connector!r} would not be used: agent {agent.id!r} ({agent.target.get('type')} target) has no"
        " model to replace (a connector sets the model of model-backed targets such as litellm; an agent that"
        " reads it itself can take it from options.metadata)"
    )


def _check_simulator(case: Case, suite: Suite, project: Project, default: str | None) -> None:
    """A dynamic case has a simulator, and a simulator agent it names exists."""
    if case.simulator is None and not default:
        raise UsageError(
            f"{case.location}: dynamic case {case.id!r} has no simulator: add 'simulator' or pass --simulator"
        )
    registry = project.registry
    config = case.simulator if case.simulator is not None else registry.simulator_config(str(default))
    for param in registry.simulator_for(config).agent_params:
        use = config.get(param)
        if not isinstance(use, str):
            continue
        try:
            project.agent(use.removeprefix("agents:"))
        except SuiteError:
            raise
        except UsageError as exc:
            if case.simulator is None:
                raise UsageError(f"--simulator {default}: {exc}") from None
            raise _located(exc, suite, case, f"simulator.{param}") from None


def _located(exc: UsageError, suite: Suite, case: Case | None, field: str = "target") -> UsageError:
    """A mistake in a suite's or a case's ``field``, pointed at it (an agent file's are already)."""
    if isinstance(exc, SuiteError):
        return exc
    if case is not None:
        loc = case.location
        where = f"{loc.pointer}.{field}" if loc.pointer else field
        return SuiteError([Problem(loc.file, loc.line, loc.column, str(exc), where)])
    display, line, col = display_path(suite.path), 1, 1
    with contextlib.suppress(Exception):  # JSON or YAML: find the line of the suite's field
        _, record = load_mapping(suite.path, display)
        line, col = record.position([int(p) if p.isdigit() else p for p in field.split(".")])
    return SuiteError([Problem(display, line, col, str(exc), field)])
