"""``specrun run`` (the default command): run suites against their agents."""

from __future__ import annotations

import gc
import json
import os
import shlex
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click


@click.command("run")
@click.argument("paths", nargs=-1)
@click.option(
    "-i", "--input", "inputs", multiple=True, help="A suite file or folder, agents:ID, scripts:mod.func, or a message."
)
@click.option("-n", "--name", help="The agent under test: an agent id, python:module:function, or a URL.")
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
@click.option("--parallel", type=click.IntRange(min=1), default=None, help="Cases run at once (default 1).")
@click.option(
    "--runs", type=click.IntRange(min=1), default=1, show_default=True, help="Run every case N times (stability)."
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 100, min_open=True),
    help="With --runs: a case passes when this % of its runs pass (more than 0).",
)
@click.option("--run", "run_filter", help="Only cases whose id or name matches this regex.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed case (cancels running ones).")
@click.option("--dry-run", is_flag=True, help="Show the resolved cases; run and write nothing.")
@click.option(
    "--save",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write generated cases to FILE (.jsonl/.yaml/.json).",
)
@click.option("-r", "--reporter", help="A reporter agent (agents:ID) that writes the -o report from the results.")
@click.option("--simulator", help="Default simulator agent id for dynamic cases.")
@click.option("--before", "before_all", help="Global hook run once before all cases (module.Func).")
@click.option("--after", "after_all", help="Global hook run once after all cases (module.Func).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the model response cache.")
@click.option("-v", "--verbose", is_flag=True, help="Show every assertion and the agent's output.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
def command(paths: tuple[str, ...], inputs: tuple[str, ...], **flags: Any) -> None:
    """Run suites: every case against its agent, with a verdict a CI job can trust.

    Exit codes: 0 all passed, 1 a case failed or errored, 2 bad input or usage,
    3 specrun itself failed, 130/143 interrupted.
    """
    import asyncio

    from ..errors import UsageError

    specs = [*paths, *inputs]
    if not specs:
        raise UsageError("nothing to run: give suite files or folders (e.g. specrun suites/), or -i")
    _check_positional(paths)
    from ..outputs import OutputLocks

    with OutputLocks() as locks, asyncio.Runner(loop_factory=_loop_factory()) as loop:
        code = loop.run(_run(specs, flags, locks))
    raise click.exceptions.Exit(code)


async def _run(specs: list[str], flags: dict[str, Any], locks: Any) -> int:
    from ..case_rules import GeneratedLimits
    from ..errors import UsageError
    from ..kinds import SourceContext
    from ..loader import Loader
    from ..model import DEFAULT_TIMEOUT, parse_duration
    from ..plan import build_plan, load_inputs
    from ..plugins import default_plugins
    from ..project import Project
    from ..results import RunInfo
    from ..runner import Runner, RunOptions

    plugins = default_plugins()
    registry = plugins.registry
    first = next((Path(s) for s in specs if os.path.exists(s)), Path.cwd())
    project = Project.discover(first, registry)
    config = project.config
    try:
        timeout = parse_duration(flags["timeout"] or config.get("timeout") or DEFAULT_TIMEOUT)
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    if timeout <= 0:  # specrun.yaml's timeout is checked by its schema
        raise UsageError(f"--timeout: a timeout must be more than 0, not {flags['timeout']!r}")
    options = RunOptions(
        parallel=flags["parallel"] or config.get("parallel") or 1,
        timeout=timeout,
        runs=flags["runs"],
        fail_fast=flags["fail_fast"],
        user=flags["user"],
        team=flags["team"],
        locale=flags["locale"],
        extra_context=_read_ctx(flags["ctx_file"]),
        before_all=flags["before_all"],
        after_all=flags["after_all"],
        connector=flags["connector"],
        simulator=flags["simulator"],
        min_pass_rate=flags["min_pass_rate"],
    )
    models = _models(project, flags)
    runner = Runner(project, plugins, options, models=models)
    allowed = frozenset(a.removeprefix("agents:") for a in (config.get("generated") or {}).get("agents", []))
    limits = GeneratedLimits(allowed, options.timeout, options.min_pass_rate)
    context = SourceContext(Loader(registry, limits), project, runner.services(1), flags["name"])
    _check_reporter(project, flags)
    for output in flags["outputs"]:
        registry.reporter_for(output)  # an unknown extension: before any source or lock runs
    given = [("-o", Path(o)) for o in flags["outputs"]] + ([("--save", flags["save"])] if flags["save"] else [])
    from ..outputs import check_outputs

    # Before any source runs (a generator is an agent too); again once symbolic links and
    # file: inputs have led to the suite files themselves.
    reads = [Path(s) for s in specs if os.path.isfile(s)] + ([flags["ctx_file"]] if flags["ctx_file"] else [])
    check_outputs(given, reads, [Path(s) for s in specs if os.path.isdir(s)])
    try:
        suites = await load_inputs(specs, context, plugins)
    finally:
        if flags["verbose"]:
            from .validate import echo_skipped

            echo_skipped(context.loader.skipped)
    check_outputs(given, [s.path for s in suites], [])
    if flags["save"]:
        _save_generated(suites, flags["save"])
    plan = build_plan(
        suites, project, plugins, flags["name"], flags["run_filter"], flags["connector"], flags["simulator"]
    )
    if not plan.pairs:
        raise UsageError("no cases to run" + (f" match --run {flags['run_filter']!r}" if flags["run_filter"] else ""))
    _check_connector(plan, project, flags["connector"])
    jobs = plan.jobs(options.runs)
    for flag, kind, ref in (("--before", "BeforeAll", options.before_all), ("--after", "AfterAll", options.after_all)):
        if ref:  # a missing global hook is bad input (exit 2), found before anything runs
            from ..case_hooks import load_hook

            try:
                load_hook(kind, ref, runner._hook_dirs(jobs), [agent for _, agent in plan.pairs])
            except UsageError as exc:
                raise UsageError(f"{flag}: {exc}") from None
    if flags["dry_run"]:
        _show_plan(plan, options.runs, flags["save"])
        await project.aclose()
        return 0
    if models is not None and plan.needs_model(registry, config):
        models.preload()

    direct = all(s.path.name == "<message>" for s in suites)
    outputs = list(flags["outputs"])
    if not outputs and not direct:
        outputs = [str(_default_output(first))]
    locks.acquire([("-o" if flags["outputs"] else "the result stream", Path(o)) for o in outputs])
    agent_options = {"agent": flags["reporter"], "call_agent": runner.call_agent, "verbose": flags["verbose"]}
    reporters, stream_path, temporary = _reporters(outputs, registry, agent_options if flags["reporter"] else None)
    from ..console import ConsoleReport

    console = ConsoleReport(verbose=flags["verbose"], quiet=flags["quiet"])
    console.output_paths = outputs
    runner.reporters = reporters
    runner.observers = [console]
    runner.stream_path = stream_path
    info = RunInfo(
        agent_id=", ".join(plan.agent_ids),
        connector=flags["connector"],
        inputs=specs,
        total_cases=len(plan.pairs),
        runs=options.runs,
        parallel=options.parallel,
        timeout=options.timeout,
        user=options.user or config.get("user") or "test-user",
        team=options.team or config.get("team") or "test-team",
        locale=options.locale or config.get("locale") or "en-us",
        simulator=options.simulator,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        project_root=project.root,
    )
    # What is loaded now (modules, suites, plan) lives until exit: out of the collector's sight,
    # the collections a run triggers stay cheap. Young collections every 100,000 allocations, not
    # 700: each one walks the objects of every case in flight, and nearly all of them are freed
    # by reference counting first. Measured on 1,000 http cases at --parallel 200: freeze -12%
    # CPU; GC time in the run from ~50 ms to under 1 ms.
    gc.freeze()
    gc.set_threshold(100_000, 10, 10)
    summary = await runner.run(jobs, info)  # a failed report keeps the stream
    if direct and not flags["outputs"]:
        _print_direct(stream_path)
    if temporary:
        stream_path.unlink(missing_ok=True)
    return runner.exit_code(summary)


def _check_positional(paths: tuple[str, ...]) -> None:
    """Positional arguments are paths or ``source:`` inputs: a stray word (a typo, a message
    without ``-i``) is an error, never one more case sent to the agent."""
    from ..errors import UsageError
    from ..plugins import default_plugins

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
    """``-r`` names a project agent whose target builds, and has an ``-o`` file to write."""
    from ..errors import SuiteError, UsageError

    if not flags["reporter"]:
        return
    if not flags["outputs"]:
        raise UsageError("-r needs -o FILE: the reporter agent's answer is written there")
    try:
        project.target(project.agent(flags["reporter"].removeprefix("agents:")))
    except SuiteError:
        raise
    except UsageError as exc:
        raise UsageError(f"-r {flags['reporter']}: {exc}") from None


def _check_connector(plan: Any, project: Any, connector: str | None) -> None:
    """``-c`` replaces the model of model-backed targets: one of them must be in the run."""
    from ..errors import UsageError

    if connector and not any(project.takes_model(agent) for _, agent in plan.pairs):
        kinds = ", ".join(sorted({f"{a.id} ({a.target.get('type')})" for _, a in plan.pairs}))
        raise UsageError(
            f"-c {connector}: no agent in this run has a model to replace (-c sets the model of"
            f" model-backed targets such as litellm; the agents here: {kinds})"
        )


def _loop_factory() -> Any:
    """uvloop's event loop where it is installed: ~20% less CPU per case, which decides the
    wall time of highly parallel runs (measured in bench/http_bench.py); else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _models(project: Any, flags: dict[str, Any]) -> Any:
    try:
        from ..llm import ModelClient
    except ImportError:
        return None
    return ModelClient.from_config(project.config, project.root, no_cache=flags["no_cache"])


def _read_ctx(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    from ..documents import DocumentError, load_mapping
    from ..errors import SuiteError, UsageError

    try:
        data, _ = load_mapping(path, str(path))
    except DocumentError as exc:
        raise SuiteError([exc.problem]) from None
    if not isinstance(data, dict):
        raise UsageError(f"--ctx {path}: expected a mapping")
    return data


def _default_output(first: Path) -> Path:
    folder = first if first.is_dir() else first.parent
    return folder / f"output-{datetime.now().strftime('%Y%m%d%H%M%S')}.jsonl"


def _reporters(outputs: list[str], registry: Any, agent: dict[str, Any] | None) -> tuple[list[Any], Path, bool]:
    """Reporters for the ``-o`` files; the JSONL stream is one of them or a temporary file.

    With ``-r`` (``agent``), every ``-o`` file but a ``.jsonl`` is written by the reporter agent.
    """
    classes = [(Path(o), registry.reporter_for(o)) for o in outputs]
    if agent is not None:
        classes = [(p, cls if cls.name == "jsonl" else registry.get("reporter", "agent")) for p, cls in classes]
    stream = next((p for p, cls in classes if cls.name == "jsonl"), None)
    temporary = stream is None
    if stream is None:
        folder = classes[0][0].parent if classes else Path(tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        stream = Path(tempfile.mkstemp(prefix=".specrun-stream-", suffix=".jsonl", dir=folder)[1])
        classes.insert(0, (stream, registry.get("reporter", "jsonl")))
    else:
        classes.sort(key=lambda pc: pc[0] != stream)
    reporters = [cls(path, agent if cls.name == "agent" else None) for path, cls in classes]
    return reporters, stream, temporary


def _print_direct(stream: Path) -> None:
    """Direct-message mode: the agent's answer on stdout, as safe for a terminal as run mode's."""
    from ..console import clean
    from ..stability import iter_stream

    for _, record in iter_stream(stream) if stream.exists() else ():
        if record.get("type") == "result":
            output = record.get("output")
            click.echo(
                clean(
                    output
                    if isinstance(output, str)
                    else json.dumps(output, ensure_ascii=False, indent=2, allow_nan=False)
                )
            )


def _show_plan(plan: Any, runs: int, saved: Path | None) -> None:
    from ..console import clean

    for case, agent in plan.pairs:
        if case.dynamic:
            simulator = case.simulator or {}
            who = simulator.get("use") or simulator.get("type", "--simulator")
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
    from ..errors import UsageError

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
