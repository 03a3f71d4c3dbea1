"""A model's answer (:class:`Completion`), and how each source of one becomes one: litellm's
answer, an OpenAI chat-completion JSON answer (the direct route), a disk-cache entry."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.data import ToolCall, Usage
from . import prices
from .litellm_route import response_usage
from .wire import parse_tool_call


@dataclass
class Completion:
    """One model answer. ``usage`` is None for a cache hit (nothing was spent)."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    raw: Any = None  # the answer as received (litellm's ModelResponse or the JSON), or the cache entry
    cached: bool = False
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1
    key: str | None = None  # the cache key, when the call was cacheable

    def assistant_message(self) -> dict[str, Any]:
        """This answer as an OpenAI assistant message, to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": t.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": t.name, "arguments": json.dumps(t.arguments)},
                }
                for i, t in enumerate(self.tool_calls)
            ]
        return message


def from_entry(entry: Mapping[str, Any] | None, model: str, key: str) -> Completion | None:
    """The cached answer, or None (a miss) for an entry of any other shape."""
    if entry is None:
        return None
    text, calls, finish = entry.get("text"), entry.get("tool_calls") or [], entry.get("finish_reason")
    if not isinstance(text, str) or not isinstance(calls, list) or not isinstance(finish, str | None):
        return None
    tool_calls = []
    for call in calls:
        if not isinstance(call, dict):
            return None
        name, arguments, call_id = call.get("name"), call.get("arguments") or {}, call.get("id")
        if not (isinstance(name, str) and isinstance(arguments, dict) and isinstance(call_id, str | None)):
            return None
        tool_calls.append(ToolCall(name, arguments, id=call_id))
    return Completion(text, tool_calls, raw=entry, cached=True, model=model, finish_reason=finish, attempts=0, key=key)


def from_litellm(litellm: Any, response: Any) -> Completion:
    """A litellm answer as a Completion (text, tool calls, usage, finish reason)."""
    choice = response.choices[0]
    return Completion(
        text=choice.message.content or "",
        tool_calls=[
            parse_tool_call(c.function.name, c.function.arguments or "{}", c.id, strict=False)
            for c in getattr(choice.message, "tool_calls", None) or []
        ],
        usage=response_usage(litellm, response),
        raw=response,
        finish_reason=getattr(choice, "finish_reason", None),
    )


def from_json(answer: dict[str, Any], asked: str) -> Completion:
    """An OpenAI chat-completion JSON answer as a Completion, read and priced as litellm does:
    by the answer's model, then the model ``asked`` for."""
    choice = _mapping(answer["choices"][0])
    message, data = _mapping(choice.get("message")), _mapping(answer.get("usage"))
    prompt, completion = int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0)
    models = [m for m in (answer.get("model"), asked) if isinstance(m, str) and m]
    usage = Usage(prompt, completion, int(data.get("total_tokens") or prompt + completion), prices.cost(models, data))
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return Completion(
        text=message.get("content") or "",
        tool_calls=[
            parse_tool_call(f.get("name"), f.get("arguments") or "{}", c.get("id"), strict=False)
            for c in calls
            if isinstance(f := c.get("function") or {}, dict)
        ],
        usage=usage,
        raw=answer,
        finish_reason=choice.get("finish_reason"),
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
