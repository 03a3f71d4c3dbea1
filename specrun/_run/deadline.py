"""The case timeout around one call (the agent's answer, one check): its deadline is set when the
call starts; its timer is armed then, or, for a call started eagerly, only once it waits.

A timer can stop only code that waits (an ``await`` that gives the event loop a turn): code that
runs to its end without waiting cannot be interrupted by any timer. So a call that is started by
hand and finishes without waiting (an assertion such as ``contains``, an agent function that
answers at once) never needed a timer, and arming one for it cost more than the call. One that
does wait is then held to the same deadline as if its timer had been armed first.

Calls that may queue in one of specrun's rate limiters (the ``http`` target, model calls) are not
started eagerly: the limiter pauses the case timeout while they queue, so the timer must be
there (in ``CASE_DEADLINE``) when the call starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

from .._models.limiter import CASE_DEADLINE

T = TypeVar("T")


async def within(call: Coroutine[Any, Any, T], timeout: float, eager: bool = False) -> T:
    """``await call`` within ``timeout`` seconds from now, else ``TimeoutError``; while it waits
    its deadline is in ``CASE_DEADLINE`` (a call queued by a rate limiter pauses it). ``eager``:
    started before its timer is armed (see the module docstring)."""
    due = asyncio.get_running_loop().time() + timeout
    awaited: Awaitable[T] = call
    if eager:
        try:
            pending = call.send(None)
        except StopIteration as done:
            return done.value
        awaited = _Resumed(call, pending)  # it waits: the rest of it runs within the deadline
    async with asyncio.timeout_at(due) as deadline:
        paused = CASE_DEADLINE.set(deadline)
        try:
            return await awaited
        finally:
            CASE_DEADLINE.reset(paused)


class _Resumed:
    """The rest of a coroutine that was started by hand and is waiting for ``pending``: awaited,
    it hands ``pending`` to the task as the coroutine would have, then carries on with it
    (``yield from``'s rules: what the task sends or throws goes to the coroutine)."""

    __slots__ = ("coroutine", "pending")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], pending: Any):
        self.coroutine, self.pending = coroutine, pending

    def __await__(self) -> Generator[Any, None, Any]:
        rest = self.coroutine.__await__()
        waiting = self.pending
        while True:
            try:
                yield waiting
            except GeneratorExit:
                rest.close()
                raise
            except BaseException as exc:  # a cancellation (the timeout's) reaches the coroutine
                try:
                    waiting = rest.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    waiting = rest.send(None)
                except StopIteration as done:
                    return done.value
