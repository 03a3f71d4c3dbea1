"""``specrun merge``: join shard result streams into one stream and its reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command("merge")
@click.argument("streams", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o", "--output", "outputs", multiple=True, help="Write the merged report here (.jsonl .json .md .html .xml)."
)
def command(streams: tuple[Path, ...], outputs: tuple[str, ...]) -> None:
    """Merge the result streams of one run's shards (--shard I/N) into one report set.

    \b
    Totals, pass rates and stability are recomputed from every result, as one run would have
    them; a run against several agents, per (case, agent). Refuses streams of different
    suites, filters or agents or of another version of a case, and overlapping shards (exit 2).
    A missing or cut-short shard, or one lacking results it planned, makes the merged run
    incomplete.
    Exit codes as for a run: 0 all passed, 1 a case failed or errored, 3 incomplete, 130
    interrupted. Example: specrun merge shard-*.jsonl -o report.json -o report.xml
    """
    import asyncio
    import tempfile

    from .._core.errors import ReportError
    from .._history.merge import merge
    from .._project.plugin_manager import default_plugins
    from .._report.outputs import atomic_writer, check_outputs
    from .._report.stability import exit_code, verdict
    from .._report.stream import ResultStream

    registry = default_plugins().registry
    classes = [(Path(o), registry.reporter_for(o)) for o in outputs]  # an unknown extension: exit 2 now
    check_outputs([("-o", path) for path, _ in classes], list(streams), [])
    stream = next((path for path, cls in classes if cls is ResultStream), None)
    temporary = stream is None
    if stream is None:
        folder = classes[0][0].parent if classes else Path(tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        stream = Path(tempfile.mkstemp(prefix=".specrun-merged-", suffix=".jsonl", dir=folder)[1])
    try:
        with atomic_writer(stream) as out:
            start, summary = merge(list(streams), out)
        reporters = [cls(path) for path, cls in classes if cls is not ResultStream]
        broken = asyncio.run(_write(reporters, start, summary, stream))
    finally:
        if temporary:
            stream.unlink(missing_ok=True)
    shards, cases = start["shard"], summary["total_cases"]
    of = f"{cases} cases" if cases == shards["selected"] else f"{cases} of {shards['selected']} cases"
    click.echo(
        f"merged {len(streams)} stream{'s' * (len(streams) != 1)}"
        f" ({len(shards['indexes'])} of {shards['count']} shards, {of}): {verdict(summary)[1]}"
    )
    if summary.get("incomplete"):
        click.echo(f"incomplete: {summary['incomplete']}", err=True)
    for path, _ in classes:
        click.echo(f"wrote {path}")
    if broken:
        raise ReportError("; ".join(broken))
    raise click.exceptions.Exit(exit_code(summary))


async def _write(reporters: list[Any], start: dict[str, Any], summary: dict[str, Any], stream: Path) -> list[str]:
    """Write the whole-file reports from the merged stream, as a run's end does (only the
    reporters are plugins of it: the installed plugins saw the shards' runs already)."""
    from .._core.results import RunInfo
    from .._project.plugin_manager import get_plugin_manager
    from .._run.lifecycle import Lifecycle

    info = RunInfo(
        agent_id=start.get("agent_id"),
        inputs=list(start.get("inputs") or []),
        total_cases=int(start.get("total_cases") or 0),
        runs=int(start.get("runs") or 1),
        parallel=int(start.get("parallel") or 1),
        started_at=str(start.get("started_at") or ""),
        shard=start.get("shard"),
    )
    with Lifecycle(get_plugin_manager(use_entry_points=False), reporters) as lifecycle:
        await lifecycle.finish(info=info, summary=summary, stream=stream)
    return list(lifecycle.broken.values())
