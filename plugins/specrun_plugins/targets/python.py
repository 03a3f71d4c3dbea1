"""The ``python`` target: a Python function ``(messages, ctx)`` in the project, sync or async."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from specrun.errors import SpecrunError, TargetError
from specrun.imports import load_callable
from specrun.kinds import Target
from specrun.model import Context, Message, Response, as_response


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller was cancelled (timed out) meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def run_in_thread(func: Callable[..., Any], *args: Any) -> Any:
    """Call a blocking ``func(*args)`` in a new daemon thread and await its result.

    Unlike ``asyncio.to_thread`` (the loop's small shared pool, joined at exit), a daemon
    thread per call gives every parallel case its own thread, and an agent that blocks forever
    after its case timed out cannot keep the finished run from exiting.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        result, error = None, None
        try:
            result = context.run(func, *args)
        except BaseException as exc:
            error = exc
        try:
            loop.call_soon_threadsafe(_settle, future, result, error)
        except RuntimeError:  # the loop closed while the agent was still running
            pass

    threading.Thread(target=work, name=f"specrun-agent-{getattr(func, '__name__', 'call')}", daemon=True).start()
    return await future


class PythonTarget(Target):
    """Calls ``function(messages, ctx)``; a sync function runs in a worker thread."""

    name = "python"
    description = "A Python function (messages, ctx) returning str, dict, list or specrun.Response."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "function": {
                "type": "string",
                "minLength": 1,
                "description": "module:function or module.function, looked up next to the agent file first.",
            }
        },
        "required": ["function"],
    }

    def __init__(self, config: dict[str, Any], base_dir: Any):
        super().__init__(config, base_dir)
        self.ref: str = config["function"]
        self._func: Callable[..., Any] | None = None
        self._is_async = False

    def load(self) -> Callable[..., Any]:
        """The agent function, imported on first use (a ``UsageError`` when it is missing)."""
        if self._func is None:
            func = load_callable(self.ref, [self.base_dir])
            # An instance with an async __call__ counts as async too.
            call = type(func).__call__
            self._is_async = inspect.iscoroutinefunction(func) or (
                not inspect.isroutine(func) and inspect.iscoroutinefunction(call)
            )
            self._func = func
        return self._func

    def problems(self) -> Iterable[tuple[str, str]]:
        try:
            self.load()
        except SpecrunError as exc:
            yield "function", str(exc)

    async def respond(self, messages: list[Message], context: Context) -> Response:
        try:
            func = self.load()
        except SpecrunError as exc:
            raise TargetError(str(exc)) from None
        # A copy, so an agent that appends to its input cannot rewrite the conversation.
        args = (list(messages), context)
        start = time.perf_counter()
        try:
            if self._is_async:
                value = await func(*args)
            else:
                value = await run_in_thread(func, *args)
                if inspect.isawaitable(value):  # a sync wrapper around a coroutine
                    value = await value
        except (Exception, SystemExit) as exc:
            raise TargetError(f"agent error: {type(exc).__name__}: {exc}") from exc
        elapsed = (time.perf_counter() - start) * 1000
        try:
            response = as_response(value)
        except TypeError:
            expected = "str, dict, list or specrun.Response"
            raise TargetError(f"agent returned {type(value).__name__}; expected {expected}") from None
        if response.latency_ms is None:
            response.latency_ms = elapsed
        return response
