"""LangChain messages both ways, for the LangGraph adapter: specrun's conversation in as
LangChain's own message types, and the messages a run added read back as a ``Response`` (the
final text, every tool call with its result and status, token usage).

It imports ``langchain_core`` at its top, so only an adapter's methods import it (the leading
underscore keeps the adapters' registrar from loading it).
"""

from __future__ import annotations

import base64
import urllib.parse
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, convert_to_messages

from specrun.plugin import Message, Response, TargetError, ToolCall, Usage


def to_langchain(messages: list[Message]) -> list[BaseMessage]:
    """``messages`` as LangChain messages (attachments as its standard content blocks), each with
    a new id: the messages a run adds are then told from these whatever the graph does with ids."""
    converted = []
    for number, message in enumerate(messages, 1):
        data = message.to_dict()
        if not isinstance(message.content, str):
            data["content"] = [_block(part) for part in message.content]
        if message.tool_calls:
            data["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
        try:
            [made] = convert_to_messages([data])
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:  # pydantic's ValidationError too
            raise TargetError(f"message {number} ({message.role}) cannot be given to LangChain: {exc}") from None
        made.id = str(uuid.uuid4())
        converted.append(made)
    return converted


def _tool_call(call: Any) -> Any:
    """A call as the chat wire format has it (``function.arguments``, which LangChain reads), or
    flat, as specrun reports one (``name``, ``arguments``, ``id``), in LangChain's shape."""
    if isinstance(call, dict) and "function" not in call and "arguments" in call:
        return {"name": call.get("name"), "args": call["arguments"], "id": call.get("id"), "type": "tool_call"}
    return call


def _block(part: dict[str, Any]) -> dict[str, Any]:
    """A specrun content part as a LangChain standard block (``text``, ``image``, ``audio``, ``file``)."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    block: dict[str, Any] = {"type": kind}
    mime = part.get("mime")
    source = part.get("url") or part.get("source")
    if part.get("path"):  # a file:// part, resolved by the loader
        block["base64"] = base64.b64encode(Message.part_bytes(part) or b"").decode("ascii")
    elif part.get("data"):
        block["base64"] = part["data"]
    elif isinstance(source, str) and source.startswith("data:"):
        header, _, data = source[5:].partition(",")
        mime = mime or header.split(";")[0] or None
        encoded = header.endswith(";base64")
        block["base64"] = data if encoded else base64.b64encode(urllib.parse.unquote_to_bytes(data)).decode("ascii")
    elif source:
        block["url"] = str(source)
    else:
        raise TargetError(f"a {kind} part has no source, url or data")
    if mime:
        block["mime_type"] = mime
    if part.get("name"):
        block["extras"] = {"filename": part["name"]}
    return block


def read_turn(added: list[BaseMessage], turn: int | None, state: Mapping[str, Any] | None = None) -> Response:
    """The ``Response`` of one turn from the messages it ``added``, in order: each AI message is a
    model step (its calls share the step), a ``ToolMessage`` answers the call it names (``status``
    ``"error"`` when the tool failed), the text is the last AI or tool message's (a tool that
    returns directly ends the turn), and ``state`` may hold a ``structured_response`` (the
    content then) or an interrupt (its value is what the graph asks the user)."""
    answers = {m.tool_call_id: m for m in added if isinstance(m, ToolMessage)}
    calls: list[ToolCall] = []
    usage: Usage | None = None
    step = 0
    for message in added:
        if not isinstance(message, AIMessage):
            continue
        step += 1
        for call in message.tool_calls:
            answer = answers.get(call.get("id") or "")
            calls.append(
                ToolCall(
                    call["name"],
                    dict(call.get("args") or {}),
                    result=None if answer is None else answer.content,
                    id=call.get("id"),
                    status=None if answer is None else ("error" if answer.status == "error" else "ok"),
                    step=step,
                    turn=turn,
                )
            )
        for bad in message.invalid_tool_calls:  # arguments the model wrote but no JSON object: never run
            raw = {"_raw": bad.get("args")}
            calls.append(ToolCall(bad.get("name") or "", raw, bad.get("error"), bad.get("id"), "error", step, turn))
        if message.usage_metadata:
            used = message.usage_metadata
            usage = usage or Usage()
            usage.add(Usage(used["input_tokens"], used["output_tokens"], used["total_tokens"]))
    content: Any = next((str(m.text) for m in reversed(added) if isinstance(m, AIMessage | ToolMessage)), None)
    warnings = []
    state = state or {}
    if (structured := state.get("structured_response")) is not None:
        content = structured.model_dump(mode="json") if hasattr(structured, "model_dump") else structured
    if interrupts := state.get("__interrupt__"):
        values = [getattr(i, "value", i) for i in interrupts]
        content = values[0] if len(values) == 1 else values
    elif content is None:
        warnings.append("the graph added no AI message this turn")
    return Response(content, tool_calls=calls, usage=usage, warnings=warnings)


def read_returned(value: Any) -> Response | None:
    """What a function returned, when it is LangChain's: a state with ``messages`` (a graph's
    result), a list of messages, or one message. The turn is what follows the last human message."""
    state = value if isinstance(value, Mapping) else None
    messages = state.get("messages") if state is not None else [value] if isinstance(value, BaseMessage) else value
    if not isinstance(messages, list) or not messages or not all(isinstance(m, BaseMessage) for m in messages):
        return None
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    added = messages[humans[-1] + 1 :] if humans else messages
    return read_turn(added, len(humans) or None, state)
