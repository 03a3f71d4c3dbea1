"""Per-case limits: ``limits: {tool_calls, tokens, cost, turns, seconds}`` on a case, in a
suite's ``defaults`` or in ``specrun.yaml`` (a case's keys over the defaults' over the project's).

A limit is checked as soon as what it counts is known, and exceeding one fails the case (not an
error: the agent did too much) with a message naming the limit, the value reached and where it
was counted. ``tool_calls`` and ``turns`` count the agent's; ``tokens`` and ``cost`` count the
agent's usage as reported, and separately the judges' and the simulator's, each against the
limit; ``seconds`` bounds the case's time from its first call to the agent (a dynamic case's
simulator and checkpoints included), cutting a reply short. A session that reports its reply
as it goes (``Context.progress``: a framework adapter's tool calls and usage, a traced agent's
spans as they arrive) is stopped as soon as that goes over ``tool_calls``, ``tokens`` or
``cost``, mid-reply (``Meter.watching``). A case
over a limit stops there: its assertions are not judged, a dynamic case asks for no further turn.
A limit on what the agent did not report (its tool calls, its usage, a cost) is an ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from .._core.data import Response, Status, Usage
from .._core.durations import seconds_limit
from .._core.kinds import Check
from .._core.results import Result
from .._project.registry import Registry
from .verdicts import combine, evaluate_case, judge_usage, spent_on

SOURCES = ("agent", "judge", "simulator")
MID_REPLY = ("tool_calls", "tokens", "cost")  # what Context.progress reports and can stop a reply on
_IN = " (counted in the "
_UNWATCHED = contextlib.nullcontext()  # Meter.watching with nothing to watch


class LimitExceeded(Exception):
    """A case went over one of its limits; the message says which, by how much, where."""


class LimitUnknown(Exception):
    """A limit that cannot be checked: the agent did not report what it counts (an error)."""


def case_limits(case_limits: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, float]:
    """The limits of a case: its own (defaults merged) over ``specrun.yaml``'s; ``seconds`` may
    be a duration (``30s``), checked by the schema."""
    return seconds_limit({**(config.get("limits") or {}), **case_limits})


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class Meter:
    """What one case has spent so far, against its limits."""

    def __init__(self, limits: Mapping[str, float]):
        self.limits = dict(limits)
        self.spent: dict[str, Usage] = {}  # by source (SOURCES), made when it first spends
        self.tool_calls = 0
        self.started = time.perf_counter()
        self.replying: asyncio.Task[Any] | None = None  # the task awaiting the reply being watched
        self.so_far: Response | None = None  # what that reply reported it has done so far
        self.stopped: LimitExceeded | None = None  # why the meter stopped it
        self.cancelled = False  # stopped by cancelling it from outside (``observe``)
        # Whether a reply's progress is worth telling: a limit it can go over mid-reply (a case
        # with none spares its session the reports, a traced one its spans' evidence as they come).
        self.mid_reply = not self.limits.keys().isdisjoint(MID_REPLY)

    def _over(self, key: str, value: float, where: str, what: str = "") -> None:
        limit = self.limits.get(key)
        if limit is not None and value > limit:
            shown = f"${value:.4g}" if key == "cost" else _number(value)
            cap = f"${limit:g}" if key == "cost" else _number(limit)
            raise LimitExceeded(f"limit exceeded: {key} reached {shown}{what}, over the limit of {cap}{_IN}{where})")

    def spend(self, usage: Usage | None, where: str) -> None:
        """Add ``where``'s usage (agent, judge, simulator); ``LimitExceeded`` once over,
        ``LimitUnknown`` for a cost limit on calls whose cost was not reported."""
        if usage is None or not self.limits:  # nothing to count it against (most cases)
            return
        total = self.spent.get(where) or self.spent.setdefault(where, Usage())
        total.add(usage)
        self._over("tokens", total.total_tokens, where)
        if total.cost is not None:
            self._over("cost", total.cost, where)
        elif "cost" in self.limits and usage.total_tokens:
            raise LimitUnknown(f"limits.cost cannot be checked: the {where}'s usage says no cost")

    def answered(self, response: Response) -> None:
        """Count an answer of the agent's: its tool calls and its usage. A limit on what the
        agent did not report is ``LimitUnknown``: counting it as none would fake a pass."""
        if not self.limits:  # nothing to count it against (most cases)
            return
        if "tool_calls" in self.limits and not response.tools_reported:
            raise LimitUnknown("limits.tool_calls cannot be checked: the agent did not report its tool calls")
        self.tool_calls += len(response.tool_calls) if response.tools_reported else 0
        self._over("tool_calls", self.tool_calls, "agent")
        unknown = [k for k in ("tokens", "cost") if k in self.limits]
        if unknown and response.usage is None:
            raise LimitUnknown(f"limits.{unknown[0]} cannot be checked: the agent reported no usage")
        self.spend(response.usage, "agent")

    def watching(self) -> contextlib.AbstractContextManager[None]:
        """Around the agent's reply, in the task awaiting it: what it reports as it goes
        (``observe``) is counted, and once over a limit the reply is stopped by a cancellation
        that leaves here as ``LimitExceeded`` (whatever the framework made of it on the way).
        A cancellation from outside (``--fail-fast``, a signal) stays one. Without a limit it
        can go over mid-reply, nothing reports progress to it (the runner gives the context no
        ``progress``): there is nothing to watch, and no generator is made per case for it."""
        return self._watching() if self.mid_reply else _UNWATCHED

    @contextlib.contextmanager
    def _watching(self) -> Iterator[None]:
        task = asyncio.current_task()
        self.replying, self.so_far, self.stopped, self.cancelled = task, None, None, False
        try:
            yield
        except BaseException:
            if self.cancelled and task is not None:
                task.uncancel()  # the meter's own cancellation, not one from outside
            if self.stopped is None or (task is not None and task.cancelling()):
                raise
            raise self.stopped from None
        finally:
            self.replying = None
        if self.cancelled and self.stopped is not None:  # the reply let the cancellation go by: still over
            if task is not None:
                task.uncancel()
            raise self.stopped from None

    def observe(self, so_far: Response) -> None:
        """``Context.progress``: the reply under way has done ``so_far``; over ``tool_calls``,
        ``tokens`` or ``cost`` with it, the reply is stopped: in the watched task by raising
        ``asyncio.CancelledError`` there and then; told elsewhere on its event loop's thread
        (another task, a callback: a trace's spans as they arrive) by cancelling that task.
        Told from another thread, it is only counted at the reply's end."""
        replying = self.replying
        try:
            here = asyncio.current_task()
        except RuntimeError:  # a thread with no event loop
            return
        if replying is None or (here is not replying and asyncio.get_running_loop() is not replying.get_loop()):
            return
        if here is not replying and self.stopped is not None:
            return  # stopped already: its cancellation is on its way
        self.so_far = so_far
        try:
            if so_far.tools_reported:
                self._over("tool_calls", self.tool_calls + len(so_far.tool_calls), "agent")
            if so_far.usage is not None:
                total = Usage()
                total.add(self.spent.get("agent"))
                total.add(so_far.usage)
                self._over("tokens", total.total_tokens, "agent")
                if total.cost is not None:
                    self._over("cost", total.cost, "agent")
        except LimitExceeded as over:
            self.stopped = over
            if here is replying:
                raise asyncio.CancelledError(str(over)) from None
            self.cancelled = True
            replying.cancel(str(over))

    def turn(self, number: int) -> None:
        """Before turn ``number`` of a dynamic case: ``LimitExceeded`` when it would be one too many."""
        self._over("turns", number, "agent", " (the turn about to start)")

    def budget(self, timeout: float) -> float:
        """How long the agent may still take: the case's timeout, or what ``seconds`` leaves."""
        seconds = self.limits.get("seconds")
        if seconds is None:
            return timeout
        return min(timeout, max(0.0, seconds - (time.perf_counter() - self.started)))

    def out_of_time(self, timeout: float, where: str = "agent") -> str | None:
        """The failure when ``seconds``, not the case's timeout, cut the agent short."""
        seconds = self.limits.get("seconds")
        if seconds is None or seconds >= timeout:
            return None
        taken = time.perf_counter() - self.started
        return f"limit exceeded: seconds reached {taken:.2f}, over the limit of {_number(seconds)}{_IN}{where})"


async def judged_answer(
    check: Check, success_states: Any, registry: Registry, timeout: float, meter: Meter, run: int
) -> Result:
    """A standard case's result from the agent's answer: the agent's limits first (over one, no
    judge is asked), then the assertions, then the judges' limits."""
    response, case = check.response, check.case
    try:
        meter.answered(response)
    except (LimitExceeded, LimitUnknown) as over:
        status: Status = "failed" if isinstance(over, LimitExceeded) else "error"
        return Result(case, status, run=run, response=response, error=str(over), usage=response.usage)
    verdicts = await evaluate_case(check, success_states, registry, timeout)
    judged = judge_usage(verdicts)
    usage = spent_on(response, judged)
    status, error = combine(verdicts), None
    try:
        meter.spend(judged, "judge")
    except LimitExceeded as over:
        status, error = "failed", str(over)
    except LimitUnknown as unknown:
        status, error = "error", str(unknown)
    return Result(
        case,
        status,
        run=run,
        response=response,
        error=error,
        assertions=verdicts,
        usage=usage,
    )
