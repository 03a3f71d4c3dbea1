"""``specrun schema``: print the JSON Schema composed from the installed plugins."""

from __future__ import annotations

import json

import click


@click.command("schema")
@click.option(
    "--kind",
    type=click.Choice(["suite", "agent", "config"]),
    default="suite",
    show_default=True,
    help="Which file's schema to print.",
)
def command(kind: str) -> None:
    """Print the JSON Schema of suite files (or agent/config files) for what is installed.

    Save it and point your editor at it, e.g. a `# yaml-language-server: $schema=...` line.
    """
    from .._load.schemas import agent_schema, compose, config_schema
    from .._project.plugin_manager import default_plugins

    registry = default_plugins().registry
    schema = {
        "suite": lambda: compose(registry),
        "agent": lambda: agent_schema(registry),
        "config": lambda: config_schema(registry),
    }[kind]()
    click.echo(json.dumps(schema, indent=2, ensure_ascii=False))
