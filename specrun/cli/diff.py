"""``specrun diff``: compare two runs' reports, as Markdown for a pull-request comment."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click


@click.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the Markdown here instead of stdout.")
@click.pass_context
def command(ctx: click.Context, old: Path, new: Path, output: Path | None) -> None:
    """Compare OLD and NEW reports (JSONL streams or .json reports).

    \b
    Lists newly failing, fixed and still failing cases, pass rates that moved, and duration
    and cost changes. Exit 1 when something regressed (a case newly fails or its pass rate
    dropped), 0 otherwise, 2 when a file cannot be read as a report.
    """
    from ..diff import compare_files, to_markdown

    comparison = compare_files(old, new)
    text = to_markdown(comparison)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, output)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        click.echo(f"wrote {output}", err=True)
    if comparison.regressed:
        ctx.exit(1)
