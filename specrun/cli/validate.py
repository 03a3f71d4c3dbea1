"""``specrun validate``: check suites, and the agent files they use, without running anything."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-v", "--verbose", is_flag=True, help="Also list the files and folders passed over, and why.")
def command(paths: tuple[Path, ...], verbose: bool) -> None:
    """Check suite files: every mistake is listed with file:line:col, then exit 2."""
    from .._core.errors import Problem, SuiteError, UsageError
    from .._load.loader import Loader
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    registry = default_plugins().registry
    loader = Loader(registry)
    try:
        suites = loader.load(paths)
    finally:  # also when a suite is broken: what was not loaded may be why
        if verbose:
            echo_skipped(loader.skipped)
    project = Project.discover(paths[0], registry)
    problems: list[Problem] = []
    for suite in suites:  # the agent each suite would run against: its file and target config
        try:
            agent = project.resolve(suite.target, suite.base_dir) if suite.target else project.nearest_agent(suite.path)
            if agent is not None:
                project.target(agent)
        except SuiteError as exc:
            problems.extend(p for p in exc.problems if p not in problems)
    if problems:
        raise SuiteError(problems)
    cases = sum(len(s.cases) for s in suites)
    if not suites:
        raise UsageError(f"no suite files found under {', '.join(map(str, paths))}")
    click.echo(f"ok: {cases} cases in {len(suites)} suite files")


def echo_skipped(skipped: list[tuple[Path, str]]) -> None:
    """``-v``: each file or folder the inputs named or held that was not loaded, and why."""
    from .._load.problems import display_path

    for path, reason in skipped:
        click.echo(f"skipped {display_path(path)}{'/' if path.is_dir() else ''}: {reason}", err=True)
