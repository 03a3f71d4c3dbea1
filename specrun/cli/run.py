"""``specrun run`` (the default command): run suites against their agents."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._report.outputs import OutputLocks
    from .._run.plan import Plan
    from .._run.session import RunSession, RunSummary


@click.command("run")
@click.argument("paths", nargs=-1)
@click.option(
    "-i", "--input", "inputs", multiple=True, help="A suite file or folder, agents:ID, scripts:mod.func, or a message."
)
@click.option(
    "-n",
    "--name",
    "names",
    multiple=True,
    help="The agent under test: an agent id, python:module:function, or a URL. Repeat to run every case against each.",
)
@click.option(
    "-o", "--output", "outputs", multiple=True, help="Write results here; the extension picks the format. Repeatable."
)
@click.option("-c", "--connector", help="Override the model of model-backed targets.")
@click.option("-u", "--user", help="User id for every case (default: the case's, else test-user).")
@click.option("-t", "--team", help="Team id for every case (default: the case's, else test-team).")
@click.option("--locale", help="Locale for every case (default: the case's, else en-us).")
@click.option(
    "--ctx",
    "ctx_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON/YAML file merged into every case's context.",
)
@click.option("--timeout", help="Per-case timeout, e.g. 30s, 2m (default 2m; a case's own timeout wins).")
@click.option("-j", "--parallel", type=click.IntRange(min=1), default=None, help="Cases run at once (default 1).")
@click.option(
    "--runs", type=click.IntRange(min=1), default=1, show_default=True, help="Run every case N times (stability)."
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 100, min_open=True),
    help="With --runs: a case passes when this % of its runs pass (more than 0).",
)
@click.option("--run", "run_filter", help="Only cases whose id or name matches this regex.")
@click.option("-m", "tags", metavar="EXPR", help="Only cases whose tags match: 'smoke and not slow' (pytest's -m).")
@click.option("-k", "keywords", metavar="EXPR", help="Only cases whose id or name has these substrings (pytest's -k).")
@click.option("--shard", help="Run only part I of N of the selected cases (I/N, e.g. 2/3); see specrun merge.")
@click.option("--executor", help="Where cases execute: local (default), ray (a Ray cluster: RAY_ADDRESS).")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed case (cancels running ones).")
@click.option("--dry-run", is_flag=True, help="Show the resolved cases; run and write nothing.")
@click.option(
    "--save",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write generated cases to FILE (.jsonl/.yaml/.json).",
)
@click.option(
    "-r",
    "--reporter",
    help="Who writes the -o reports: a built-in reporter (report.html, report.markdown, report.json,"
    " report.summary) or a reporter agent (agents:ID).",
)
@click.option("--simulator", help="Default simulator agent id for dynamic cases.")
@click.option("--before", "before_all", help="Global hook run once before all cases (module.Func).")
@click.option("--after", "after_all", help="Global hook run once after all cases (module.Func).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the model response cache.")
@click.option(
    "--update-snapshots",
    is_flag=True,
    help="Approve this run's outputs: rewrite the snapshots that differ or are missing.",
)
@click.option("--no-history", is_flag=True, help="Do not record this run in the project's run history.")
@click.option(
    "--lf", "--last-failed", "last_failed", is_flag=True, help="Run only the cases that failed or errored last time."
)
@click.option("--ff", "--failed-first", "failed_first", is_flag=True, help="Run the cases that failed last time first.")
@click.option("-v", "--verbose", is_flag=True, help="Show every assertion and the agent's output.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
def command(paths: tuple[str, ...], inputs: tuple[str, ...], **flags: Any) -> None:
    """Run suites: every case against its agent, with a verdict a CI job can trust.

    With no PATHS, the suites listed under `suites` in specrun.yaml. Exit codes: 0 all
    passed, 1 a case failed or errored, 2 bad input or usage, 3 specrun itself failed,
    130/143 interrupted.
    """
    import asyncio

    specs = [*paths, *inputs] or _project_suites()
    _check_positional(paths)
    from .._report.outputs import OutputLocks

    with OutputLocks() as locks, asyncio.Runner(loop_factory=_loop_factory()) as loop:
        code = loop.run(_run(specs, flags, locks))
    raise click.exceptions.Exit(code)


async def _run(specs: list[str], flags: dict[str, Any], locks: Any) -> int:
    from .._run.session import RunRequest, RunSession
    from .._run.settings import RunOptions

    options = RunOptions(
        runs=flags["runs"],
        min_pass_rate=flags["min_pass_rate"],
        fail_fast=flags["fail_fast"],
        user=flags["user"],
        team=flags["team"],
        locale=flags["locale"],
        before_all=flags["before_all"],
        after_all=flags["after_all"],
        connector=flags["connector"],
        simulator=flags["simulator"],
        no_cache=flags["no_cache"],
        update_snapshots=flags["update_snapshots"],
    )
    request = RunRequest(
        inputs=specs,
        options=options,
        executor=flags["executor"],
        context_file=flags["ctx_file"],
        shard=flags["shard"],
        last_failed=flags["last_failed"],
        failed_first=flags["failed_first"],
        reporter_agent=flags["reporter"],
        saving=flags["save"],
        **request_fields(flags),
    )
    session = RunSession(request)
    _check_reporter(session.project, flags)
    try:
        suites = await session.load()
    finally:
        if flags["verbose"]:
            from .validate import echo_skipped

            echo_skipped(session.skipped)
    if flags["save"]:
        _save_generated(suites, flags["save"])
    plan = planned(session)
    if flags["dry_run"]:
        _show_plan(plan, options.runs, flags["save"], session.plugins.registry)
        await session.aclose()
        return 0
    # Direct mode (``-i "hello"``) is pipeable: stdout carries the answer alone (what a Python
    # agent prints goes to stderr with the console).
    direct = session.direct and not request.outputs
    answer = (lambda summary: _print_direct(summary.stream)) if direct else None
    return await run_planned(session, flags, locks, direct=direct, then=answer)


def request_fields(flags: dict[str, Any]) -> dict[str, Any]:
    """The ``RunRequest`` fields that ``run`` and ``rejudge`` read from the same flags."""
    return {
        "agent": flags["names"][0] if flags["names"] else None,
        "agents": list(flags["names"]),
        "outputs": list(flags["outputs"]),
        "timeout": flags["timeout"],
        "parallel": flags["parallel"],
        "run_filter": flags["run_filter"],
        "tags": flags["tags"],
        "keywords": flags["keywords"],
        "verbose": flags["verbose"],
        "history": not flags["no_history"],
        "argv": (click.get_current_context().find_object(dict) or {}).get("argv", []),
    }


def planned(session: RunSession) -> Plan:
    """The session's plan, and what planning chose to say (on stderr)."""
    plan = session.plan()
    for note in session.notes:
        click.echo(note, err=True)
    return plan


