"""``specrun validate``: check suites, and the agent files they use, without running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-v", "--verbose", is_flag=True, help="Also list the files and folders passed over, and why.")
@click.option(
    "--tools", is_flag=True, help="Also list what each agent the suites use offers to call (an MCP server's tools)."
)
def command(paths: tuple[Path, ...], verbose: bool, tools: bool) -> None:
    """Check suite files: every mistake is listed with file:line:col, then exit 2.

    Each case is checked against its agent's target too: a tool call against the tools an MCP
    server lists (the server is started, asked and stopped).
    """
    import asyncio

    from .._core.errors import UsageError
    from .._load.loader import Loader
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    registry = default_plugins().registry
    project = Project.discover(paths[0], registry)
    loader = Loader(registry, config=project.config)  # its defaults (embedding_model) are checked too
    try:
        suites = loader.load(paths)
    finally:  # also when a suite is broken: what was not loaded may be why
        if verbose:
            echo_skipped(loader.skipped)
    if not suites:
        raise UsageError(f"no suite files found under {', '.join(map(str, paths))}")
    try:
        used = _check_agents(suites, project)
        if tools:
            for agent, target in used.values():
                listed = target.catalog()
                click.echo(f"agent {agent.id}: " + (listed or f"a {target.name} target lists nothing to call"))
    finally:
        asyncio.run(project.aclose())  # a server started to list its tools is stopped
    cases = sum(len(s.cases) for s in suites)
    click.echo(f"ok: {cases} cases in {len(suites)} suite files")


def _check_agents(suites: list[Any], project: Any) -> dict[str, tuple[Any, Any]]:
    """Each suite's agent (its file and target config) and each case against its agent's target;
    every problem raised together. The agents used, by id, with their targets."""
    from .._core.errors import Problem, SuiteError, TargetError
    from .._run.plan import case_problems

    problems: list[Problem] = []
    used: dict[str, tuple[Any, Any]] = {}
    unreachable: set[str] = set()
    for suite in suites:
        try:
            default = (
                project.resolve(suite.target, suite.base_dir) if suite.target else project.nearest_agent(suite.path)
            )
            for case in suite.cases:
                agent = project.resolve(case.target, suite.base_dir) if case.target else default
                if agent is None or agent.id in unreachable:
                    continue
                target = project.target(agent)
                used.setdefault(agent.id, (agent, target))
                try:
                    found = case_problems(case, target, agent, strict=True)
                except TargetError as exc:
                    unreachable.add(agent.id)
                    loc = case.location
                    found = [Problem(loc.file, loc.line, loc.column, f"agent {agent.id!r}: cannot check cases: {exc}")]
                problems.extend(p for p in found if p not in problems)
        except SuiteError as exc:
            problems.extend(p for p in exc.problems if p not in problems)
    if problems:
        raise SuiteError(problems)
    return used


def echo_skipped(skipped: list[tuple[Path, str]]) -> None:
    """``-v``: each file or folder the inputs named or held that was not loaded, and why."""
    from .._load.problems import display_path

    for path, reason in skipped:
        click.echo(f"skipped {display_path(path)}{'/' if path.is_dir() else ''}: {reason}", err=True)
