"""Adaptive concurrency toward one endpoint: back off when it says 429, recover as it answers.

An :class:`AdaptiveLimiter` is AIMD (additive increase, multiplicative decrease), as TCP does
it: a ``429 Too Many Requests`` halves the number of calls allowed in flight (never below 1);
each success allows one more, up to ``max_limit``. Callers over the limit wait in a FIFO queue,
woken as slots free up; nothing polls.

A success raises the limit only if the limit was in full use while its call was in flight (a
call took the last slot, or had to queue): a limit the callers do not use is not one the
endpoint has shown it takes. Without that rule (TCP's congestion-window validation, RFC 7661)
callers running fewer calls than the limit, say a slowed run with 8 in flight under a limit
of 16, would raise it by one per success back to unbounded, and the next burst of calls would
all go out at once into the endpoint that had just refused half as many.

Nor does the success of a call sent before the latest halving raise it (TCP's fast recovery,
RFC 6582): it was sent under the limit the endpoint refused, and the replies to that burst,
often processed in one batch by a busy process, would otherwise raise the halved limit by as
many calls as the endpoint had just taken, sending them again at once.

A burst of 429s answering calls that were all sent under the old limit counts as one signal,
not one halving per reply (which would drop any limit to 1 at once): a 429 halves the limit
only if its call was started after the previous halving.

Without ``max_limit`` the limit starts unbounded (the callers' own parallelism, e.g.
``--parallel``, is the bound): the first 429 halves the concurrency actually in flight, and
once the limit has grown back to the most calls ever in flight it is unbounded again.

Waiting for a slot is specrun's doing, not the agent's: while a call waits, the case timeout
the runner put in :data:`CASE_DEADLINE` is paused (and the wait is left out of the latency).

Keys: the ``http`` target uses the process-wide :data:`LIMITERS`, keyed by the endpoint
(:func:`endpoint_key`: host and path), so every target calling one endpoint shares its limit.
A ``ModelClient`` keeps its own registry keyed by model name.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

CASE_DEADLINE: contextvars.ContextVar[asyncio.Timeout | None] = contextvars.ContextVar(
    "specrun_case_deadline", default=None
)


class Slot:
    """One call's permission to run; tell it how the call went with :meth:`report`."""

    __slots__ = ("epoch", "full", "outcome", "waited")

    def __init__(self, epoch: int, waited: float = 0.0, full: int = 0):
        self.epoch = epoch
        self.outcome: str | None = None
        self.waited = waited  # seconds spent in the queue
        self.full = full  # the limiter's count of full uses before this call: see release()

    def report(self, status: int | None) -> None:
        """The call's HTTP status: 429 lowers the limit, 2xx raises it, anything else neither."""
        if status == 429:
            self.outcome = "throttled"
        elif status is not None and 200 <= status < 300:
            self.outcome = "ok"
        else:
            self.outcome = None


class AdaptiveLimiter:
    """AIMD concurrency limit for one endpoint; see the module docstring."""

    def __init__(self, max_limit: int | None = None):
        if max_limit is not None and max_limit < 1:
            raise ValueError(f"max_limit must be at least 1, not {max_limit}")
        self.max_limit: float = max_limit if max_limit is not None else math.inf
        self._limit: float = self.max_limit
        self.in_flight = 0
        self.peak = 0  # the most calls ever in flight: where an unbounded limit recovers to
        self.throttles = 0  # halvings so far, for tests and diagnostics
        self._epoch = 0
        self._full = 0  # times the limit was found in full use (a call took the last slot or queued)
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int | None:
        """Calls allowed in flight now; None while unbounded."""
        return None if self._limit == math.inf else int(self._limit)

    @property
    def waiting(self) -> int:
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self) -> Slot:
        """Wait for a free slot (first come, first served)."""
        full = self._full
        if not self._waiters and self.in_flight < self._limit:
            self._grant()
            return Slot(self._epoch, full=full)
        self._full += 1  # a caller must queue: the limit is in use
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append(future)
        self._wake()
        started = loop.time()
        case_timeout = CASE_DEADLINE.get()
        due = _pause(case_timeout)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted, then cancelled: pass it on
                self.in_flight -= 1
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(future)
            raise  # the deadline stays paused: the case is ending anyway
        waited = loop.time() - started
        if due is not None and case_timeout is not None:
            case_timeout.reschedule(due + waited)
        return Slot(self._epoch, waited, full)

    def release(self, slot: Slot) -> None:
        """Give the slot back and adapt the limit to how its call went."""
        self.in_flight -= 1
        if slot.outcome == "throttled":
            if slot.epoch == self._epoch:
                base = self._limit if self._limit != math.inf else self.in_flight + 1
                self._limit = max(1, int(base) // 2)
                self._epoch += 1
                self.throttles += 1
        elif (
            slot.outcome == "ok"
            and self._limit < self.max_limit
            and self._full != slot.full
            and slot.epoch == self._epoch
        ):
            # Sent under the current limit, which was in full use while it ran, and the endpoint
            # took it: one more.
            self._limit += 1
            if self.max_limit == math.inf and self._limit >= self.peak:
                self._limit = math.inf  # back to the most ever in flight: unbounded again
        self._wake()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """``async with limiter.slot() as slot: ...; slot.report(status)``."""
        held = await self.acquire()
        try:
            yield held
        finally:
            self.release(held)

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self._limit:
            future = self._waiters.popleft()
            if not future.done():
                self._grant()
                future.set_result(None)

    def _grant(self) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self._limit:
            self._full += 1  # this call took the last slot


def _pause(timeout: asyncio.Timeout | None) -> float | None:
    """Stop ``timeout`` from firing; return when it was due (None: nothing was paused)."""
    if timeout is None:
        return None
    when = timeout.when()
    if when is None or timeout.expired():
        return None
    try:
        timeout.reschedule(None)
    except RuntimeError:  # not entered, or already left
        return None
    return when


class Limiters:
    """One :class:`AdaptiveLimiter` per key, made on first use."""

    def __init__(self) -> None:
        self._by_key: dict[str, AdaptiveLimiter] = {}

    def get(self, key: str, max_limit: int | None = None) -> AdaptiveLimiter:
        """The limiter for ``key``; ``max_limit`` applies when it is created."""
        limiter = self._by_key.get(key)
        if limiter is None:
            limiter = self._by_key[key] = AdaptiveLimiter(max_limit)
        return limiter

    def __contains__(self, key: str) -> bool:
        return key in self._by_key


def endpoint_key(url: str) -> str:
    """``host:port/path`` of a URL: what identifies one endpoint (query and scheme aside)."""
    parts = urlsplit(url)
    return f"{parts.netloc.rpartition('@')[2].lower()}{parts.path or '/'}"


LIMITERS = Limiters()


def retry_after(headers: Any) -> float | None:
    """Seconds a server asked callers to wait (``retry-after-ms``, or ``retry-after`` as seconds
    or an HTTP date), or None when it did not say."""
    if headers is None:
        return None
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            return max(0.0, float(value) / 1000)
        value = headers.get("retry-after")
        if value is None or not str(value).strip():
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None
