"""``specrun rejudge``: judge a recorded run's answers again with the suites' current assertions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command("rejudge")
@click.argument("stream")
@click.argument("suites", nargs=-1)
@click.option(
    "-n", "--name", "names", multiple=True, help="The agent whose recorded answers to judge (as `specrun run -n`)."
)
@click.option(
    "-o", "--output", "outputs", multiple=True, help="Write results here; the extension picks the format. Repeatable."
)
@click.option("-j", "--parallel", type=click.IntRange(min=1), default=None, help="Cases judged at once (default 1).")
@click.option("--timeout", help="Per-case timeout of the judges, e.g. 30s, 2m (a case's own timeout wins).")
@click.option("--run", "run_filter", help="Only cases whose id or name matches this regex.")
@click.option("-m", "tags", metavar="EXPR", help="Only cases whose tags match: 'smoke and not slow' (pytest's -m).")
@click.option("-k", "keywords", metavar="EXPR", help="Only cases whose id or name has these substrings (pytest's -k).")
@click.option("--min-pass-rate", type=click.FloatRange(0, 100, min_open=True), help="As `specrun run`'s.")
@click.option("--no-cache", is_flag=True, help="Ask the judges again rather than reuse cached verdicts.")
@click.option("--no-history", is_flag=True, help="Do not record this run in the project's run history.")
@click.option("-v", "--verbose", is_flag=True, help="Show every assertion and the recorded output.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
def command(stream: str, suites: tuple[str, ...], **flags: Any) -> None:
    """Judge the answers recorded in STREAM again, with the current assertions of SUITES.

    \b
    STREAM is a result stream (.jsonl) or a run id of `specrun history` (a unique prefix will do).
    No agent is called and no case hook runs: each case's recorded answer (each recorded turn's, for
    a dynamic case, whose checkpoints are checked again turn by turn) goes to its assertions as
    it did in the recorded run. The new run is a run like any other (stream, -o reports, history,
    exit codes), marked a rejudge of STREAM. A case whose input changed since then is skipped
    (not rejudged); one that STREAM does not have is not run, and listed.
    With no SUITES, those of specrun.yaml. Exit codes as `specrun run`'s; 2 for a bad STREAM.
    """
    import asyncio

    from .._report.outputs import OutputLocks
    from .run import _loop_factory, _project_suites

    specs = list(suites) or _project_suites()
    with OutputLocks() as locks, asyncio.Runner(loop_factory=_loop_factory()) as loop:
        code = loop.run(_rejudge(stream, specs, flags, locks))
    raise click.exceptions.Exit(code)


async def _rejudge(stream: str, specs: list[str], flags: dict[str, Any], locks: Any) -> int:
    from .._core.errors import UsageError
    from .._report.outputs import same_file
    from .._run.session import RunRequest, RunSession
    from .._run.settings import RunOptions
    from .run import planned, request_fields, run_planned

    request = RunRequest(
        inputs=specs,
        options=RunOptions(min_pass_rate=flags["min_pass_rate"], no_cache=flags["no_cache"]),
        executor="local",  # the recorded answers are here, not on a cluster's workers
        **request_fields(flags),
    )
    recording = Path(stream)
    for output in request.outputs:  # the recording is read again case by case, and it is the evidence: keep it
        if recording.is_file() and same_file(Path(output), recording):
            raise UsageError(f"-o {output}: that is the stream being rejudged; write the rejudge elsewhere")
    session = RunSession(request)
    replay = session.rejudging(stream)  # a bad STREAM: before any suite is read
    try:
        await session.load()
        planned(session)
        heading = f"rejudging {replay.recorded.source}: no agent is called"
        return await run_planned(session, flags, locks, heading=heading, then=lambda _: _list_missing(replay))
    finally:
        replay.recorded.close()


def _list_missing(replay: Any) -> None:
    """The cases the recorded run has no record of (not run), the first 20 of them."""
    from .._report.console import clean

    if replay.not_run:
        more = replay.not_run - len(replay.missing)
        shown = replay.missing + ([f"and {more} more"] if more else [])
        click.echo(f"not run: {replay.not_run} not in {replay.recorded.source}:", err=True)
        for line in shown:
            click.echo(f"  {clean(line)}", err=True)
