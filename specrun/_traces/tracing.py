"""A run's tracing: the receivers it listens on, the router of its cases' spans, and the traced
session that makes a target's conversation with the agent leave evidence.

``Tracing.session(target, traces, context)`` opens the case's trace (a fresh trace id and root
span id, set on ``context.trace`` before the target's session is made, so that a process
target puts it in the agent's environment and an http target sends ``traceparent``), and wraps
the target's session: each ``send`` runs the agent in the case's OpenTelemetry context (a
target whose agent runs in this process, ``Target.trace_receiver = None``), waits for the
turn's spans to arrive when a receiver collects them (until the trace looks whole, ``grace``
at most), and adds what they say to the reply (``evidence.apply``). Closing the session closes
the case's trace and records its span tree on ``context.trace`` (the result's ``trace``).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import Any

from .._core.data import Context, Message, Response, ToolCall, TraceContext, parse_duration
from .._core.errors import TargetError
from .._core.kinds import Session, Target
from .._core.wrapping import WrappingSession
from .._models.limiter import CASE_DEADLINE
from . import DEFAULT_GRACE, evidence
from .collector import CaseTrace, Router
from .receiver import Receiver, parse_address

NO_SPANS = (
    "traces: otel: no span of this case's trace arrived{within}, so its tool calls are unknown (is the"
    " agent instrumented{where}?)"
)
DROPPED = (
    "traces: {n} spans of this case's trace were dropped (over specrun's limits): its tool calls may be missing some"
)


def _new_id(bits: int) -> int:
    while not (number := int.from_bytes(os.urandom(bits // 8), "big")):
        pass
    return number


class Tracing:
    """The run's receivers and router; see the module docstring."""

    def __init__(self) -> None:
        self.router = Router()
        self.receivers: dict[tuple[str, int], Receiver] = {}
        self._in_process = False
        self._serving: asyncio.Lock | None = None

    def receiver(self, address: str) -> Receiver:
        """The receiver listening on ``address`` (bound now, the first time: ``UsageError``
        when it cannot be); every ``port 0`` address shares one free port."""
        host, port = parse_address(address)
        if (host, port) not in self.receivers:
            receiver = Receiver(host, port, self.router)
            receiver.bind()
            self.receivers[(host, port)] = receiver
        return self.receivers[(host, port)]

    def in_process(self) -> None:
        """Collect this process's spans (``UsageError`` when its tracer provider is not the SDK's)."""
        if not self._in_process:
            from .inprocess import install

            install(self.router)
            self._in_process = True

    async def start(self, addresses: list[str], in_process: bool = False) -> None:
        """Listen on every address, and collect this process's spans when ``in_process``,
        before any case runs: what cannot be done (a busy port) stops the run there."""
        try:
            if in_process:
                self.in_process()
            for address in addresses:
                self.receiver(address)
            await self.serving()
        except BaseException:
            await self.close()
            raise

    async def serving(self) -> None:
        """Serve every bound receiver from the running loop (done once; cheap afterwards)."""
        if all(r.started for r in self.receivers.values()):
            return
        self._serving = self._serving or asyncio.Lock()
        async with self._serving:
            for receiver in list(self.receivers.values()):
                if not receiver.started:
                    await receiver.start()

    def session(self, target: Target, traces: dict[str, Any], context: Context) -> Session:
        """``target``'s session for ``context``'s case, traced (see the module docstring)."""
        address = traces.get("receiver") or target.trace_receiver
        receiver = self.receiver(address) if address else None
        in_process = target.trace_receiver is None
        if in_process:
            self.in_process()
        trace_id, root_id = _new_id(128), _new_id(64)
        case = self.router.open(trace_id, root_id)
        endpoint = receiver.endpoint if receiver is not None else None
        if context.trace is not None:  # a traced case's context lent to another agent (a simulator's): its own trace
            context = replace(context)
        context.trace = TraceContext(f"{trace_id:032x}", f"{root_id:016x}", endpoint)
        try:
            inner = target.session(context)
        except BaseException:
            self.router.close(case)
            raise
        grace = parse_duration(traces.get("grace", DEFAULT_GRACE))
        return TracedSession(inner, self, case, context, grace if receiver is not None else None, in_process)

    def finish(self, case: CaseTrace, context: Context) -> None:
        """Close the case's trace and record its span tree on ``context.trace``."""
        self.router.close(case)
        if context.trace is not None:
            context.trace.spans, left = evidence.record(case.spans, case.root_id)
            context.trace.dropped = case.dropped + left

    def summary(self) -> dict[str, Any]:
        return {"traces": self.router.counts()}

    async def close(self) -> None:
        """Stop listening (the counts stay, for the run's summary)."""
        for receiver in self.receivers.values():
            await receiver.close()
        self.receivers.clear()
        if self._in_process:
            from .inprocess import uninstall

            uninstall(self.router)
            self._in_process = False


