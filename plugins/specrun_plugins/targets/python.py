"""The ``python`` target: a Python function ``(messages, ctx)`` in the project, sync or async,
or a framework's agent object that an installed adapter runs (pydantic-ai, LangGraph, ...)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from specrun.plugin import (
    Adapter,
    Context,
    Message,
    Response,
    Session,
    SpecrunError,
    Target,
    TargetError,
    UsageError,
    load_callable,
    run_blocking,
)


class PythonTarget(Target):
    """Calls ``function(messages, ctx)``; a sync function runs in a worker thread. An object
    that is a framework's agent runs through its adapter; a framework's result object that a
    function returns is read by its adapter too (``Target.unwrap``)."""

    name = "python"
    mock_tools = True  # its agent finds the case's mocked tools (docs/suite-format.md#mocked-tools)
    trace_receiver = None  # traces: otel: the agent runs in this process; its spans come from the tracer provider
    description = "A Python function (messages, ctx) returning str, dict, list or a Response; or a framework agent."
    rate_limited = False  # a function, or a framework's own clients: never specrun's rate limiters
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "function": {
                "type": "string",
                "minLength": 1,
                "description": (
                    "module:function or module.function, looked up next to the agent file first;"
                    " or module:agent, a framework's agent object (pydantic-ai, LangGraph, OpenAI Agents)"
                ),
            }
        },
        "required": ["function"],
    }

    @classmethod
    def from_spec(cls, spec: str) -> dict[str, Any] | None:
        return {"function": spec.removeprefix("python:")} if spec.startswith("python:") else None

    def __init__(self, config: dict[str, Any], base_dir: Any):
        super().__init__(config, base_dir)
        self.ref: str = config["function"]
        self._func: Callable[..., Any] | None = None
        self._is_async = False
        self._adapter: Adapter | None = None

    def load(self) -> Callable[..., Any]:
        """The agent function (or framework agent), imported on first use (a ``UsageError`` when
        it is missing, or is neither a function nor an agent an installed adapter runs)."""
        if self._func is None:
            func = load_callable(self.ref, [self.base_dir], objects=True)
            self._adapter = self.adapter_for(func)
            if self._adapter is None and not callable(func):
                raise UsageError(
                    f"{self.ref!r} is a {type(func).__name__}: neither a function (messages, ctx) nor a framework"
                    " agent that an installed adapter runs (pydantic-ai, LangGraph, OpenAI Agents: see docs/targets.md)"
                )
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

    def session(self, context: Context) -> Session:
        func = self.load()  # loaded by problems() before the run: this raises nothing new
        if self._adapter is not None:
            return self._adapter.session(func, context)
        return super().session(context)

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
                value = await run_blocking(func, *args)
                if inspect.isawaitable(value):  # a sync wrapper around a coroutine
                    value = await value
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            # Never the user's Ctrl-C: the runner handles signals, and this may be a worker thread.
            detail = f": {exc}" if str(exc) else ""
            raise TargetError(f"agent error: {type(exc).__name__}{detail}") from exc
        elapsed = (time.perf_counter() - start) * 1000
        try:
            response = self.unwrap(value)
        except TypeError:
            expected = "str, dict, list or specrun.Response"
            raise TargetError(f"agent returned {type(value).__name__}; expected {expected}") from None
        if response.latency_ms is None:
            response.latency_ms = elapsed
        return response
