"""Run blocking user code (sync agents, hooks, scripts) without blocking the run or its exit.

``asyncio.to_thread`` uses the loop's default executor, whose threads ``asyncio.run`` joins on
the way out: one hung agent would then keep specrun from ever exiting. Here calls run in daemon
threads, so a timed-out or interrupted call is abandoned, not waited for: it keeps neither the
run from writing its reports nor the process from exiting (unless it holds the interpreter lock
inside one long C call, which stops every thread).

The threads are reused: one that finished its call waits for the next, and a new one starts only
when none is free (a hung call keeps its thread, never a free one). Starting a thread per call
was measured at about 0.15 CPU-ms per case of a sync agent that answers at once, more than the
rest of the engine's work on that case.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

_calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_free = 0  # threads waiting for a call (or about to take one that is queued for them)
_lock = threading.Lock()


def _forget() -> None:
    """In a forked child: the parent's threads are not there, so none is free."""
    global _calls, _free, _lock
    _calls, _free, _lock = queue.SimpleQueue(), 0, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def _serve() -> None:
    global _free
    while True:
        _calls.get()()
        with _lock:
            _free += 1


def _submit(call: Callable[[], None]) -> None:
    """Run ``call`` in a free thread, or in a new one when none is free."""
    global _free
    with _lock:
        start = not _free
        if not start:
            _free -= 1  # that thread is this call's, whichever of the free ones takes it
    _calls.put(call)
    if start:
        threading.Thread(target=_serve, daemon=True, name="specrun-blocking").start()


class DaemonThreads(concurrent.futures.ThreadPoolExecutor):
    """An executor that gives each call a daemon thread, never joined. specrun's run loops use it
    as their default executor (what ``asyncio.to_thread`` and a framework's sync tools run on),
    and it is ``run_blocking.executor`` for a framework that takes an executor of its own."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        context = contextvars.copy_context()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(context.run(fn, *args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=work, daemon=True, name=f"specrun-{getattr(fn, '__name__', 'call')}").start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: the threads are daemons."""


class RunBlocking:
    """Await ``func(*args)`` run in a daemon thread: ``await run_blocking(func, *args)``.
    ``executor`` is the same daemon threads as a ``concurrent.futures.Executor``."""

    executor = DaemonThreads(max_workers=1)

    async def __call__(self, func: Callable[..., Any], *args: Any) -> Any:
        return await _in_daemon_thread(func, *args)


async def _in_daemon_thread(func: Callable[..., Any], *args: Any) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            outcome = True, context.run(func, *args)
        except BaseException as exc:  # the call's, for the awaiting task to raise
            outcome = False, exc
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this call any more
            pass

    _submit(work)
    return await future


run_blocking = RunBlocking()
