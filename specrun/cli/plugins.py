"""``specrun plugins``: which plugins are installed and what each adds."""

from __future__ import annotations

import json
from typing import Any

import click


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def command(as_json: bool) -> None:
    """List installed plugins: name, distribution, version and the types each adds."""
    from ..plugins import blocked_names, default_plugins

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
