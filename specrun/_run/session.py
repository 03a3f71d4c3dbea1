"""One run, for the CLI and for pytest: a typed request in, a typed summary out.

``RunSession(request)`` finds the project and builds the run's options, model client and
runner; then ``load`` reads the inputs, ``plan`` pairs cases with agents and checks the global
hooks (every mistake found before anything runs), and ``run`` runs the plan with the console
and the ``-o`` reporters as plugins of the run (see :mod:`specrun._run.lifecycle`). The pytest
plugin builds one session per project and runs its cases one at a time with ``run_case``.
What belongs to a command line (click, flag checks, printing, output locks) stays in
:mod:`specrun.cli.run`.
"""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.data import DEFAULT_TIMEOUT, ENVIRONMENT_DEFAULTS, Agent, Case, Suite, parse_duration
from .._core.errors import UsageError
from .._core.kinds import Job, Reporter, SourceContext
from .._core.results import Result, RunInfo, utc_timestamp
from .._core.summary import Summary
from .._load.case_rules import GeneratedLimits
from .._load.loader import Loader
from .._project.plugin_manager import Plugins, default_plugins
from .._project.project import Project
from .._report.github_actions import github_actions
from .._report.outputs import check_outputs, default_stream
from .._report.stream import ResultStream
from .plan import Jobs, ModelUse, Plan, Planner, load_inputs
from .runner import Runner
from .selection import CaseFilter
from .settings import INTERRUPT_GRACE, RunOptions
from .shard import Shard
from .shard import select as select_shard

if TYPE_CHECKING:
    from .replay import Replay


@dataclass
class RunRequest:
    """What to run and how, as the user said it (``specrun run``'s flags, typed). ``options`` is
    the run's one settings object: the CLI fills it from the flags, the session completes it
    from ``specrun.yaml`` (the fields below that say "else the project's"), and the runner, the
    executors and their workers read it as it is."""

    inputs: list[str]
    options: RunOptions = field(default_factory=RunOptions)
    # Said by the user, completed from the project: they become fields of ``options``.
    timeout: str | None = None  # as given (30s, 2m); else the project's, else the default
    parallel: int | None = None  # else the project's, else as many as the executor says
    executor: str | None = None  # --executor: where cases execute; else specrun.yaml's executor:, else local
    context_file: Path | None = None  # --ctx: merged into every case's context
    # Which cases.
    agent: str | None = None  # -n: the agent under test
    agents: list[str] = field(default_factory=list)  # -n given more than once: every case runs against each
    run_filter: str | None = None  # --run: a regex on case ids and names
    tags: str | None = None  # -m: an expression on case tags (pytest's -m grammar)
    keywords: str | None = None  # -k: an expression on substrings of case ids and names
    shard: str | None = None  # --shard I/N: run only that part of the selected cases
    last_failed: bool = False  # --lf: only the cases that failed or errored in their last run
    failed_first: bool = False  # --ff: those cases first, then the others
    # What the run writes.
    outputs: list[str] = field(default_factory=list)  # -o, in order
    reporter_agent: str | None = None  # -r: the agent that writes the -o reports
    saving: Path | None = None  # --save: the file that generated cases go to (not an input)
    verbose: bool = False
    history: bool = True  # --no-history: do not record this run in the project's run history
    argv: list[str] = field(default_factory=list)  # the command line, as the run history records it


class RunSummary(Summary):
    """How a run ended: its summary (the stream's summary line, typed: see ``Summary``), its
    exit code, and where its result stream is."""

    def __init__(self, record: Mapping[str, Any], exit_code: int, stream: Path):
        super().__init__(record)
        self.exit_code, self.stream = exit_code, stream

    @property
    def record(self) -> dict[str, Any]:
        """The stream's summary line."""
        return dict(self)

    def to_dict(self) -> dict[str, Any]:
        """The summary as the stream and the reports have it."""
        return dict(self)


