"""Run cases against their agents: parallel workers, timeouts, hooks, fail-fast and interrupts.

Every scheduled case yields exactly one result, handed to the lifecycle hooks (the console, the
stream, the reporters and installed plugins; see :mod:`specrun._run.lifecycle`) as soon as it is
final and then dropped, so memory stays flat as a run grows.
"As soon as" means at the event loop's next turn: a worker queues its result and moves on to
its next case, so the requests that replies free up go out before the reports are written
(reporting is off the path to the agent under test; see ``_report``).

Nothing user code does can hold the run: the agent's reply, each check of it and each hook get
the case timeout (global hooks the run's), sync code runs in daemon threads that a timeout
abandons, and signals are handled on the event loop. The first SIGINT or SIGTERM cancels the
cases in flight; ``after`` hooks (also one already running) and AfterAll still run, within
``options.interrupt_grace`` seconds each (``interrupt_grace`` in specrun.yaml, default
``INTERRUPT_GRACE``). Once every case is done, a signal lets the reports finish.
A second signal exits at once, killing every agent process tree first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._core.data import (
    ENVIRONMENT_DEFAULTS,
    Agent,
    Case,
    Context,
    Message,
    Response,
    format_duration,
)
from .._core.errors import ReportError, SpecrunError
from .._core.kinds import CaseCancelled, Check, Job, Session
from .._core.results import Result, RunInfo
from .._core.services import Services
from .._core.summary import Summary
from .._models.cache import CASE_TALLY, CacheTally
from .._project.plugin_manager import Plugins
from .._project.project import Project
from .._report.stability import Aggregator, exit_code
from .._report.stream import ResultStream, sharing_scans
from .blocking import run_blocking
from .case_hooks import call_hook, case_hook_dirs, load_hook
from .lifecycle import Lifecycle
from .limits import Meter, case_limits, judged_answer
from .plan import case_needs_model
from .proctree import kill_all
from .reply import reply
from .settings import RunOptions
from .tracebacks import user_traceback

if TYPE_CHECKING:
    from .plan import Jobs  # the jobs of a run, made as the workers take them
    from .remote import RemoteRun
    from .replay import Replay

INTERRUPT_EXIT = {"SIGINT": 130, "SIGTERM": 143}


class Runner:
    """Runs jobs with ``options.parallel`` workers; see the module docstring. It is the
    :class:`~specrun._core.kinds.ExecutorHost` of the run's executor."""

    def __init__(self, project: Project, plugins: Plugins, options: RunOptions, models: Any = None):
        self.project = project
        self.plugins = plugins
        self.options = options
        self.root, self.interrupt_grace = project.root, options.interrupt_grace  # for the executor
        self.models = models
        self.aggregator = Aggregator(options.min_pass_rate, options.runs, keep=False)
        self.done = 0
        self.interrupted: str | None = None
        self._stop: str | None = None
        self._finishing = False  # every case is done: a first signal lets the reports finish
        self._late_signal: str | None = None
        self._hook_deadlines: set[asyncio.Timeout] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._finished: list[dict[str, Any]] | None = None
        self._unreported: list[Result] = []
        self._lifecycle: Lifecycle | None = None
        self._stream: ResultStream | None = None  # the run's, flushed before a hard exit
        self._environment: list[tuple[str, Any, Any]] | None = None
        self._services: dict[int, Services] = {}  # by run index: the same for every case of a run
        self.replay: Replay | None = None  # `specrun rejudge`: recorded answers instead of the agent, no hooks
        self.executor = plugins.registry.get("executor", options.executor)(self, options.executor_options)

    # -- what the executor may use (ExecutorHost) ------------------------------------------------

    def remote_run(self, jobs: list[Job]) -> RemoteRun:
        from .remote import RemoteRun

        return RemoteRun.of(self, jobs)

    def add_summary(self, part: dict[str, Any]) -> None:
        """Count a worker's part of the run summary (``RemoteWorker.summary()``) with this run's."""
        self.project.add_trace_summary(part)

    # -- the run --------------------------------------------------------------------------------

    async def run(
        self, jobs: Jobs, info: RunInfo, run_plugins: list[object], stream: ResultStream
    ) -> Summary:
        """Run every job, with ``run_plugins`` (the console, ``stream``, the reporters) on the
        lifecycle hooks for this run; return the summary. Every consumer is finished even when
        the run is interrupted; one that failed raises ``ReportError`` at the end."""
        started = time.perf_counter()
        asyncio.get_running_loop().set_default_executor(run_blocking.executor)  # asyncio.to_thread: never joined
        self._finished = [] if self.options.after_all else None
        self._stream = stream
        with Lifecycle(self.plugins, run_plugins) as lifecycle:
            self._lifecycle = lifecycle
            lifecycle.call("run_started", info=info)
            loop = asyncio.get_running_loop()
            handled = self._install_signals(loop)
            try:
                try:
                    await self._run_jobs(jobs)
                finally:
                    self._report_queued()  # an interrupted or failed run still reports every result it has
                    self._finishing = True
                    await self.executor.close()
                    await self.project.aclose()
                    if self.models is not None:
                        await self.models.aclose()
                summary = self._summary(len(jobs), (time.perf_counter() - started) * 1000, stream)
                with sharing_scans():  # the whole-file reports read the stream once between them
                    await lifecycle.finish(info=info, summary=summary, stream=stream.path)
            finally:
                for sig in handled:
                    loop.remove_signal_handler(sig)
        if lifecycle.broken:
            kept = "the reports say incomplete" if summary.get("incomplete") else f"every result is in {stream.path}"
            raise ReportError("; ".join(lifecycle.broken.values()) + f"; {kept}")
        return summary

    async def start(self, jobs: Jobs) -> None:
        """Start the executor, before ``run``; with no ``--parallel`` given, it says how many cases run at once."""
        if self.options.executor != "local":  # it ships the cases and addresses each job's by identity
            jobs.hold()
        await self.executor.start(jobs)
        self.options.parallel = self.options.parallel or self.executor.parallel()

    async def _run_jobs(self, jobs: Jobs) -> None:
        """BeforeAll, the cases, AfterAll. A suite file that cannot be read again once the cases
        started (it changed) stops the run with its error, after AfterAll."""
        opts = self.options
        dirs, agents = self.hook_dirs(jobs), jobs.agents
        self.aggregator.agents = len(agents)
        ctx = self._global_context()
        before_all_data = None
        if opts.before_all:
            cases = list(jobs.cases())  # what the hook is given: every case, held for it
            # A task of its own, so that a signal cancels it as it cancels the cases.
            before_all = asyncio.ensure_future(
                self._hook("BeforeAll", opts.before_all, dirs, agents, opts.timeout, ctx, cases)
            )
            self._tasks = [before_all]
            try:
                before_all_data = await before_all
            except _HookFailed as exc:
                raise SpecrunError(str(exc)) from exc
            except asyncio.CancelledError:
                if not self.interrupted:
                    raise
        await self._start_workers(iter(jobs), max(1, min(opts.parallel, len(jobs))))
        outcomes = await asyncio.gather(*self._tasks, return_exceptions=True)
        self._report_queued()
        if opts.after_all:
            with contextlib.suppress(_HookFailed):
                await self._hook(
                    "AfterAll", opts.after_all, dirs, agents, opts.timeout, ctx, self._finished, before_all_data
                )
        for outcome in outcomes:
            if isinstance(outcome, Exception):  # a worker that stopped: its error ends the run (exit 2 or 3)
                raise outcome

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        handled: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (e.g. inside pytest-xdist or a thread): no handler
        return handled

    def interrupt(self, name: str | None) -> None:
        """Mark the run interrupted by ``name`` (None: not) for an executor's worker, which cancels its case itself."""
        self.interrupted, self._stop = name, ("interrupted" if name else None)

    def _on_signal(self, sig: int) -> None:
        name = signal.Signals(sig).name
        if self.interrupted or self._late_signal:  # a second one: leave at once, with what is final
            self._report_queued()
            if self._stream is not None:
                with contextlib.suppress(Exception):  # a full disk must not keep us from leaving
                    self._stream.flush()
            kill_all()  # agents that ignore SIGTERM must not outlive us
            os._exit(INTERRUPT_EXIT.get(name, 130))
        if self._finishing:
            self._late_signal = name  # every case is done: the reports are written, then we exit
            return
        self.interrupted = name
        self._stop = "interrupted"
        for task in self._tasks:
            task.cancel()
        grace = asyncio.get_running_loop().time() + self.options.interrupt_grace
        for deadline in self._hook_deadlines:  # a hook already running gets the grace, no more
            when = deadline.when()
            if not deadline.expired() and (when is None or when > grace):
                deadline.reschedule(grace)

    async def _start_workers(self, queue: Iterator[Job], count: int) -> None:
        """Start ``count`` workers on the shared queue, one per event-loop turn.

        Started in one turn, every worker opens its connection before any sends a request: the
        first requests then go out together after the last connect, their replies come back
        together, and that burst repeats every round trip. Started one per turn, each sends as
        soon as it is connected and the replies stay spread out (measured at --parallel 200 on
        a 100 ms agent: replies 4 ms late at the median instead of 35).
        """
        self._tasks = []
        for _ in range(count):
            if self._stop:
                return
            self._tasks.append(asyncio.create_task(self._worker(queue)))
            await asyncio.sleep(0)

    async def _worker(self, queue: Iterator[Job]) -> None:
        for job in queue:
            if self._stop:
                return
            try:
                result = await self.executor.run(job)
            except CaseCancelled as cancelled:
                self._report(cancelled.result)
                raise asyncio.CancelledError from None
            except SpecrunError:
                raise  # the run cannot go on (the suite file changed): said after AfterAll
            except Exception as exc:  # a bug of the executor's or of the engine: that case's error, not a lost worker
                error = f"internal error: {type(exc).__name__}: {exc}"
                result = Result(job.case, "error", run=job.run, error=error, traceback=user_traceback(exc))
                result.agent = job.agent.id
            self._report(result)
            if self.options.fail_fast and result.status in ("failed", "error") and not self._stop:
                self._stop_others("--fail-fast")
            if len(self._unreported) > self.options.parallel:
                # More results than workers wait: cases finish without the loop turning (an agent
                # that answers at once). Let it turn, or the results and the loop's cancelled
                # timers (a case timeout each) pile up in memory until the run ends.
                await asyncio.sleep(0)

    def _stop_others(self, reason: str) -> None:
        self._stop = reason
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()

    # -- one case -------------------------------------------------------------------------------

    def environment(self, case: Case | None = None) -> dict[str, Any]:
        """The case environment (V1's TestEnvironment), each field from the first that sets it:
        CLI flag (``-u``, ``-t``, ``--locale``) > ``--ctx`` > case field > project config > default."""
        if self._environment is None:  # what the run says, worked out once: (its own, the fallback) per field
            opts, config = self.options, self.project.config
            flags = {"user": opts.user, "team": opts.team, "locale": opts.locale}
            self._environment = [
                (name, flags.get(name) or opts.environment.get(name), config.get(name) or default)
                for name, default in ENVIRONMENT_DEFAULTS.items()
            ]
        if case is None:
            return {name: given or fallback for name, given, fallback in self._environment}
        return {name: given or getattr(case, name) or fallback for name, given, fallback in self._environment}

    def context_for(self, case: Case, run: int) -> Context:
        """The context a case's agent, hooks and assertions see: its environment, options and metadata."""
        return Context(
            case_id=case.id,
            metadata=dict(case.metadata),
            options=dict(case.options),
            run=run,
            extra=dict(self.options.extra_context),
            **self.environment(case),
        )

    def connector_for(self, case: Case) -> str | None:
        """The connector of a case: ``-c``, else its ``options.connector`` (the flag wins, as ``-u`` does)."""
        return self.options.connector or case.options.get("connector") or None

    def _global_context(self) -> Context:
        return Context(case_id="", extra=dict(self.options.extra_context), **self.environment())

    def hook_dirs(self, jobs: Jobs) -> list[Any]:
        """Where global hooks are looked for: next to each suite, the project root, each agent's folders."""
        return list(dict.fromkeys([*jobs.folders, self.project.root, *(d for a in jobs.agents for d in a.hook_dirs)]))

    def services(self, run: int) -> Services:
        known = self._services.get(run)
        if known is None:
            opts, config = self.options, self.project.config
            known = self._services[run] = Services(self.models, run, self.call_agent, config, opts.update_snapshots)
        return known

    async def call_agent(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        """Send messages to a project agent (validators, simulators, generators, reporters)."""
        return await self.project.call_agent(agent_id, messages, context)

    async def run_one(self, job: Job) -> Result:
        """Run one case once (hooks included) and return its result, without reporting it.

        If the task is cancelled, the interrupted result is carried by ``CaseCancelled``.
        """
        case = job.case
        started = time.perf_counter()
        ctx = self.context_for(case, job.run)
        hooked = self.replay is None  # a case's hooks set up its agent: a rejudge calls none
        dirs = case_hook_dirs(case, job.agent) if hooked and (case.before or case.after) else []
        budget = case.timeout or self.options.timeout
        before_data = None
        cancelled = False
        tally = CacheTally()
        counting = CASE_TALLY.set(tally)  # this task's model calls are this case's
        try:
            if case.skip:
                result = Result(case, "skipped", run=job.run, error=case.skip if isinstance(case.skip, str) else None)
            else:
                if self.models is not None and not self.models.settled:  # else nothing to wait for
                    await self._models_ready(job)
                started = time.perf_counter()  # importing litellm is no case's time
                if case.before and hooked:
                    before_data = await self._hook("before", case.before, dirs, [job.agent], budget, ctx, case)
                result = await self._execute(job, ctx)
        except _HookFailed as exc:
            result = Result(case, "error", run=job.run, error=str(exc), traceback=user_traceback(exc.__cause__))
        except asyncio.CancelledError:
            cancelled = True
            result = self.cancelled(job)
        result.context = ctx
        result.agent = job.agent.id
        result.duration_ms = (time.perf_counter() - started) * 1000
        if case.after and hooked and result.status != "skipped":
            after = asyncio.ensure_future(
                self._hook("after", case.after, dirs, [job.agent], budget, ctx, case, result, before_data)
            )
            while not after.done():  # shielded: a hook that has started is let finish (see _on_signal)
                with contextlib.suppress(_HookFailed):
                    try:
                        await asyncio.shield(after)
                    except asyncio.CancelledError:
                        cancelled = True
            if not after.cancelled() and after.exception() is not None:
                failure = str(after.exception())
                result.status = "error"
                result.error = f"{result.error}; {failure}" if result.error else failure
        CASE_TALLY.reset(counting)
        result.cached, result.flaky = tally.all_cached, job.flaky
        result.seal()  # final now: an output JSON cannot hold makes this case an error, here
        if cancelled:
            raise CaseCancelled(result)
        return result

    def cancelled(self, job: Job, duration_ms: float | None = None) -> Result:
        """The result of a case cancelled in flight: ``error: interrupted`` after a signal, else
        ``skipped`` (``cancelled by --fail-fast``); sealed when ``duration_ms`` is given."""
        stopped = self._stop == "interrupted"
        why = "interrupted" if stopped else f"cancelled by {self._stop}"
        result = Result(job.case, "error" if stopped else "skipped", run=job.run, error=why)
        if duration_ms is not None:
            result.context = self.context_for(job.case, job.run)
            result.duration_ms, result.flaky = duration_ms, job.flaky
            result.seal()
        return result

    async def _hook(self, kind: str, ref: str, dirs: list[Any], agents: list[Agent], budget: float, *args: Any) -> Any:
        """Call a hook within ``budget`` seconds (``options.interrupt_grace`` at most once
        interrupted); ``_HookFailed`` says why it did not return."""
        if self.interrupted:
            budget = min(budget, self.options.interrupt_grace)
        deadline = asyncio.timeout(budget)
        try:
            func = load_hook(kind, ref, dirs, agents)
            async with deadline:
                self._hook_deadlines.add(deadline)
                try:
                    return await call_hook(func, *args)
                finally:
                    self._hook_deadlines.discard(deadline)
        except TimeoutError as exc:
            if not deadline.expired():  # the hook's own TimeoutError
                raise _HookFailed(f"{kind} hook {ref} failed: TimeoutError: {exc}") from exc
            if self.interrupted:
                raise _HookFailed(f"interrupted during {kind} hook {ref}") from None
            raise _HookFailed(f"{kind} hook {ref} did not finish within {format_duration(budget)}") from None
        except Exception as exc:
            raise _HookFailed(f"{kind} hook {ref} failed: {type(exc).__name__}: {exc}") from exc

    async def _models_ready(self, job: Job) -> None:
        """Wait for the model client (not settled yet) before the clock of a case that calls a
        model starts; a case that calls none does not wait."""
        registry, config = self.plugins.registry, self.project.config
        if self.models is not None and case_needs_model(job.case, job.agent, registry, config):
            await self.models.ready()

    async def _execute(self, job: Job, ctx: Context) -> Result:
        case = job.case
        if self.replay is not None:
            return await self.replay.execute(self, job, ctx)
        timeout = case.timeout or self.options.timeout
        services = self.services(job.run)
        connector = self.connector_for(case)
        target = self.project.target(job.agent, connector)  # built once per agent and model
        meter = Meter(case_limits(case.limits, self.project.config))
        ctx._progress = meter.observe if meter.mid_reply else None  # before the session is made: it may copy ctx
        session = self.project.session(job.agent, ctx, connector, case.tools, target)  # traced, mocked
        try:
            if case.dynamic:
                from .conversation import run_conversation

                return await run_conversation(
                    job, session, ctx, services, self.plugins.registry, timeout, self.options.simulator, meter
                )
            answer = await reply(job, session, target.rate_limited, meter, timeout)
        finally:
            ctx._progress = None  # the context outlives the case on its result; the meter need not
            if type(session).close is not Session.close:  # else nothing to release (nor to time)
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(10):
                        await session.close()
        if isinstance(answer, Result):  # none to judge
            return answer
        check = Check(answer, case, ctx, services, case.input, target.name)
        return await judged_answer(check, target.success_states, self.plugins.registry, timeout, meter, job.run)

    # -- results --------------------------------------------------------------------------------

    def _report(self, result: Result) -> None:
        """Queue ``result`` for the lifecycle hooks, at the loop's next turn.

        Replies arrive in bursts under ``--parallel``; reporting each one before its worker sends
        the next request delayed the whole burst's next requests by the burst's reporting time.
        """
        if not self._unreported:
            asyncio.get_running_loop().call_soon(self._report_queued)
        self._unreported.append(result)

    def _report_queued(self) -> None:
        queued, self._unreported = self._unreported, []
        for result in queued:
            self._emit(result)

    def _emit(self, result: Result) -> None:
        self.done += 1
        self.aggregator.add(result.record())
        assert self._lifecycle is not None
        self._lifecycle.call("case_finished", result=result)
        if self._finished is not None:  # AfterAll gets every result in full, as V2 says (outputs too)
            self._finished.append(result.record())

    def _summary(self, scheduled: int, duration_ms: float, stream: ResultStream) -> Summary:
        """Per-case verdicts (a case's runs judged together, under any pass-rate gate).

        ``incomplete`` says why the stream lacks results, when it does: the whole-file reports
        are built from the stream, and say so instead of looking complete.
        """
        summary = self.aggregator.summary(duration_ms=duration_ms, interrupted=bool(self.interrupted))
        summary = Summary(type="summary", **summary, not_run=scheduled - self.done, **self.project.trace_summary())
        assert self._lifecycle is not None
        if failure := self._lifecycle.failure(stream):
            summary["incomplete"] = failure
        if self.replay is not None and self.replay.not_run:  # a rejudge of a part: never "ALL TESTS PASSED"
            summary["not_judged"] = self.replay.not_run
        return summary

    def exit_code(self, summary: dict[str, Any]) -> int:
        """0 all passed, 1 a case failed or errored, 3 results could not be written, 130/143
        interrupted (see ``stability.verdict``)."""
        if self.interrupted:
            return INTERRUPT_EXIT.get(self.interrupted, 130)
        return exit_code(summary)


class _HookFailed(Exception):
    pass
