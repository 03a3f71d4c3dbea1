"""The OpenAI Agents SDK (``openai-agents``): its ``Agent`` as the agent under test, its run
results, and the OpenAI client's ``ChatCompletion`` a function returns.

Implements no hook itself: the family's ``register_adapters`` registers both adapters. The SDK
and the OpenAI client are imported only inside methods, and each adapter is asked only once the
user's code imported its framework (``Adapter.modules``): specrun runs without them installed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.metadata
import json
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import (
    Adapter,
    Context,
    Message,
    Response,
    Session,
    TargetError,
    ToolCall,
    Usage,
    run_blocking,
    shorten,
)

from . import _openai_items as items
from ._openai_progress import run_reporting


@functools.cache
def _from_openai_agents(module_file: str, version: str | None) -> bool:
    """Whether the loaded ``agents`` module is the openai-agents distribution's: a project of
    one's own may well have an ``agents`` module with an ``Agent`` class in it."""
    try:
        dist = importlib.metadata.distribution("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        return False
    installed = Path(str(dist.locate_file("agents/__init__.py")))
    if installed.exists():
        return installed.resolve() == Path(module_file).resolve()
    return version == dist.version  # an editable install: the SDK's own version names it


def _sdk() -> Any:
    """The imported ``agents`` module when it is the OpenAI Agents SDK, else None."""
    module = sys.modules.get("agents")
    file = getattr(module, "__file__", None)
    if not file or not isinstance(getattr(module, "Agent", None), type):
        return None
    return module if _from_openai_agents(file, getattr(module, "__version__", None)) else None


class OpenAIAgentsAdapter(Adapter):
    """Runs an ``agents.Agent`` with ``Runner.run`` on each turn's whole conversation, and reads a
    ``RunResult`` (the session's or one a function returned): final output, tool calls, usage."""

    name = "openai-agents"
    description = "The OpenAI Agents SDK: an agents.Agent, or a RunResult a function returns."
    modules: ClassVar[tuple[str, ...]] = ("agents",)

    @classmethod
    def claims(cls, agent: Any) -> bool:
        sdk = _sdk()
        return sdk is not None and isinstance(agent, sdk.Agent)

    def session(self, agent: Any, context: Context) -> Session:
        return AgentsSession(agent, context)

    def unwrap(self, value: Any) -> Response | None:
        sdk = _sdk()
        if sdk is None or not isinstance(value, sdk.RunResult | sdk.RunResultStreaming):
            return None
        if isinstance(value, sdk.RunResultStreaming) and not value.is_complete:
            raise TargetError("agent returned a RunResultStreaming still running: consume stream_events() first")
        return read_run(value)


def read_run(run: Any, failed: set[str] | None = None, latency_ms: float | None = None) -> Response:
    """A Response from a finished run: its final output, every tool call and the usage."""
    return Response(
        items.final_content(run.final_output),
        tool_calls=items.tool_calls(run, failed),
        usage=items.usage_of(run.raw_responses),
        latency_ms=latency_ms,
        raw=run,
        warnings=items.pending_approvals(run),
    )


class AgentsSession(Session):
    """One conversation: the first turn sends the case's messages as input items; each later
    turn continues the SDK's own history (``to_input_list()``, tool calls and outputs included)
    with the messages the conversation added, run by the agent that answered last (after a
    handoff, the one handed to)."""

    def __init__(self, agent: Any, context: Context):
        self.agent = agent
        self.context = context
        self.history: list[Any] = []
        self.seen = 0  # messages of the conversation already in ``history``

    async def send(self, messages: list[Message]) -> Response:
        sdk = _sdk()
        # The SDK runs a sync tool with asyncio.to_thread: on daemon threads, one hung past its
        # case's timeout never keeps the loop's close (or specrun's exit) waiting. A run's loop has
        # them already; a loop of the Test API or a test's own may not.
        asyncio.get_running_loop().set_default_executor(run_blocking.executor)
        new = messages[self.seen :]
        if self.seen and new and new[0].role == "assistant":
            new = new[1:]  # the agent's own answer, which the SDK's history holds already
        self.seen = len(messages)
        failed: set[str] = set()

        def record_failure(args: Any) -> None:
            failed.add(args.call_id)  # and None: the model gets the SDK's own message, as without specrun

        max_turns, model_settings, tracing = _settings(self.context.options)
        config = sdk.RunConfig(
            tracing_disabled=not tracing, tool_error_formatter=record_failure, model_settings=model_settings
        )
        start = time.perf_counter()
        try:
            # Each model response's tool calls and usage go to Context.progress before its
            # tools run: a case over its limits is stopped there, mid-reply.
            run = await run_reporting(
                sdk,
                self.agent,
                [*self.history, *items.input_items(new)],
                self.context,
                failed,
                max_turns=max_turns,
                run_config=config,
            )
        except Exception as exc:  # never CancelledError: the case timeout must stop the run
            detail = f": {shorten(' '.join(str(exc).split()), 300, '...')}" if str(exc) else ""
            error = TargetError(f"agent error: {type(exc).__name__}{detail}")
            run_data = getattr(exc, "run_data", None)  # what the run did before it failed
            if run_data is not None:
                error.response = read_run_data(run_data, failed)
            raise error from exc
        elapsed = (time.perf_counter() - start) * 1000
        self.history = run.to_input_list()
        self.agent = run.last_agent
        return read_run(run, failed, elapsed)


def read_run_data(run_data: Any, failed: set[str]) -> Response:
    """The tool calls and usage of a run that raised (the SDK's ``RunErrorDetails``)."""
    return Response(None, tool_calls=items.tool_calls(run_data, failed), usage=items.usage_of(run_data.raw_responses))


def _settings(options: dict[str, Any]) -> tuple[int, Any, bool]:
    """The run settings a case's options give: ``max_turns`` (the SDK's model turns per run,
    default 10), ``model_settings`` (a mapping of the SDK's ``ModelSettings``), ``tracing``
    (keep the SDK's own tracing; off by default, so that a test run exports nothing)."""
    sdk = _sdk()
    max_turns = options.get("max_turns", 10)
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise TargetError(f"options.max_turns must be a positive integer, not {json.dumps(max_turns)}")
    raw = options.get("model_settings")
    model_settings = None
    if raw is not None:
        if not isinstance(raw, dict):
            raise TargetError(f"options.model_settings must be a mapping, not {json.dumps(raw)}")
        known = [f.name for f in dataclasses.fields(sdk.ModelSettings)]
        unknown = sorted(set(raw) - set(known))
        if unknown:  # the SDK drops a key it does not know, so a misspelt one would go unnoticed
            raise TargetError(f"options.model_settings: unknown {', '.join(unknown)} (known: {', '.join(known)})")
        try:
            model_settings = sdk.ModelSettings(**raw)
        except (TypeError, ValueError) as exc:
            raise TargetError(f"options.model_settings: {' '.join(str(exc).split())}") from None
    tracing = options.get("tracing", False)
    if not isinstance(tracing, bool):
        raise TargetError(f"options.tracing must be true or false, not {json.dumps(tracing)}")
    return max_turns, model_settings, tracing


class OpenAIChatCompletionAdapter(Adapter):
    """Reads a ``ChatCompletion`` (the OpenAI client's reply) that a function returned: the first
    choice's text, the tool calls the model asked for, and the usage."""

    name = "openai-chat-completion"
    description = "An OpenAI ChatCompletion a function returns: its text, requested tool calls and usage."
    modules: ClassVar[tuple[str, ...]] = ("openai",)

    def unwrap(self, value: Any) -> Response | None:
        try:
            from openai.types.chat import ChatCompletion
        except ImportError:  # an ``openai`` module that is not the OpenAI client
            return None
        if not isinstance(value, ChatCompletion):
            return None
        if not value.choices:
            raise TargetError("agent returned a ChatCompletion with no choices")
        message = value.choices[0].message
        calls = [_requested(call) for call in message.tool_calls or ()]
        usage = None
        if value.usage is not None:
            usage = Usage(value.usage.prompt_tokens, value.usage.completion_tokens, value.usage.total_tokens)
        content = message.content if message.content is not None else message.refusal
        return Response(content, tool_calls=calls, usage=usage, raw=value)


def _requested(call: Any) -> ToolCall:
    """A tool call a completion asks for (the model's request: nothing ran it, so no result)."""
    custom = getattr(call, "custom", None)
    if custom is not None:  # a custom tool takes free text
        return ToolCall(custom.name, {"input": custom.input}, id=call.id, step=1)
    name, text = call.function.name, call.function.arguments
    try:
        arguments = json.loads(text) if text.strip() else {}
    except ValueError:
        raise TargetError(f"tool call {name!r} has invalid JSON arguments: {shorten(text, 200, '...')}") from None
    if not isinstance(arguments, dict):
        raise TargetError(f"tool call {name!r} has arguments that are not an object: {shorten(text, 200, '...')}")
    return ToolCall(name, arguments, id=call.id, step=1)
