"""The ``litellm`` target: a model (any litellm provider) with a system prompt and tools.

With ``tool_impls`` it runs a tool loop: call the model, run the tools it asks for, append the
results, call again, until it answers in text (at most ``max_steps`` calls). Without them,
tool calls are returned as the agent's calls. ``-c/--connector`` (or a case's
``options.connector``) replaces ``model``. A turn that fails (a model call that fails for good,
too many steps) raises a ``TargetError`` carrying the turn so far, its tool calls and usage, so
that a runaway loop's cost shows in the case.
Registered by the family's register_targets hook.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from ..._core.data import Context, Message, Response, ToolCall, Usage, parse_duration
from ..._core.errors import SpecrunError, TargetError
from ..._core.kinds import Target
from ..._project.imports import load_callable
from ..client import DEFAULT_CALL_TIMEOUT as MODEL_TIMEOUT
from ..client import DEFAULT_RETRIES as MODEL_RETRIES
from ..client import Completion, ModelClient, ModelError


class LitellmTarget(Target):
    """A model as the agent under test, called through ``specrun._models.client`` (no cache)."""

    name = "litellm"
    trace_receiver = None  # traces: otel: the model is called from this process
    env_fields = ("params",)
    description = "A model through litellm: system prompt, tools, and an optional tool loop."
    needs_model: ClassVar[bool] = True
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "model": {
                "type": "string",
                "minLength": 1,
                "description": "litellm model name, e.g. openai/gpt-4o-mini (-c overrides it).",
            },
            "system": {"type": "string", "description": "The system prompt."},
            "tools": {
                "type": "array",
                "items": {"type": "object"},
                "description": "OpenAI tool schemas ({type: function, function: {...}}).",
            },
            "tool_impls": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "tool name -> module:function, called with the arguments as keywords.",
            },
            "max_steps": {"type": "integer", "minimum": 1, "description": "Model calls per turn (default 5)."},
            "params": {
                "type": "object",
                "description": "litellm arguments: temperature, max_tokens, api_base, api_key, ... "
                "${NAME} is replaced by environment variable NAME.",
            },
            "timeout": {"type": ["number", "string"], "description": "Per model call (default 60s)."},
            "retries": {"type": "integer", "minimum": 0, "description": "Retries of a failed call (default 3)."},
        },
    }

    def __init__(self, config: dict[str, Any], base_dir: Any):
        super().__init__(config, base_dir)
        self.model: str | None = config.get("model")
        self.system: str | None = config.get("system")
        self.tools: list[dict[str, Any]] = list(config.get("tools") or [])
        self.max_steps = int(config.get("max_steps", 5))
        self._impls: dict[str, Callable[..., Any]] | None = None
        self._client: ModelClient | None = None

    def problems(self) -> Iterable[tuple[str, str]]:
        yield from super().problems()
        if not self.model:
            yield "model", "a litellm target needs `model` (or run with -c MODEL)"
        try:
            parse_duration(self.config.get("timeout", MODEL_TIMEOUT))
        except ValueError as exc:
            yield "timeout", str(exc)
        try:
            self.impls()
        except SpecrunError as exc:
            yield "tool_impls", str(exc)

    def impls(self) -> dict[str, Callable[..., Any]]:
        """The tool implementations, imported on first use."""
        if self._impls is None:
            refs = self.config.get("tool_impls") or {}
            self._impls = {name: load_callable(ref, [self.base_dir]) for name, ref in refs.items()}
        return self._impls

    def client(self) -> ModelClient:
        if self._client is None:
            self._client = ModelClient(
                self.model,
                timeout=parse_duration(self.config.get("timeout", MODEL_TIMEOUT)),
                retries=int(self.config.get("retries", MODEL_RETRIES)),
            )
        return self._client

    async def respond(self, messages: list[Message], context: Context) -> Response:
        started = time.perf_counter()
        chat: list[Any] = [{"role": "system", "content": self.system}] if self.system else []
        chat.extend(messages)
        impls = self.impls()
        usage = Usage()
        done = Response(None, [], usage)  # the turn so far: the case keeps it even if the turn fails
        try:
            for step in range(1, self.max_steps + 1):
                completion = await self._complete(chat, context)
                usage.add(completion.usage)
                done.raw = completion.raw
                for call in completion.tool_calls:  # one model response: its calls were made in parallel
                    call.step = step
                if not completion.tool_calls or not impls:
                    done.tool_calls.extend(completion.tool_calls)
                    done.content = completion.text
                    done.latency_ms = (time.perf_counter() - started) * 1000
                    return done
                chat.append(completion.assistant_message())
                for call in completion.tool_calls:
                    call.result = await self._run_tool(call, impls)
                    done.tool_calls.append(call)
                    content = call.result if isinstance(call.result, str) else json.dumps(call.result, default=str)
                    chat.append({"role": "tool", "tool_call_id": call.id, "content": content})
            raise TargetError(f"the model was still calling tools after max_steps ({self.max_steps}) calls")
        except TargetError as exc:
            done.latency_ms = (time.perf_counter() - started) * 1000
            exc.response = done
            raise

    async def _complete(self, chat: list[Any], context: Context) -> Completion:
        try:
            return await self.client().complete(
                chat,
                tools=self.tools or None,
                params=self.config.get("params"),
                purpose="target",
                cache=False,
                run=context.run,
            )
        except ModelError as exc:
            raise TargetError(str(exc)) from None
        except OSError as exc:  # an attachment that cannot be read
            raise TargetError(f"cannot send the conversation: {exc}") from None

    async def _run_tool(self, call: ToolCall, impls: dict[str, Callable[..., Any]]) -> Any:
        """The tool's result; an unknown tool or a tool that raises answers the model with an error
        (the call's ``status`` says which)."""
        func = impls.get(call.name)
        call.status = "error"
        if func is None:
            return {"error": f"unknown tool {call.name!r} (known: {', '.join(sorted(impls))})"}
        try:
            if inspect.iscoroutinefunction(func):
                result = await func(**call.arguments)
            else:
                result = await asyncio.to_thread(func, **call.arguments)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        call.status = "ok"
        return result

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
