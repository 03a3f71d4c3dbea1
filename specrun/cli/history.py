"""``specrun history``: the project's recent runs, one case's timeline, the flaky cases."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click

# -C FOLDER: the project whose history a command reads (history, view).
project_option = click.option(
    "-C",
    "--project",
    "folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of the project (default: the current one).",
)


@click.command("history")
@click.argument("case_id", required=False)
@click.option("--flaky", is_flag=True, help="List the cases whose verdict changed over their recent runs.")
@click.option("-n", "--name", "agent", help="Only the runs of this agent.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Runs (or results) shown.")
@click.option(
    "--window", type=click.IntRange(min=2), help="--flaky: runs of each case looked at (default: the setting, 10)."
)
@project_option
def command(
    case_id: str | None, flaky: bool, agent: str | None, limit: int, window: int | None, folder: Path | None
) -> None:
    """Show the run history: recent runs, or CASE_ID's results across runs.

    \b
    specrun history                the latest runs: when, agent, totals, pass rate, duration
    specrun history refund-policy  that case's timeline (status, duration, what changed)
    specrun history --flaky        cases that passed and failed over their recent runs
    """
    from .._history.store import History, settings
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project

    project = Project.discover(folder or Path.cwd(), default_plugins().registry)
    where = settings(project.root, project.config).path
    if where is not None and not where.is_file():
        click.echo(f"No runs recorded yet: every `specrun` run in {project.root} is recorded in {where}.")
        return
    store = History.open(project.root, project.config)
    try:
        if flaky:
            _flaky(store, window, agent)
        elif case_id:
            _timeline(store, case_id, agent, limit)
        else:
            _runs(store, agent, limit)
    finally:
        store.close()


def _table(header: list[str], rows: list[list[str]]) -> None:
    from .._report.console import clean

    rows = [[clean(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _when(stamp: str | None) -> str:
    """A stored UTC time in this machine's time zone, to the second."""
    if not stamp:
        return "-"
    return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _duration(ms: float | None) -> str:
    from .._core.data import format_duration

    return "-" if ms is None else format_duration(ms / 1000)


def _runs(store: Any, agent: str | None, limit: int) -> None:
    runs = store.runs(limit, agent=agent)
    if not runs:
        click.echo("No runs recorded" + (f" for agent {agent!r}" if agent else "") + f" in {store.path}.")
        return
    rows = []
    for run in runs:
        judged = sum(run[k] or 0 for k in ("passed", "failed", "errors"))
        if run["ended_at"] is None:
            outcome = "did not finish (killed?)"
        else:
            outcome = f"{100 * run['passed'] / judged:.1f}%" if judged else "-"
            outcome += " (interrupted)" if run["interrupted"] else ""
        if run.get("rejudge"):  # `specrun rejudge STREAM`: what it judged again
            outcome += f" (rejudge of {run['rejudge']})"
        totals = "-" if run["total"] is None else f"{run['passed']}/{run['failed']}/{run['errors']}/{run['skipped']}"
        rows.append(
            [
                run["id"],
                _when(run["started_at"]),
                ", ".join(run["agents"] or []),
                totals,
                outcome,
                _duration(run["duration_ms"]),
            ]
        )
    _table(["RUN", "STARTED", "AGENT", "PASS/FAIL/ERR/SKIP", "PASS RATE", "DURATION"], rows)
    click.echo(
        f"\n{len(runs)} latest run{'s' * (len(runs) != 1)} in {store.path}; `specrun history CASE_ID` for a case"
    )


def _timeline(store: Any, case_id: str, agent: str | None, limit: int) -> None:
    results = [r for r in store.timeline(case_id, limit) if agent is None or r["agent"] == agent]
    if not results:
        click.echo(f"No results of case {case_id!r} in {store.path}.")
        return
    flaky = {f.key for f in store.flaky(case_ids=[case_id])}
    rows = []
    for newer, older in zip(results, [*results[1:], None], strict=True):
        notes = []
        if older is not None and newer["content_hash"] != older["content_hash"]:
            notes.append("case edited")
        if older is not None and newer["agent"] != older["agent"]:
            notes.append("other agent")
        elif older is not None:
            if newer["revision"] != older["revision"]:
                notes.append("agent changed")  # its code, config or -c model: flakiness starts afresh
            if _new_output(newer["fingerprint"], older["fingerprint"]) and newer["status"] != "skipped":
                notes.append("new output")
        if newer["cached"]:
            notes.append("cached")
        if newer["error"]:
            notes.append(newer["error"])
        failed = [a for a in (newer["result"] or {}).get("assertions") or [] if a.get("status") == "failed"]
        if failed:
            notes.append(f"{failed[0].get('type')}: {failed[0].get('message') or 'failed'}")
        run = newer["run_id"] + (f" #{newer['run_index']}" if newer["run_index"] > 1 else "")
        rows.append(
            [
                run,
                _when(newer["started_at"]),
                newer["agent"],
                newer["status"],
                _duration(newer["duration_ms"]),
                "; ".join(notes)[:100],
            ]
        )
    _table(["RUN", "STARTED", "AGENT", "STATUS", "DURATION", "NOTES"], rows)
    places = sorted({f"{r['suite']}:{r['line']}" for r in results})
    click.echo(f"\ncase {case_id} ({', '.join(places)}), latest first")
    for key in sorted(flaky):
        click.echo(f"flaky against {key.agent}: it passed and failed over its recent runs (specrun history --flaky)")


def _flaky(store: Any, window: int | None, agent: str | None) -> None:
    found = [f for f in store.flaky(window) if agent is None or f.key.agent == agent]
    size = window or store.settings.flaky_window
    rule = (
        f"over the latest {size} runs of each case, with the same case content, against the same agent"
        " at the same revision"
    )
    if not found:
        click.echo(f"No flaky cases {rule}.")
        return
    rows = [[f.key.id, f.key.suite, f.key.agent, str(f.passed), str(f.failed), str(f.flips), f.last] for f in found]
    _table(["CASE", "SUITE", "AGENT", "PASSED", "FAILED", "FLIPS", "LATEST"], rows)
    click.echo(f"\n{len(found)} flaky case{'s' * (len(found) != 1)}: passed and failed (or errored) {rule}")


def _new_output(newer: str | None, older: str | None) -> bool:
    """Whether two results' outputs differ, by their fingerprints; one recorded before results
    were fingerprinted as the reports count distinct outputs (16 hex digits, not 32) is not
    compared: the same answer would look new once."""
    return bool(newer and older) and len(newer or "") == len(older or "") and newer != older
