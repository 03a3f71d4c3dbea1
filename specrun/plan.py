"""From inputs to jobs: load every source, pick each case's agent, filter, repeat for ``--runs``.

All mistakes (in suites, agent files, agent configs) are found here, before anything runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .case_hooks import check_case_hooks
from .documents import load_mapping
from .errors import Problem, SuiteError, UsageError
from .kinds import Source, SourceContext
from .model import Case, Suite
from .plugins import Plugins
from .problems import display_path
from .project import Agent, Project
from .runner import Job
from .services import ModelUse, case_model_uses, case_needs_model


@dataclass
class Plan:
    """What a run will do."""

    suites: list[Suite]
    pairs: list[tuple[Case, Agent]] = field(default_factory=list)

    def jobs(self, runs: int) -> list[Job]:
        return [Job(case, agent, run) for run in range(1, runs + 1) for case, agent in self.pairs]

    @property
    def agent_ids(self) -> list[str]:
        return sorted({agent.id for _, agent in self.pairs})

    def needs_model(self, registry: Any, config: dict[str, Any]) -> bool:
        """True when a judge, an LLM simulator or a model-backed target will be called
        (``config``: the project's ``specrun.yaml``)."""
        return any(case_needs_model(case, agent, registry, config) for case, agent in self.pairs)

    def model_uses(self, registry: Any) -> list[ModelUse]:
        """The models (with their params) that the cases and agents name, each once, for
        ``ModelClient.preload``."""
        uses: dict[str, ModelUse] = {}
        for case, agent in self.pairs:
            for use in case_model_uses(case, agent, registry):
                uses.setdefault(repr(use), use)
        return list(uses.values())


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
    ``select`` takes (``--run``, ``-m``, ``-k``: :mod:`specrun.selection`), and build every target
    once so config mistakes show before the run."""
    names = [name] if isinstance(name, str) else list(name or [])
    plan = Plan(suites)
    missing: list[str] = []
    for suite in suites:
        suite_agents = _suite_agents(suite, project, names)
        for case in suite.cases:
            if select is not None and not select(case):
                continue
            agents = suite_agents
            own = not names and case.target is not None
            if own:
                try:
                    agents = [project.resolve(case.target, suite.base_dir)]  # type: ignore[arg-type]
                except UsageError as exc:
                    raise _located(exc, suite, case) from None
            if None in agents:
                missing.append(str(suite.path))
                break
            for agent in agents:
                assert agent is not None
                _check_pair(case, agent, suite, project, simulator, connector, own, bool(names))
                plan.pairs.append((case, agent))
    if missing:
        raise UsageError(
            "no agent to test for "
            + ", ".join(sorted(set(missing)))
            + ": pass -n AGENT, set 'target' in the suite, or put an agent.yaml next to it or above it"
        )
    return plan


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
) -> None:
    """What running ``case`` against ``agent`` needs is there: a simulator, the case's hooks, a
    target that builds (``own``: the case named the agent; ``named``: ``-n`` did)."""
    if case.dynamic:
        _check_simulator(case, suite, project, simulator)
    for hook, missing_hook in check_case_hooks(case, agent):  # a missing hook is bad input, found now
        raise _located(missing_hook, suite, case, hook)
    own_connector = case.options.get("connector") if not connector else None
    if own_connector and not project.takes_model(agent):
        raise _located(UsageError(_unused_connector(own_connector, agent)), suite, case, "options.connector")
    try:
        project.target(agent, connector or own_connector)
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