async def run_planned(
    session: RunSession,
    flags: dict[str, Any],
    locks: OutputLocks,
    *,
    direct: bool = False,
    heading: str | None = None,
    then: Callable[[RunSummary], None] | None = None,
) -> int:
    """Run a planned session, as ``run`` and ``rejudge`` do, to its exit code: the default stream's
    private folder, its files locked, the console (on stderr, and stdout too, when ``direct``) with
    ``heading`` above it; ``then(summary)`` before a temporary stream is removed."""
    from .._load.problems import display_path
    from .._report.console import ConsoleReport
    from .main import debugging

    request = session.request
    if session.outputs and not request.outputs:  # the default stream, under .specrun/runs/
        from .._report.outputs import PRIVATE_FOLDER, private_folder

        private_folder(session.project.root / PRIVATE_FOLDER)
    locks.acquire([("-o" if request.outputs else "the result stream", Path(o)) for o in session.outputs])
    tracebacks = flags["verbose"] or debugging(click.get_current_context())
    console = ConsoleReport(verbose=flags["verbose"], quiet=flags["quiet"], tracebacks=tracebacks, stderr=direct)
    console.output_paths = [display_path(Path(o)) for o in session.outputs]
    if heading:
        click.echo(heading, err=True)
    with contextlib.redirect_stdout(sys.stderr) if direct else contextlib.nullcontext():
        summary = await session.run(console)  # a failed report raises, and keeps the stream
    if then is not None:
        then(summary)
    session.discard_stream()
    return summary.exit_code


def _project_suites() -> list[str]:
    """No paths given: the ``suites`` of the project's ``specrun.yaml`` (found from here up)."""
    from .._core.errors import UsageError
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project

    project = Project.discover(Path.cwd(), default_plugins().registry)
    suites = project.config.get("suites")
    if not suites:
        raise UsageError(
            "nothing to run: give suite files or folders (e.g. specrun suites/) or -i, or list them under"
            " 'suites' in specrun.yaml (specrun init makes a project)"
        )
    paths = [os.path.relpath(project.root / suite) for suite in suites]
    missing = [suite for suite, path in zip(suites, paths, strict=True) if not os.path.exists(path)]
    if missing:
        raise UsageError(f"{project.root / 'specrun.yaml'}: suites: no such file or folder: {', '.join(missing)}")
    return paths


