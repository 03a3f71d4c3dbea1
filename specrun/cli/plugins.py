"""``specrun plugins``: which plugins are installed and what each adds; ``--api``: the plugin API."""

from __future__ import annotations

import inspect
import json
from typing import Any

import click


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--api", is_flag=True, help="List the public plugin API (specrun.plugin) instead.")
def command(as_json: bool, api: bool) -> None:
    """List installed plugins: name, distribution, version and the types each adds."""
    if api:
        _show_api()
        return
    from .._project.plugin_manager import blocked_names, default_plugins

    infos = default_plugins().infos
    rows: list[dict[str, Any]] = [
        {"name": i.name, "distribution": i.distribution, "version": i.version, "types": i.types} for i in infos
    ]
    if as_json:
        click.echo(json.dumps({"plugins": rows, "blocked": sorted(blocked_names())}, indent=2))
        return
    for row in rows:
        dist = f" ({row['distribution']} {row['version']})" if row["distribution"] else ""
        click.echo(f"{row['name']}{dist}")
        for kind, names in sorted(row["types"].items()):
            click.echo(f"  {kind}: {', '.join(sorted(names))}")
    if blocked_names():
        click.echo(f"blocked by SPECRUN_DISABLE_PLUGINS: {', '.join(sorted(blocked_names()))}")


SERVICES_METHODS = " .services: call_agent, ask_agent; .services.models: model_for, complete, complete_json."


def _show_api() -> None:
    """Each name of ``specrun.plugin`` with the first line of its docstring (docs/plugins.md has more)."""
    from .. import plugin

    click.echo("specrun.plugin (see docs/plugins.md):")
    for name in sorted(plugin.__all__, key=str.lower):
        value = getattr(plugin, name)
        if inspect.isclass(value) or callable(value):
            doc = (inspect.getdoc(value) or "").partition("\n")[0]
        elif isinstance(value, int | float | tuple) or (isinstance(value, str) and len(value) < 40):
            doc = f"= {value!r}"
        else:
            doc = f"a {type(value).__name__}"
        extra = SERVICES_METHODS if name == "Check" else ""
        click.echo(f"  {name:<22} {doc}{extra}")
