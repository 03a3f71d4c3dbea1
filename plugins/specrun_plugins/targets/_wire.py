"""OpenAI chat-completions wire format: specrun messages out, replies in.

Shared by the targets that speak the format (``http`` here; a model target may reuse it).
"""

from __future__ import annotations

import json
from typing import Any

from specrun.plugin import Response, TargetError, ToolCall, Usage, excerpt, openai_messages

__all__ = ["excerpt", "openai_messages", "parse_openai_reply", "parse_tool_call"]


def parse_tool_call(name: Any, arguments: Any, call_id: Any = None) -> ToolCall:
    """A ToolCall from a name and arguments given as a mapping or a JSON string."""
    if not isinstance(name, str) or not name:
        raise TargetError(f"a tool call has no name: {excerpt(json.dumps(name))}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise TargetError(f"tool call {name!r} has invalid JSON arguments: {excerpt(arguments)}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TargetError(f"tool call {name!r} has arguments that are not an object: {excerpt(json.dumps(arguments))}")
    return ToolCall(name=name, arguments=arguments, id=call_id if isinstance(call_id, str) else None)


def parse_openai_reply(data: Any) -> Response:
    """A Response from a chat-completions reply: first choice's text, tool calls and usage."""
    try:
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        raise TargetError(f"reply has no choices[0].message: {excerpt(json.dumps(data))}") from None
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(parse_tool_call(function.get("name"), function.get("arguments"), call.get("id")))
    usage = None
    raw_usage = data.get("usage")
    if isinstance(raw_usage, dict):
        cost = raw_usage.get("cost")
        usage = Usage(
            prompt_tokens=raw_usage.get("prompt_tokens") or 0,
            completion_tokens=raw_usage.get("completion_tokens") or 0,
            total_tokens=raw_usage.get("total_tokens") or 0,
            cost=float(cost) if isinstance(cost, int | float) else None,
        )
    return Response(content=content, tool_calls=calls, usage=usage, raw=data)
