"""The kinds of things a plugin contributes: assertion types, targets, sources, simulators, reporters.

A plugin subclasses one of these, sets ``name`` and ``params_schema`` (the JSON Schema
``properties`` of its own parameters, plus ``required``), and registers the class from the
matching hook in :mod:`specrun._core.hookspecs`.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .._project.imports import ref_problem
from . import bounds
from .data import Agent, Assertion, Case, Context, Message, Response, Suite, Usage
from .redact import expand_env
from .results import Result, RunInfo, Verdict  # Verdict: what assertions return, here for them
from .services import Services
from .target_checks import TargetChecks


class Plugin:
    """Common to every kind: a unique ``name`` and the JSON Schema of its parameters."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    params_schema: ClassVar[dict[str, Any]] = {"properties": {}}
    needs_model: ClassVar[bool] = False  # True when it calls a model: the run then preloads litellm
    label_params: ClassVar[tuple[str, ...]] = ()  # parameters naming what it runs (a script, an agent)

    @classmethod
    def label(cls, params: Mapping[str, Any]) -> str:
        """How messages name one configured use: the name, then the first ``label_params``
        value given (``script checks.py:total``, ``agent reviewer``)."""
        given = next((params[p] for p in cls.label_params if isinstance(params.get(p), str)), None)
        return f"{cls.name} {given}" if given else cls.name


# -- assertions -------------------------------------------------------------------------------


@dataclass
class Check:
    """What an assertion sees: the response, the case, the context and the run's services."""

    response: Response
    case: Case
    context: Context
    services: Services | None = None  # model calls, project agents and config; None outside a run
    messages: list[Message] = field(default_factory=list)
    target: str | None = None  # the type of the target that answered (python, http...), for messages
    # A dynamic case's checkpoint: the latest answer carrying the tool calls of every turn so far
    # (the conversation judges read them all); None: ``response`` is the whole story.
    conversation: Response | None = None


class AssertionType(Plugin):
    """An assertion type. ``evaluate`` returns a ``Verdict`` or raises ``EvaluationError``.

    ``problems`` finds mistakes that a schema cannot (a bad regex) before anything runs;
    ``data_only`` is False for types that run code or read files, which generated cases may not use;
    ``agent_params`` names the parameters that name a project agent the type calls (``use``):
    generated cases may name only the agents ``specrun.yaml`` allows there;
    ``ref_params`` names the parameters that name Python code (``module.func``, ``module:func``,
    ``file.py:func``, resolved next to the suite): each is checked to exist before anything runs;
    ``expected_param``, set on one installed type, makes it what a case's bare ``expected``
    means: the loader adds ``{type: <name>, <expected_param>: <expected>}``;
    ``validator_param``, set on one installed type, makes it what ``Test.assert_agent`` runs:
    ``{<validator_param>: "agents:<id>", options: ..., threshold: ...}`` (no validator param:
    the type's built-in validator); ``meaning_param``, set on one installed type, makes it what
    ``specrun.testing.assert_similar`` runs: ``{<meaning_param>: expected, threshold: ..., model:
    ...}``; ``state_param``: see ``Target.success_states``; ``config_defaults`` maps a parameter
    to the ``specrun.yaml`` key that is its default (``{"model": "embedding_model"}``): an
    assertion that leaves it out is handed to ``problems`` with the project's value in its
    place, so that it is checked as it will run.
    """

    data_only: ClassVar[bool] = True
    agent_params: ClassVar[tuple[str, ...]] = ()
    ref_params: ClassVar[tuple[str, ...]] = ()
    expected_param: ClassVar[str | None] = None
    validator_param: ClassVar[str | None] = None
    meaning_param: ClassVar[str | None] = None
    state_param: ClassVar[str | None] = None
    config_defaults: ClassVar[Mapping[str, str]] = {}

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        """Yield ``(field, message)`` for each mistake in the assertion's parameters.

        This one checks that each ``ref_params`` reference given can be found from ``base_dir``
        (without importing it); an override yields from it too.
        """
        for param in self.ref_params:
            if isinstance(ref := assertion.params.get(param), str) and (problem := ref_problem(ref, [base_dir])):
                yield param, problem

    @classmethod
    def uses_model(cls, assertion: Assertion, config: dict[str, Any]) -> bool:
        """Whether this assertion will call a model, as far as its parameters and the project
        config (``specrun.yaml``) tell before the run: the run preloads litellm when one will."""
        return cls.needs_model

    @classmethod
    def reads_expected(cls, assertion: Assertion) -> bool:
        """Whether this assertion checks the case's ``expected`` (``match`` without its own, ``script``):
        a case whose ``expected`` no assertion reads is rejected, never silently unchecked."""
        return False

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        raise NotImplementedError


