"""``specrun diff``: compare two runs' reports, as Markdown for a pull-request comment."""

from __future__ import annotations

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
    Lists newly failing, newly skipped, missing, fixed and still failing cases, pass rates
    that moved, and duration and cost changes. Exit 1 when NEW regressed: it is an incomplete
    or interrupted run, or a case newly fails, is newly skipped, is missing from NEW, or its
    pass rate dropped. Exit 0 otherwise; 2 when a file is not a report diff can trust (a field
    of the wrong type, a duplicate id). The rules: docs/reports.md.
    """
    from .._core.redact import redact
    from .._history.diff import compare_files, to_markdown
    from .._report.outputs import atomic_writer

    comparison = compare_files(old, new)
    text = redact(to_markdown(comparison))  # reports from elsewhere may hold this machine's secrets
    if output is None:
        click.echo(text, nl=False)
    else:
        with atomic_writer(output) as f:
            f.write(text)
        click.echo(f"wrote {output}", err=True)
    if comparison.regressed:
        ctx.exit(1)
