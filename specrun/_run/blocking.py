"""Run blocking user code (sync agents, hooks, scripts) without blocking the run or its exit.

``asyncio.to_thread`` uses the loop's default executor, whose threads ``asyncio.run`` joins on
the way out: one hung agent would then keep specrun from ever exiting. Here each call gets a
daemon thread, so a timed-out or interrupted call is abandoned, not waited for: it keeps
neither the run from writing its reports nor the process from exiting (unless it holds the
interpreter lock inside one long C call, which stops every thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any


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
            value = context.run(func, *args)
        except BaseException as exc:
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, False, exc)
        else:
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, True, value)

    threading.Thread(target=work, daemon=True, name=f"specrun-{getattr(func, '__name__', 'call')}").start()
    return await future


run_blocking = RunBlocking()