class RunSession:
    """One run (or, for pytest, one project's cases); see the module docstring."""

    def __init__(self, request: RunRequest, plugins: Plugins | None = None, project: Project | None = None):
        self.request = request
        self.plugins = plugins or default_plugins()
        self.first = next((Path(s) for s in request.inputs if os.path.exists(s)), Path.cwd())
        self.project = project or Project.discover(self.first, self.plugins.registry)
        self.options = _settle(request, self.project.config)
        self.selection = CaseFilter(request.run_filter, request.tags, request.keywords)  # bad ones: before loading
        self.models = model_client(self.project, self.options.no_cache)
        executor = self.plugins.registry.get("executor", self.options.executor)
        if self.options.update_snapshots and executor.copies_project:  # said before anything runs
            raise UsageError(
                f"--update-snapshots cannot run on the {executor.name} executor: its cases run in a copy of the"
                " project, so approved snapshots would never reach your files; approve with the local executor"
                " (--executor local --update-snapshots)"
            )
        self.runner = Runner(self.project, self.plugins, self.options, models=self.models)
        self.suites: list[Suite] = []
        self.skipped: list[Any] = []  # files a folder search passed over, with why
        self.outputs: list[str] = []  # the files the run writes, known once planned
        self._plan: Plan | None = None
        self._temporary: Path | None = None
        self.notes: list[str] = []  # what the planning chose to say (--lf: which cases run; an unknown -m tag)
        self.shard = Shard.parse(request.shard) if request.shard else None  # a bad value: before anything loads
        select = self.selection.matches if self.selection else None
        named = request.agents or request.agent
        # planned as the loader reads each suite file (one read for both), finished by plan()
        options = self.options
        self._planner = Planner(self.project, self.plugins, named, select, options.connector, options.simulator)
        self._shard_info: dict[str, Any] | None = None  # what the result stream records of the shard
        self.replay: Replay | None = None  # `specrun rejudge` (see ``rejudging``)

    def rejudging(self, spec: str) -> Replay:
        """Make this run a rejudge of the recorded run ``spec`` (a stream file or a history run
        id; see :mod:`specrun._run.replay`): its runs as many as the recorded run's."""
        from .replay import Replay, read_recorded

        recorded = read_recorded(spec, self.project.root, self.project.config)
        self.replay = self.runner.replay = Replay(recorded, self.project.root)
        self.options.runs = self.runner.aggregator.runs = recorded.runs
        return self.replay

    @property
    def direct(self) -> bool:
        """Every input is a message (``-i "hello"``): the agent's answer is the output."""
        return bool(self.suites) and all(s.path.name == "<message>" for s in self.suites)

    async def load(self) -> list[Suite]:
        """Read and validate every input (sources run here: a generator is an agent too),
        having checked first that no output would overwrite one."""
        req, registry = self.request, self.plugins.registry
        for output in req.outputs:
            if not req.reporter_agent or output.lower().endswith(".jsonl"):  # -r writes any other -o file
                registry.reporter_for(output)  # an unknown extension: before any source or lock runs
        given = [("-o", Path(o)) for o in req.outputs] + ([("--save", req.saving)] if req.saving else [])
        # Before any source runs; again once symbolic links and file: inputs have led to the suite files.
        reads = [Path(s) for s in req.inputs if os.path.isfile(s)] + ([req.context_file] if req.context_file else [])
        check_outputs(given, reads, [Path(s) for s in req.inputs if os.path.isdir(s)])
        allowed = frozenset(
            a.removeprefix("agents:") for a in (self.project.config.get("generated") or {}).get("agents", [])
        )
        limits = GeneratedLimits(
            allowed,
            self.options.timeout,
            self.options.min_pass_rate,
            case_limits=self.project.config.get("limits") or {},
        )
        loader = Loader(registry, limits, visit=self._planner.visit, config=self.project.config)
        context = SourceContext(loader, self.project.root, self.runner.services(1), req.agent)
        try:
            self.suites = await load_inputs(req.inputs, context, self.plugins)
        finally:
            self.skipped = loader.skipped
        check_outputs(given, [s.path for s in self.suites], [])
        return self.suites

    def plan(self) -> Plan:
        """Pair the loaded cases with their agents; a bad ``-c`` or a missing global hook is
        bad input, found before anything runs."""
        req = self.request
        plan = self._planner.plan(self.suites)
        if self.options.executor != "local":  # its workers listen for their own cases' spans
            self.project.check_traces_elsewhere(plan.pairs.used_agents(), self.options.executor)
        unknown = self.selection.unknown_tags(self._planner.tags)
        if not plan.pairs:
            matching = f" match {self.selection.describe()}" if self.selection else ""
            raise UsageError(f"no cases to run{matching}" + (f" ({unknown})" if unknown else ""))
        if unknown:
            self.notes.append(f"specrun: warning: {unknown}")
        if self.replay is not None:
            from .._core.identity import suite_key

            self.replay.check_covers({suite_key(s.path, self.project.root) for s in plan.suites}, plan.agent_ids)
        if req.last_failed or req.failed_first:
            from .rerun import rerun_failed

            plan.pairs, note = rerun_failed(plan.pairs, self.project, last_failed=req.last_failed)
            self.notes.append(note)
        if self.shard is not None:  # an empty shard is a run of nothing: its stream still joins the merge
            selected = len(plan.pairs)
            plan.pairs, partition = select_shard(plan.pairs, self.shard, self.project.root, self._durations)
            self._shard_info = partition.info(selected)
        agents = plan.pairs.used_agents()
        if self.options.connector and not any(self.project.takes_model(agent) for agent in agents):
            kinds = ", ".join(sorted({f"{a.id} ({a.target.get('type')})" for a in agents}))
            raise UsageError(
                f"-c {self.options.connector}: no agent in this run has a model to replace (-c sets the model of"
                f" model-backed targets such as litellm; the agents here: {kinds})"
            )
        jobs = plan.jobs(1)
        hooks = (("--before", "BeforeAll", self.options.before_all), ("--after", "AfterAll", self.options.after_all))
        for flag, kind, ref in hooks:
            if ref:
                from .case_hooks import load_hook

                try:
                    load_hook(kind, ref, self.runner.hook_dirs(jobs), agents)
                except UsageError as exc:
                    raise UsageError(f"{flag}: {exc}") from None
        self._plan = plan
        self.outputs = list(req.outputs)
        if not self.outputs and not self.direct:  # direct mode prints the answer instead
            self.outputs = [str(default_stream(self.project.root))]
        return plan

    def model_uses(self) -> list[ModelUse]:
        """The models the planned run may call, with their params (``ModelClient.preload``).
        ``-c`` replaces the model of the model-backed targets, called with the targets' params:
        its model as the project's ``connectors`` map it, so that a connector on an endpoint
        the direct route reaches does not import litellm (seconds) for nothing."""
        assert self._plan is not None, "plan() first"
        uses = self._plan.model_uses(self.plugins.registry)
        if self.options.connector:  # a target's use has the target's params; a judge's, None
            model = self.project.connector_model(self.options.connector)
            uses += [(model, params) for _, params in uses if params is not None]
        return uses

    async def run(self, console: object) -> RunSummary:
        """Run the plan, with ``console``, the result stream and the ``-o`` reporters as the
        run's plugins. A consumer that failed raises ``ReportError`` (the stream is kept)."""
        assert self._plan is not None, "plan() first"
        plan, req, config = self._plan, self.request, self.project.config
        if self.models is not None and plan.needs_model(self.plugins.registry, config):
            self.models.preload(self.model_uses())
        reporters, stream = self._reporters(self.outputs)
        jobs = plan.jobs(self.options.runs)
        if self.replay is not None:
            jobs.keep = self.replay.keep
        if self.options.executor == "local":  # elsewhere, each worker listens for its own cases' spans
            await self.project.start_traces(plan.pairs.used_agents())  # a busy receiver port: before any case
        await self.runner.start(jobs)  # connected before the header, which shows how many run at once
        recorder = self._recorder(plan, jobs, stream.path)
        environment = self.runner.environment()
        info = RunInfo(
            agent_id=", ".join(plan.agent_ids),
            agents=plan.agent_ids,
            connector=self.options.connector,
            inputs=req.inputs,
            total_cases=len(plan.pairs),
            runs=self.options.runs,
            parallel=self.options.parallel,
            timeout=self.options.timeout,
            user=environment["user"],
            team=environment["team"],
            locale=environment["locale"],
            simulator=self.options.simulator or _simulators(plan),
            started_at=utc_timestamp(),
            agent_path=_agent_path(plan),
            mode="dynamic" if plan.all_dynamic else "standard",
            project_root=self.project.root,
            shard=self._shard_info,
            rejudge=self.replay.recorded.source if self.replay is not None else None,
        )
        # What is loaded now (modules, suites, plan) lives until exit: out of the collector's sight,
        # the collections a run triggers stay cheap. Young collections every 100,000 allocations, not
        # 700: each one walks the objects of every case in flight, and nearly all of them are freed
        # by reference counting first. Measured on 1,000 http cases at --parallel 200: freeze -12%
        # CPU; GC time in the run from ~50 ms to under 1 ms.
        gc.freeze()
        gc.set_threshold(100_000, 10, 10)
        ci = github_actions(os.environ)  # first in the list: its trylast run_finished comes after the console's
        run_plugins = [*ci, console, stream, *reporters, *([recorder] if recorder else []), *self._pairwise(plan)]
        record = await self.runner.run(jobs, info, run_plugins, stream)
        return RunSummary(record, self.runner.exit_code(record), stream.path)

    def _pairwise(self, plan: Plan) -> list[object]:
        """The pairwise judge, when the run tests several agents and a suite asks for one."""
        if len(plan.agent_ids) < 2 or not any(suite.pairwise for suite in plan.suites):
            return []
        from .._judges.pairwise import PairwiseJudge

        return [PairwiseJudge(self.models)]

    def _durations(self, case_ids: list[str]) -> dict[str, float]:
        """Past mean durations (ms) from the run history, which balance ``--shard``; none with
        ``--no-history``, or when there is no usable history."""
        if not self.request.history:
            return {}
        from .._history.store import History, HistoryError

        try:
            history = History.open(self.project.root, self.project.config)
        except HistoryError:
            return {}
        try:
            return history.durations(case_ids)
        except HistoryError:
            return {}
        finally:
            history.close()

    def _recorder(self, plan: Plan, jobs: Jobs, stream: Path) -> object | None:
        """The run's recorder into the project's run history (None when it is off), with the
        jobs of cases flaky in that history marked; a history that cannot be used is bad input."""
        if not self.request.history:
            return None
        from .._history.store import History, settings  # sqlite3: not for --no-history

        if settings(self.project.root, self.project.config).path is None:
            return None
        from .._history.recording import HistoryRecorder, mark_flaky
        from .._history.revision import agent_revisions

        history = History.open(self.project.root, self.project.config, create=True)
        own = [suite.path for suite in plan.suites] + [stream] + [Path(o) for o in self.outputs]
        revisions = agent_revisions(plan.pairs.used_agents(), self.options.connector, own)  # once per agent
        mark_flaky(history, jobs, self.project.root, revisions)
        if self.shard is not None:  # a part of a run is not recorded: every shard then balances by the same durations
            history.close()
            return None
        kept = None if self._temporary is not None else stream
        return HistoryRecorder(history, plan, self.project.root, self.request.argv, kept, revisions)

    def _reporters(self, outputs: list[str]) -> tuple[list[Reporter], ResultStream]:
        """The ``-o`` reporters and the result stream: at the ``.jsonl`` output, else in a
        temporary file. With ``-r``, every ``-o`` file but a ``.jsonl`` is written by the
        reporter it names (``report.html``) or by the reporter agent."""
        registry = self.plugins.registry
        chosen = self.request.reporter_agent
        writer = (registry.named_reporter(chosen) or registry.declaring("reporter", "by_agent")) if chosen else None
        classes = [
            (Path(o), registry.reporter_for(o) if writer is None or o.lower().endswith(".jsonl") else writer)
            for o in outputs
        ]
        path = next((p for p, cls in classes if cls is ResultStream), None)
        if path is None:
            folder = classes[0][0].parent if classes else Path(tempfile.gettempdir())
            folder.mkdir(parents=True, exist_ok=True)
            path = self._temporary = Path(tempfile.mkstemp(prefix=".specrun-stream-", suffix=".jsonl", dir=folder)[1])
        agent: dict[str, Any] | None = None
        if writer is not None and writer.by_agent:
            agent = {"agent": chosen, "call_agent": self.runner.call_agent, "verbose": self.request.verbose}
        reporters = [cls(p, agent if cls.by_agent else None) for p, cls in classes if p != path]
        return reporters, ResultStream(path)

    def discard_stream(self) -> None:
        """Remove the result stream if it was a temporary file (kept when a report failed:
        the error names it)."""
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)

    async def run_case(self, case: Case, agent: Agent) -> Result:
        """Run one case once and return its result, reported to no one (pytest's items)."""
        return await self.runner.run_one(Job(case, agent))

    async def aclose(self) -> None:
        """Close what the session opened: targets, the model client."""
        await self.project.aclose()
        if self.models is not None:
            await self.models.aclose()


