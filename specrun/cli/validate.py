"""``specrun validate``: check suites (and the agent files they use) without running anything."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def command(paths: tuple[Path, ...]) -> None:
    """Check suite files: every mistake is listed with file:line:col, then exit 2."""
    from ..errors import UsageError
    from ..loader import Loader
    from ..plugins import default_plugins

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    suites = Loader(default_plugins().registry).load(paths)
    cases = sum(len(s.cases) for s in suites)
    if not suites:
        raise UsageError(f"no suite files found under {', '.join(map(str, paths))}")
    click.echo(f"ok: {cases} cases in {len(suites)} suite files")
