"""``specrun init``: scaffold a project that runs offline and passes (see :mod:`specrun._project.scaffold`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=Path))
def command(folder: Path) -> None:
    """Scaffold a project in FOLDER (default: here): specrun.yaml, an agent, a suite, editor
    schemas and a .gitignore. Never overwrites a file; `specrun` right after it passes."""
    from .._project.plugin_manager import default_plugins
    from .._project.scaffold import scaffold

    had_gitignore = (folder / ".gitignore").exists()
    for path in scaffold(folder, default_plugins().registry):
        updated = path == ".specrun/.gitignore" or (path == ".gitignore" and had_gitignore)
        click.echo(f"  {'updated' if updated else 'created'} {path}")
    where = "" if folder.resolve() == Path.cwd().resolve() else f"cd {folder} && "
    click.echo(f"Next: {where}specrun     (runs suites/; then edit agent.yaml to test your own agent)")
