"""The pydantic-ai adapter: a ``pydantic_ai`` agent object run by specrun itself, and the
``AgentRunResult`` a function returns, read into a ``Response``.

Registered by the family's register_adapters hook. pydantic-ai is imported only inside the
methods (an optional extra: ``pip install 'specrun[pydantic-ai]'``).

What is read from the framework's messages (``result.new_messages()``): every function tool call
(``ToolCallPart``) and native tool call, paired by call id with its return; a return whose
``outcome`` is not ``success`` (a ``ModelRetry``, a ``ToolFailed``, a denial) or a
``RetryPromptPart`` makes the call an ``error``. ``step`` is the number of the model response
within the run that issued it, ``turn`` the number of user prompts in the conversation so far.
The output tool of a structured ``output_type`` is how pydantic-ai returns its output, not a
tool the agent used: it is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specrun.plugin import Adapter, Context, Message, Response, Session, TargetError, ToolCall, Usage, run_blocking

_FAILED = ("failed", "retried", "denied", "interrupted")  # a return's outcomes that are not a result
_OPTIONS = ("model_settings", "usage_limits", "deps")


class PydanticAIAdapter(Adapter):
    """Runs a ``pydantic_ai`` agent (``target: python:module:agent``) with the case's conversation
    as its message history, and reads an ``AgentRunResult`` a function returned."""

    name = "pydantic-ai"
    description = "pydantic-ai agents (pydantic_ai.Agent) and the AgentRunResult a function returns."
    modules = ("pydantic_ai",)

    @classmethod
    def claims(cls, agent: Any) -> bool:
        from pydantic_ai.agent import AbstractAgent

        return isinstance(agent, AbstractAgent)

    def session(self, agent: Any, context: Context) -> Session:
        return PydanticAISession(agent, context)

    def unwrap(self, value: Any) -> Response | None:
        from pydantic_ai import AgentRunResult

        if not isinstance(value, AgentRunResult):
            return None
        prompts = sum(_has_prompt(m) for m in value.all_messages())
        return read_run(value.new_messages(), max(1, prompts), value)


class PydanticAISession(Session):
    """One conversation with the agent: the framework's own message history (tool calls and
    returns included) is kept from turn to turn, so each turn continues it."""

    def __init__(self, agent: Any, context: Context):
        self.agent = agent
        self.context = context
        self.history: list[Any] = []  # the framework's messages so far
        self.seen = 0  # how many of specrun's messages they stand for
        self.options: dict[str, Any] | None = None  # made once: one deps object for the whole conversation

    async def send(self, messages: list[Message]) -> Response:
        from pydantic_ai import capture_run_messages

        if messages and messages[-1].role == "assistant":
            # pydantic-ai would hand back that message as its output without running the agent.
            raise TargetError("the conversation ends with an assistant message: the agent has nothing to answer")
        new = messages[self.seen :]
        if self.history and new and new[0].role == "assistant":
            new = new[1:]  # the agent's own last reply, as the conversation recorded it
        last = new[-1] if new and new[-1].role == "user" else None
        history = self.history + to_history(new[:-1] if last is not None else new)
        prompt = user_content(last) if last is not None else None
        if self.options is None:
            self.options = run_options(self.agent, self.context.options)
        turn = max(1, sum(m.role == "user" for m in messages))
        with capture_run_messages() as captured, self.agent.using_thread_executor(run_blocking.executor):
            try:
                result = await self.run(prompt, history, turn)
            except Exception as exc:
                # What the agent did before it failed (its calls, its tokens) stays on the case.
                failed = TargetError(f"agent error: {type(exc).__name__}: {exc}")
                failed.response = read_run(captured[len(history) :], turn)
                raise failed from exc
        self.history, self.seen = result.all_messages(), len(messages)
        return read_run(result.new_messages(), turn, result)

    async def run(self, prompt: Any, history: list[Any], turn: int) -> Any:
        """One run of the agent, node by node: before each node runs (a model response's tool
        calls before they are made), what the run did so far goes to ``Context.progress``, which
        stops it once the case is over its limits. An agent with an ``event_stream_handler`` of
        its own is run whole by ``agent.run``, which alone calls that handler."""
        assert self.options is not None
        if getattr(self.agent, "event_stream_handler", None) is not None:
            return await self.agent.run(prompt, message_history=history or None, **self.options)
        async with self.agent.iter(prompt, message_history=history or None, **self.options) as run:
            outputs = _output_tools(run)
            async for _node in run:
                self.context.progress(read_run(run.new_messages(), turn, outputs=outputs))
        return run.result


def run_options(agent: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``agent.run`` that a case's ``options`` give: ``model_settings``
    (a mapping), ``usage_limits`` (``UsageLimits`` fields) and ``deps`` (validated into the
    agent's ``deps_type``). Other keys are the case's own (``connector``, ...) and not passed."""
    given = {key: options[key] for key in _OPTIONS if options.get(key) is not None}
    for key in ("model_settings", "usage_limits"):
        if key not in given:
            continue
        if not isinstance(given[key], Mapping):
            raise TargetError(f"options.{key} must be a mapping, not {type(given[key]).__name__}")
        given[key] = dict(given[key])
    if "usage_limits" in given:
        from pydantic_ai.usage import UsageLimits

        try:
            given["usage_limits"] = UsageLimits(**given["usage_limits"])
        except TypeError as exc:
            raise TargetError(f"options.usage_limits: {exc}") from None
    if "deps" in given and agent.deps_type is not type(None):
        import pydantic

        wanted = getattr(agent.deps_type, "__name__", str(agent.deps_type))
        try:
            given["deps"] = pydantic.TypeAdapter(agent.deps_type).validate_python(given["deps"])
        except (pydantic.ValidationError, pydantic.PydanticUserError) as exc:
            raise TargetError(f"options.deps cannot be made a {wanted} (the agent's deps_type): {exc}") from None
    return given