def _check_positional(paths: tuple[str, ...]) -> None:
    """Positional arguments are paths or ``source:`` inputs: a stray word (a typo, a message
    without ``-i``) is an error, never one more case sent to the agent."""
    from .._core.errors import UsageError
    from .._project.plugin_manager import default_plugins

    sources = default_plugins().registry.classes("source")
    for spec in paths:
        prefix, sep, _ = spec.partition(":")
        if os.path.exists(spec) or (sep and prefix in sources):
            continue
        if "/" in spec or os.sep in spec or Path(spec).suffix:
            raise UsageError(f"no such file or directory: {spec}")
        raise UsageError(
            f"no such file, folder or source: {spec} (arguments are suite files, folders, or sources"
            f" such as agents:ID; to send a message, use -i {shlex.quote(spec)})"
        )


def _check_reporter(project: Any, flags: dict[str, Any]) -> None:
    """``-r`` names a built-in reporter (``report.html``) or a project agent whose target
    builds, and has an ``-o`` file to write: checked before anything runs."""
    from .._core.errors import SuiteError, UsageError

    spec = flags["reporter"]
    if not spec:
        return
    if not flags["outputs"]:
        raise UsageError(f"-r needs -o FILE: the report is written there (e.g. -r {spec} -o report.html)")
    if project.registry.named_reporter(spec) is not None:
        return
    try:
        project.target(project.agent(spec.removeprefix("agents:")))
    except SuiteError:
        raise
    except UsageError as exc:
        if not spec.startswith("report."):
            raise UsageError(f"-r {spec}: {exc}") from None
        reporters = project.registry.classes("reporter").values()
        names = sorted(f"report.{n}" for c in reporters if not c.by_agent for n in (c.name, *c.aliases))
        raise UsageError(
            f"-r {spec}: not a built-in reporter, and {exc}; the built-in reporters are {', '.join(names)}"
        ) from None


def _loop_factory() -> Any:
    """uvloop's event loop where it is installed: ~20% less CPU per case, which decides the
    wall time of highly parallel runs (measured in bench/http_bench.py); else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _print_direct(stream: Path) -> None:
    """Direct-message mode: the agent's answer on stdout (alone: the console is on stderr), as
    safe for a terminal as run mode's."""
    from .._report.console import clean, reader_gone
    from .._report.github_actions import commands_stopped
    from .._report.stream import iter_stream

    try:
        with commands_stopped(os.environ):  # the answer is the agent's text: no workflow command in it acts
            for _, record in iter_stream(stream) if stream.exists() else ():
                if record.get("type") == "result" and record.get("status") != "error":  # no answer: stderr says why
                    output = record.get("output")
                    if not isinstance(output, str):
                        output = json.dumps(output, ensure_ascii=False, indent=2, allow_nan=False)
                    click.echo(clean(output))
    except BrokenPipeError:  # the reader went away (`| head -c0`): quietly, the verdict is still the exit code
        reader_gone(sys.stdout)


def _show_plan(plan: Any, runs: int, saved: Path | None, registry: Any) -> None:
    from .._report.console import clean

    for case, agent in plan.cases():  # read as they are shown: a large suite is never held
        if case.dynamic:
            config = case.simulator
            who = registry.simulator_for(config).label(config) if config is not None else "--simulator"
            steps = " → ".join(c.id + ("" if c.required else "?") for c in case.checkpoints)
            detail = f"dynamic agent={agent.id} simulator={who} checkpoints={steps}"
        else:
            detail = f"standard agent={agent.id} assertions={', '.join(a.type for a in case.assertions) or '-'}"
        click.echo(f"{case.location}  [{clean(case.id)}] {detail}")
        if case.name:
            click.echo(f"    name: {clean(case.name, 100)}")
        for message in case.input:  # the input itself, never the name that titles the case
            role = "" if message.role == "user" else f" ({message.role})"
            click.echo(f"    input{role}: {clean(message.text, 100)}")
    written = f"nothing was run; only {saved} was written" if saved else "nothing was run or written"
    click.echo(f"{len(plan.pairs)} cases x {runs} run(s); {written} (--dry-run)")


def _save_generated(suites: list[Any], path: Path) -> None:
    """Write the cases of generated suites (``agents:``, ``scripts:``) as a suite file for review."""
    from .._core.errors import UsageError

    cases = [case.raw for suite in suites if suite.generated for case in suite.cases]
    if not cases:
        raise UsageError("--save: no generated cases to save (it saves cases from agents: or scripts: inputs)")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        text = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    elif suffix == ".json":
        text = json.dumps({"cases": cases}, ensure_ascii=False, indent=2) + "\n"
    elif suffix in (".yaml", ".yml"):
        import io

        from ruamel.yaml import YAML

        buffer = io.StringIO()
        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.allow_unicode = True
        yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep the id first
        yaml.dump({"cases": cases}, buffer)
        text = buffer.getvalue()
    else:
        raise UsageError(f"--save {path}: unknown extension {path.suffix!r} (use .jsonl, .yaml, .yml or .json)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    click.echo(f"Saved {len(cases)} generated case{'s' * (len(cases) != 1)} to {path}")
