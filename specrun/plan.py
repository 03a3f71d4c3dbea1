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
from .services import case_needs_model


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
    name: str | None = None,
    select: Callable[[Case], bool] | None = None,
    connector: str | None = None,
    simulator: str | None = None,
) -> Plan:
    """Pick each case's agent (``-n`` > case ``target`` > suite ``target`` > nearest agent.yaml),
    keep the cases ``select`` takes (``--run``, ``-m``, ``-k``: :mod:`specrun.selection`), and
    build every target once so config mistakes show before the run."""
    plan = Plan(suites)
    missing: list[str] = []
    for suite in suites:
        suite_agent: Agent | None = None
        if name:
            try:
                suite_agent = project.resolve(name, Path.cwd())
            except SuiteError:
                raise
            except UsageError as exc:
                raise UsageError(f"-n {name}: {exc}") from None
        elif suite.target is not None:
            try:
                suite_agent = project.resolve(suite.target, suite.base_dir)
            except UsageError as exc:
                raise _located(exc, suite, None) from None
        else:
            suite_agent = project.nearest_agent(suite.path)
        for case in suite.cases:
            if select is not None and not select(case):
                continue
            agent = suite_agent
            own = not name and case.target is not None
            if not name and case.target is not None:
                try:
                    agent = project.resolve(case.target, suite.base_dir)
                except UsageError as exc:
                    raise _located(exc, suite, case) from None
            if agent is None:
                missing.append(str(suite.path))
                break
            if case.dynamic:
                _check_simulator(case, suite, project, simulator)
            for hook, missing_hook in check_case_hooks(case, agent):  # a missing hook is bad input, found now
                raise _located(missing_hook, suite, case, hook)
            try:
                project.target(agent, connector)
            except UsageError as exc:  # an inline target mapping: point at the suite or case
                if name or agent.path is not None:
                    raise
                raise _located(exc, suite, case if own else None) from None
            plan.pairs.append((case, agent))
    if missing:
        raise UsageError(
            "no agent to test for "
            + ", ".join(sorted(set(missing)))
            + ": pass -n AGENT, set 'target' in the suite, or put an agent.yaml next to it or above it"
        )
    return plan


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
        line, col = record.position(field.split("."))
    return SuiteError([Problem(display, line, col, str(exc), field)])
