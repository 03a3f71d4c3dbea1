"""Run blocking user code (sync agents, hooks, scripts) without blocking the run or its exit.

``asyncio.to_thread`` uses the loop's default executor, whose threads ``asyncio.run`` joins on
the way out: one hung agent would then keep specrun from ever exiting. Here each call gets a
daemon thread, so a timed-out or interrupted call is abandoned, not waited for: it keeps
neither the run from writing its reports nor the process from exiting (unless it holds the
interpreter lock inside one long C call, which stops every thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any


async def run_blocking(func: Callable[..., Any], *args: Any) -> Any:
    """Await ``func(*args)`` run in a daemon thread."""
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