def _simulators(plan: Plan) -> str | None:
    """The simulator agents the plan's dynamic cases name (for the header), if any."""
    return ", ".join(sorted(plan.simulators)) or None


def _agent_path(plan: Plan) -> str | None:
    """The folder of the agent under test when one agent file serves every case (V2's ``agent_path``)."""
    folders = {str(agent.base_dir) if agent.path is not None else None for agent in plan.pairs.used_agents()}
    return folders.pop() if len(folders) == 1 else None


def _settle(request: RunRequest, config: dict[str, Any]) -> RunOptions:
    """The request's options, completed from ``specrun.yaml`` (``config``) where the user said nothing."""
    try:
        timeout = parse_duration(request.timeout or config.get("timeout") or DEFAULT_TIMEOUT)
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    if timeout <= 0:  # specrun.yaml's timeout is checked by its schema
        raise UsageError(f"--timeout: a timeout must be more than 0, not {request.timeout!r}")
    context = _read_context(request.context_file)
    executor, executor_options = _executor(request, config)
    return replace(
        request.options,
        parallel=request.parallel or config.get("parallel") or 0,  # 0: as many as the executor says
        timeout=timeout,
        interrupt_grace=parse_duration(config.get("interrupt_grace") or INTERRUPT_GRACE),  # checked by the schema
        environment=_environment_of(context, request.context_file),
        extra_context=context,
        executor=executor,
        executor_options=executor_options,
    )


