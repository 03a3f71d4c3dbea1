"""The OpenAI chat-completions wire format: specrun messages out to models and HTTP agents,
their replies and tool calls back in.

Attachments (``file://`` parts, resolved by the loader to ``path`` and ``mime``) become data
URLs: images as ``image_url``, audio as ``input_audio``, other files as ``file`` parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._core.data import Message, Response, ToolCall, Usage
from .._core.errors import TargetError
from .._core.parts import part_url
from .._core.redact import redact
from .._report.display import shorten

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    url = part_url(part)
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "audio":
        if not url.startswith("data:"):
            raise TargetError(f"an audio part must be a local file or inline data, not {excerpt(url)}")
        mime, _, data = url[5:].partition(";base64,")
        return {
            "type": "input_audio",
            "input_audio": {"data": data, "format": _AUDIO_FORMATS.get(mime, "wav")},
        }
    name = part.get("name") or (Path(part["path"]).name if part.get("path") else None)
    file: dict[str, Any] = {"file_data": url}
    if name:
        file["filename"] = name
    return {"type": "file", "file": file}


def openai_messages(messages: Iterable[Message | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat-completions dicts (plain mappings pass through as they are)."""
    out = []
    for message in messages:
        if not isinstance(message, Message):
            out.append(dict(message))
            continue
        content = message.content
        data: dict[str, Any] = {
            "role": message.role,
            "content": content if isinstance(content, str) else [_part(p) for p in content],
        }
        for key in ("name", "tool_calls", "tool_call_id"):
            if getattr(message, key) is not None:
                data[key] = getattr(message, key)
        out.append(data)
    return out


def excerpt(text: str | bytes, limit: int = 200) -> str:
    """A short one-line excerpt for error messages, secrets masked first: once whitespace is
    collapsed or the text cut, a secret would no longer be recognised."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(redact(text).split())
    return shorten(text, limit + 3, "...")


def parse_tool_call(name: Any, arguments: Any, call_id: Any = None, *, strict: bool = True) -> ToolCall:
    """A ToolCall from a name and arguments given as a mapping or a JSON string.

    ``strict`` (an agent's reply) raises :class:`TargetError` for a call without a name or with
    arguments that are not a JSON object. Otherwise (a model's reply, judged by the checks) such
    arguments are kept as they came: ``{"_raw": text}`` or ``{"_value": value}``.
    """
    if strict and (not isinstance(name, str) or not name):
        raise TargetError(f"a tool call has no name: {excerpt(json.dumps(name))}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            if strict:
                raise TargetError(f"tool call {name!r} has invalid JSON arguments: {excerpt(arguments)}") from None
            arguments = {"_raw": arguments}
    elif isinstance(arguments, Mapping):
        arguments = dict(arguments)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        if strict:
            raise TargetError(
                f"tool call {name!r} has arguments that are not an object: {excerpt(json.dumps(arguments))}"
            )
        arguments = {"_value": arguments}
    return ToolCall(name=name or "", arguments=arguments, id=call_id if isinstance(call_id, str) else None)


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