# -- specrun's conversation as the framework's message history ----------------------------------


def to_history(messages: Iterable[Message]) -> list[Any]:
    """Messages as pydantic-ai's: system, user and tool messages become parts of a
    ``ModelRequest``, an assistant message a ``ModelResponse`` (its text and tool calls)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    history: list[Any] = []
    parts: list[Any] = []
    called: dict[str, str] = {}  # call id -> tool name, for the tool messages answering them
    for message in messages:
        if message.role == "assistant":
            if parts:
                history.append(ModelRequest(parts=parts))
                parts = []
            answer: list[Any] = [TextPart(message.text)] if message.text else []
            for call in message.tool_calls or []:
                function = call.get("function") or call
                name, args, call_id = str(function.get("name", "")), function.get("arguments"), call.get("id")
                answer.append(ToolCallPart(name, args, call_id) if call_id else ToolCallPart(name, args))
                called[answer[-1].tool_call_id] = name
            history.append(ModelResponse(parts=answer))
        elif message.role == "system":
            parts.append(SystemPromptPart(message.text))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            name = message.name or called.get(call_id, "")
            parts.append(ToolReturnPart(name, message.text, call_id) if call_id else ToolReturnPart(name, message.text))
        else:
            parts.append(UserPromptPart(user_content(message)))
    if parts:
        history.append(ModelRequest(parts=parts))
    return history


def user_content(message: Message) -> Any:
    """A user message's content as pydantic-ai's: its text, or text and files (``BinaryContent``
    for a local file or inline data, ``ImageUrl``/``AudioUrl``/``DocumentUrl`` for a URL)."""
    if isinstance(message.content, str):
        return message.content
    from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl

    content: list[Any] = []
    for part in message.content:
        kind, mime = part.get("type"), part.get("mime")
        url = str(part.get("url") or part.get("source") or "")
        if kind == "text":
            content.append(str(part.get("text", "")))
        elif (data := Message.part_bytes(part)) is not None:  # a local file or inline data
            content.append(BinaryContent(data, media_type=mime or "application/octet-stream"))
        elif url.startswith("data:"):
            content.append(BinaryContent.from_data_uri(url))
        elif url:
            made = {"image": ImageUrl, "audio": AudioUrl}.get(str(kind), DocumentUrl)
            content.append(made(url, media_type=mime) if mime else made(url))
        else:
            raise TargetError(f"a {kind} part has no source, url or data")
    return content


# -- what the agent did, from the framework's messages ------------------------------------------


def read_run(made: list[Any], turn: int, result: Any = None, outputs: frozenset[str] = frozenset()) -> Response:
    """The ``Response`` of one run of user turn ``turn``: ``made`` are the messages the run added,
    ``result`` its ``AgentRunResult``; None when the run failed (or is under way), and a call it
    left unanswered then failed with it. ``outputs``: the names of the run's output tools."""
    if (output_tool := _output_tool(result)) is not None:
        outputs = outputs | {output_tool}
    calls: list[ToolCall] = []
    pending: dict[str, list[ToolCall]] = {}  # call id -> calls not answered yet (a model may reuse an id)
    usage = Usage()
    step = 0
    for message in made:
        if message.kind == "response":
            step += 1
            usage.add(_usage(message.usage))
        for part in message.parts:
            kind = part.part_kind
            if kind in ("tool-call", "builtin-tool-call") and part.tool_name not in outputs:
                call = ToolCall(part.tool_name, part.args_as_dict(), id=part.tool_call_id, step=step, turn=turn)
                calls.append(call)
                pending.setdefault(part.tool_call_id, []).append(call)
            elif kind in ("tool-return", "builtin-tool-return", "retry-prompt") and pending.get(part.tool_call_id):
                call = pending[part.tool_call_id].pop(0)
                call.result = _jsonable(part.content)
                failed = kind == "retry-prompt" or getattr(part, "outcome", "success") in _FAILED
                call.status = "error" if failed else "ok"
    if result is None:
        for call in calls:
            call.status = call.status or "error"
        return Response(None, tool_calls=calls, usage=usage)
    output = result.output
    content = output if isinstance(output, str) else _jsonable(output)
    return Response(content, tool_calls=calls, usage=_usage(result.usage), raw=result)


def _has_prompt(message: Any) -> bool:
    return message.kind == "request" and any(p.part_kind == "user-prompt" for p in message.parts)


def _usage(usage: Any) -> Usage:
    cost = getattr(usage, "cost", None)
    return Usage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        cost=float(cost) if cost is not None else None,
    )


def _jsonable(value: Any) -> Any:
    import pydantic_core

    return pydantic_core.to_jsonable_python(value, fallback=str)


def _output_tools(run: Any) -> frozenset[str]:
    # The output tools of a run under way (a structured ``output_type``): a call to one is how the
    # run ends, not a tool call. The run keeps them on its graph's deps only.
    toolset = getattr(getattr(getattr(run.ctx, "deps", None), "output_schema", None), "toolset", None)
    return frozenset(getattr(toolset, "processors", None) or ())


def _output_tool(result: Any) -> str | None:
    # The output tool that returned a structured output: pydantic-ai keeps its name on the result
    # only (and serializes it as ``output_tool_name``); None for text output or a failed run.
    return getattr(result, "_output_tool_name", None)