def _executor(request: RunRequest, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The executor's name and options: ``--executor``, else ``executor:`` in specrun.yaml (a
    name, or a mapping with ``type`` and the executor's options), else ``local``."""
    configured = config.get("executor") or "local"
    if isinstance(configured, str):
        configured = {"type": configured}
    name = request.executor or configured["type"]
    options = {k: v for k, v in configured.items() if k != "type"} if name == configured["type"] else {}
    return name, options


def _read_context(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    from .._core.errors import SuiteError
    from .._load.documents import DocumentError, load_mapping

    try:
        data, _ = load_mapping(path, str(path))
    except DocumentError as exc:
        raise SuiteError([exc.problem]) from None
    if not isinstance(data, dict):
        raise UsageError(f"--ctx {path}: expected a mapping")
    return data


def _environment_of(context: dict[str, Any], path: Path | None) -> dict[str, str]:
    """Take the keys of ``--ctx`` named like the environment's fields (``user``, ``client_ip``, ...)
    out of it: they set those fields for every case, so that ``ctx.user`` and
    ``ctx.to_dict()["user"]`` agree. Keys specrun sets per case are refused."""
    reserved = [key for key in ("case_id", "run", "metadata", "options") if key in context]
    if reserved:
        raise UsageError(
            f"--ctx {path}: {', '.join(reserved)} cannot be set for every case"
            " (case_id and run are specrun's; metadata and options are each case's)"
        )
    environment = {key: context.pop(key) for key in ENVIRONMENT_DEFAULTS if key in context}
    for key, value in environment.items():
        if not isinstance(value, str) or not value:
            raise UsageError(f"--ctx {path}: {key} must be a non-empty string, not {value!r}")
    return environment


def model_client(project: Project, no_cache: bool) -> Any:
    """The run's model client (None without litellm's extra); an executor's worker makes its own."""
    try:
        from .._models.client import ModelClient
    except ImportError:
        return None
    return ModelClient.from_config(project.config, project.root, no_cache=no_cache)