# -- targets ----------------------------------------------------------------------------------


class Session:
    """One conversation with the agent under test (one per case and run).

    ``send`` receives the whole conversation so far, ending with the newest user message; a
    stateless session resends it, a stateful one (a process) sends only what it has not seen.
    """

    async def send(self, messages: list[Message]) -> Response:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what the session holds (a process, a connection)."""


class Target(TargetChecks, Plugin):
    """A kind of agent under test. Built once per run from its config mapping.

    Stateless targets implement ``respond``; stateful ones override ``session``. In the config
    keys listed in ``env_fields``, ``${NAME}`` is replaced by environment variable ``NAME``,
    whose value is then masked in every output (``specrun._core.redact``). ``command_param``, set on
    one installed target, makes it the one that runs a CLI agent given as a command (the Python
    test API's ``Test("demo.py")``): its config is then ``{<command_param>: argv}`` plus
    ``prompt``, ``read_timeout`` and ``env``, and its sessions hold the started ``process``.
    ``rate_limited`` False says its calls never wait in specrun's rate limiters (a Python
    function's do not): an answer that comes at once is then taken without arming a timer.
    ``reply_limit`` is the bytes one reply read from the agent may take (64 MiB, the bound of
    every reply from outside the run); past it the call fails with ``over_bound``'s words.
    """

    env_fields: ClassVar[tuple[str, ...]] = ()
    command_param: ClassVar[str | None] = None
    trace_receiver: ClassVar[str | None] = "127.0.0.1:4318"  # traces: otel: where its spans go (docs/plugins.md)
    # False when its calls never queue in one of specrun's rate limiters (which pause the case
    # timeout while a call queues): the engine may then start a call before arming its timer
    rate_limited: ClassVar[bool] = True
    reply_limit: ClassVar[int] = bounds.REPLY_LIMIT
    adapters: tuple[type[Adapter], ...] = ()  # the installed adapters, by priority: set by the engine

    def __init__(self, config: dict[str, Any], base_dir: Path):
        self.unset_env: list[tuple[str, str]] = []
        self.config = {k: expand_env(v, k, self.unset_env) if k in self.env_fields else v for k, v in config.items()}
        self.base_dir = base_dir

    @classmethod
    def from_spec(cls, spec: str) -> dict[str, Any] | None:
        """The config (without ``type``) of an agent given as the string ``spec`` (``-n``, an
        agent file's ``target``) when this target claims it (``python:mod:func``, a URL), else None."""
        return None

    def problems(self) -> Iterable[tuple[str, str]]:
        """Yield ``(field, message)`` for mistakes found before the run (a missing module).

        Overrides yield from this one: it reports unset ``${NAME}`` variables.
        """
        for where, name in self.unset_env:
            yield where, f"environment variable {name} is not set"

    async def respond(self, messages: list[Message], context: Context) -> Response:
        raise NotImplementedError

    def session(self, context: Context) -> Session:
        return _StatelessSession(self, context)

    @classmethod
    def over_bound(cls, seen: int, how: str = "read") -> str:
        """Why a reply past ``reply_limit`` failed: ``a reply over the 64 MiB bound (N bytes read)``."""
        return bounds.over_bound(seen, how, cls.reply_limit)

    def adapter_for(self, agent: Any) -> Adapter | None:
        """The installed adapter that runs ``agent`` (a framework's agent object), or None: the
        first, by ascending ``priority``, whose framework is imported and that ``claims`` it."""
        for cls in self.adapters:
            if cls.imported() and cls.claims(agent):
                return cls()
        return None

    def unwrap(self, value: Any) -> Response:
        """What the agent returned as a ``Response``: a framework's result object (pydantic-ai's
        run result, a LangGraph state, an OpenAI Agents run result...) read by its adapter, else
        ``Response.of(value)``."""
        if value is not None and not isinstance(value, str | Response):
            for cls in self.adapters:
                if cls.imported() and (response := cls().unwrap(value)) is not None:
                    return response
        return Response.of(value)

    async def aclose(self) -> None:
        """Release what the target holds for the run (a connection pool)."""


class _StatelessSession(Session):
    def __init__(self, target: Target, context: Context):
        self.target = target
        self.context = context

    def send(self, messages: list[Message]) -> Coroutine[Any, Any, Response]:
        # the target's coroutine itself, awaited by the caller: no coroutine of its own per case
        return self.target.respond(messages, self.context)


# -- adapters ---------------------------------------------------------------------------------


class Adapter(Plugin):
    """Runs an agent built on a framework (pydantic-ai, LangGraph, the OpenAI Agents SDK...) and
    reads what it did from the framework's own objects: the final text, every tool call (name,
    arguments, result, id, status, step, turn) and token usage.

    A ``python`` target that names an object, not a function, asks the adapters for it
    (``Target.adapter_for``); one whose function returns a framework's result object has it read
    by ``unwrap``. ``modules`` names the framework's top-level modules: an adapter is asked only
    when one of them is imported already (the object came from it), so no framework is imported
    for nothing and each stays an optional extra.
    """

    modules: ClassVar[tuple[str, ...]] = ()
    priority: ClassVar[int] = 100

    @classmethod
    def imported(cls) -> bool:
        """Whether the framework is imported in this process (``modules`` in ``sys.modules``)."""
        return any(m in sys.modules for m in cls.modules)

    @classmethod
    def claims(cls, agent: Any) -> bool:
        """True when this adapter runs ``agent`` (a framework agent object)."""
        return False

    def session(self, agent: Any, context: Context) -> Session:
        """One conversation with ``agent`` (per case and run). Its ``send`` gets the whole
        conversation so far and returns a ``Response`` whose ``tool_calls`` are the calls of this
        turn; a session may keep the framework's own history (tool calls and returns included),
        so that each simulated turn continues the framework's conversation. Cancelling the task
        (the case timeout) must stop the agent."""
        raise NotImplementedError

    def unwrap(self, value: Any) -> Response | None:
        """``value`` (what a function returned) as a ``Response`` when it is this framework's
        result object, else None."""
        return None


# -- sources ----------------------------------------------------------------------------------


class CaseLoader(Protocol):
    """What a source may ask of the loader: suites from files, or from case data it made."""

    def load(self, paths: Iterable[Path]) -> list[Suite]:
        """The suites in ``paths`` (files or folders), validated; a ``SuiteError`` lists every mistake."""
        ...

    def load_data(self, cases: list[Any], origin: str, base_dir: Path, generated: bool = True) -> Suite:
        """One suite from case mappings that a source made (``origin`` names it in messages).
        ``generated`` (the default) makes them data only, as model-made cases must be (no hooks,
        scripts or file reads); ``False`` for cases a person wrote (a direct message)."""
        ...


@dataclass
class SourceContext:
    """What a source may use: the loader (validates case data), the project root, model services
    and the agent a generator writes cases for."""

    loader: CaseLoader
    root: Path
    services: Services | None = None
    target_agent: str | None = None


class Source(Plugin):
    """Where cases come from.

    ``-i NAME:spec`` goes to the source called ``NAME``; a spec with no known prefix goes to
    the first source (by ascending ``priority``) whose ``claims(spec)`` is true. ``load``
    returns suites, validated through ``context.loader`` (``load_data(..., generated=True)``
    for model-made cases, which are data only).
    """

    priority: ClassVar[int] = 100

    @classmethod
    def claims(cls, spec: str) -> bool:
        """True when this source takes a spec that has no ``name:`` prefix."""
        return False

    async def load(self, spec: str, context: SourceContext) -> list[Suite]:
        raise NotImplementedError


# -- simulators -------------------------------------------------------------------------------


@dataclass
class SimulatorTurn:
    """What a simulated user says next."""

    message: str
    goal_achieved: bool = False
    reasoning: str | None = None
    usage: Usage | None = None  # tokens and cost the simulator spent on this turn


@dataclass
class SimulatorState:
    """What a simulator knows when asked for the next user message."""

    case: Case
    conversation: list[Message]
    turn: int
    max_turns: int
    reached: list[str]
    pending: list[str]
    context: Context
    services: Services | None = None


class Simulator(Plugin):
    """A simulated user for dynamic cases; built once per case from the case's ``simulator``.

    As for assertion types, ``data_only`` is False for simulators that run code or read files
    (generated cases may not use them), and ``agent_params`` names the parameters that name a
    project agent it calls (generated cases may name only the agents ``specrun.yaml`` allows).
    ``shorthand``, set on one installed simulator, names the parameter that makes a config
    without ``type`` this simulator's (``{use: id}``), and that ``--simulator ID`` fills.
    """

    data_only: ClassVar[bool] = True
    agent_params: ClassVar[tuple[str, ...]] = ()
    shorthand: ClassVar[str | None] = None

    def __init__(self, config: dict[str, Any], base_dir: Path):
        self.config = config
        self.base_dir = base_dir

    async def next_turn(self, state: SimulatorState) -> SimulatorTurn:
        raise NotImplementedError


# -- reporters --------------------------------------------------------------------------------


class Reporter(Plugin):
    """Writes results somewhere. ``extensions`` pick it from the ``-o`` file name.

    A reporter is a plugin of one run: registered for the run, it implements the lifecycle
    hooks of :mod:`specrun._core.hookspecs` by name (no ``@hookimpl`` needed), taking any subset of
    their arguments. ``run_started`` and ``case_finished`` are called as the run goes (stream
    if you can); ``run_finished`` gets the summary and the path of the JSONL result stream,
    which a whole-file reporter reads back so that no result need be kept in memory.

    ``by_agent`` marks the reporter that writes every ``-o`` file but the stream when ``-r
    agents:ID`` is given (its options then hold ``agent``, ``call_agent``, ``verbose``).
    ``-r report.NAME`` picks a reporter by its ``name`` or one of its ``aliases``.
    """

    extensions: ClassVar[tuple[str, ...]] = ()
    aliases: ClassVar[tuple[str, ...]] = ()
    by_agent: ClassVar[bool] = False

    def __init__(self, path: Path, options: dict[str, Any] | None = None):
        self.path = path
        self.options = options or {}

    def run_started(self, info: RunInfo) -> None:
        """The run begins."""

    def case_finished(self, result: Result) -> None:
        """One result is final."""

    def run_finished(self, summary: dict[str, Any], stream: Path) -> Any:
        """The run ended (``summary['interrupted']`` when cut short). May be ``async``."""


# -- executors --------------------------------------------------------------------------------


@dataclass
class Job:
    """One case to run once, against one agent."""

    case: Case
    agent: Agent
    run: int = 1
    flaky: bool = False  # flaky in the run history: its result says so


class ExecutorHost(Protocol):
    """What an executor may use of the run that hosts it (``Executor.host``)."""

    root: Path  # the project root: what a remote executor ships
    interrupt_grace: float  # seconds the after hooks get once the run is interrupted
    interrupted: str | None  # why the run was interrupted (a signal's name), None while it runs

    async def run_one(self, job: Job) -> Result:
        """Run ``job`` here, on this process's event loop (what the ``local`` executor does)."""
        ...

    def cancelled(self, job: Job, duration_ms: float | None = None) -> Result:
        """The result recorded for ``job`` when it was cancelled after ``duration_ms``."""
        ...

    def context_for(self, case: Case, run: int) -> Context:
        """The context ``case``'s run ``run`` was given (a remote result carries the worker's)."""
        ...

    def remote_run(self, jobs: list[Job]) -> Any:
        """The whole run as one picklable object to ship once (``RemoteRun``): a worker process
        rebuilds it with ``RemoteRun.worker(root)`` and runs jobs by their ``RemoteRun.address``."""
        ...

    def add_summary(self, part: dict[str, Any]) -> None:
        """Count what a worker's cases added to the run summary (``worker.summary()`` after a
        job: its traces' counts) with this run's."""
        ...


class CaseCancelled(Exception):
    """A cancelled case, with the result recorded for it (see ``ExecutorHost.cancelled``)."""

    def __init__(self, result: Result):
        self.result = result


class Executor(Plugin):
    """Where a run's cases execute: ``local`` on this process's event loop, others elsewhere
    (``ray``: as tasks on a cluster). Built once per run with its host (what it may use of the
    run, :class:`ExecutorHost`) and its options (the ``executor:`` mapping of ``specrun.yaml``
    less ``type``).

    Everything around a case stays with the host, whatever the executor: scheduling at
    ``--parallel``, BeforeAll/AfterAll, ``--fail-fast``, interrupts, and reporting each result
    to the console, the stream and the reports. An executor that runs a case elsewhere runs
    it there as ``local`` would (``host.remote_run(jobs)`` is the run to ship, rebuilt in a
    worker) and hands back the result. ``copies_project`` is True for an executor whose cases
    run in a copy of the project: what a case writes there (an approved snapshot) would never
    reach the user's files, so the engine refuses ``--update-snapshots`` before anything runs.
    """

    copies_project: ClassVar[bool] = False

    def __init__(self, host: ExecutorHost, options: dict[str, Any]):
        self.host = host
        self.options = options

    async def start(self, jobs: list[Job]) -> None:
        """Get ready for ``jobs`` (connect, ship the project); called once, before BeforeAll."""

    def parallel(self) -> int:
        """Cases at once when neither ``--parallel`` nor ``specrun.yaml`` says."""
        return 1

    async def run(self, job: Job) -> Result:
        """Run one case once and return its final (sealed) result. When the task is cancelled
        (``--fail-fast``, an interrupt), stop the case and raise ``CaseCancelled`` with
        ``host.cancelled(job, duration_ms)``."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``start`` took; called once the last case is done."""