async def _settle(case: CaseTrace, grace: float) -> None:
    """Wait for the turn's late spans with the case's timeout paused (as a rate limiter's queue
    pauses it): the agent has replied; waiting for its telemetry is specrun's doing."""
    deadline, due = CASE_DEADLINE.get(), None
    if deadline is not None and (when := deadline.when()) is not None and not deadline.expired():
        deadline.reschedule(None)
        due = when
    loop = asyncio.get_running_loop()
    started = loop.time()
    await case.settle(grace)  # cancelled: the deadline stays paused, the case is ending anyway
    if deadline is not None and due is not None:
        deadline.reschedule(due + loop.time() - started)


class TracedSession(WrappingSession):
    """A target's session whose agent's spans are the case's evidence."""

    def __init__(
        self,
        inner: Session,
        tracing: Tracing,
        case: CaseTrace,
        context: Context,
        grace: float | None,
        in_process: bool,
    ):
        super().__init__(inner)
        self.tracing, self.case, self.context = tracing, case, context
        self.grace = grace  # None: no receiver collects this agent's spans, nothing arrives late
        self.in_process = in_process
        self._warned: set[str] = set()
        # The case's limits (``Context.progress``): the spans of a reply under way are reported
        # to them as they arrive, with what the target's session reports itself (relayed).
        self.report = context._progress
        self.reported: Response | None = None  # what the target's session reported of this reply
        self.turn = 1
        if self.report is not None:
            context._progress = self._relay

    async def send(self, messages: list[Message]) -> Response:
        if self.grace is not None:
            await self.tracing.serving()
        case = self.case
        case.turn_started()
        token = None
        if self.in_process:
            from .inprocess import enter

            token = enter(case.trace_id, case.root_id)
        self.reported, self.turn = None, sum(1 for m in messages if m.role == "user")
        if self.report is not None:
            case.listener, case.loop = self._arrived, asyncio.get_running_loop()
        try:
            response = Response.of(await self.inner.send(messages))
        except TargetError as exc:  # what the agent did before it failed keeps its traced calls
            if exc.response is not None:
                self._evidence(exc.response, messages)
            raise
        finally:
            case.listener = None  # late spans are the reply's, counted with it
            if token is not None:
                from .inprocess import leave

                leave(token)
        if self.grace is not None and not case.complete:
            await _settle(case, self.grace)
        return self._evidence(response, messages)

    def _so_far(self) -> Response:
        """The reply under way: what the target's session reported of it, with its spans so far."""
        reported = self.reported
        calls: list[ToolCall] = list(reported.tool_calls) if reported is not None and reported.tools_reported else []
        so_far = Response(None, tool_calls=calls, usage=reported.usage if reported is not None else None)
        return evidence.apply(so_far, self.case.spans[self.case.taken :], self.turn)

    def _relay(self, so_far: Response) -> None:
        """The target's session's own report (in the task awaiting it), with the spans so far."""
        self.reported = so_far
        if self.report is not None:
            self.report(self._so_far())

    def _arrived(self) -> None:
        """Spans came during the reply (on the loop, outside its task): over a limit with them,
        the case's limits cancel the reply."""
        if self.report is not None and self.case.listener is not None:
            self.report(self._so_far())

    def _evidence(self, response: Response, messages: list[Message]) -> Response:
        case = self.case
        spans = case.take()
        if case.dropped and "dropped" not in self._warned:
            self._warned.add("dropped")
            response.warnings.append(DROPPED.format(n=case.dropped))
        if not case.spans:  # a trace with no span says nothing: the calls stay as the target said
            if not response.tools_reported and "none" not in self._warned:
                self._warned.add("none")
                response.warnings.append(self._no_spans())
            return response
        return evidence.apply(response, spans, sum(1 for m in messages if m.role == "user"))

    def _no_spans(self) -> str:
        trace = self.context.trace
        endpoint = trace.traces_endpoint if trace is not None else None
        within = f" within {self.grace:g}s of the reply" if self.grace is not None else ""
        if endpoint:
            where = f", exporting to {endpoint}, and does it honour traceparent"
        else:
            where = " and its code run in the case's OpenTelemetry context"
        return NO_SPANS.format(within=within, where=where)

    def finished(self) -> None:
        self.tracing.finish(self.case, self.context)
