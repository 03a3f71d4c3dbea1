"""Between specrun and the OpenAI Agents SDK's items, for the ``openai-agents`` adapter.

A case's messages become the SDK's input items (the Responses-API shape its ``Runner.run``
takes); a run's items (tool calls, their outputs, the model's responses) become specrun's
evidence. Nothing here imports the SDK at module level: a name it needs is imported inside the
function, which runs only once the user's code has imported the SDK.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from specrun.plugin import Message, TargetError, ToolCall, Usage

_CALL = ("tool_call_item", "handoff_call_item")
_OUTPUT = ("tool_call_output_item", "handoff_output_item")
_NOT_ARGUMENTS = frozenset({"id", "call_id", "type", "status", "name", "provider_data"})


# -- specrun messages in -----------------------------------------------------------------------


def input_items(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """``messages`` as SDK input items: text or content-part messages, an assistant's tool
    calls as ``function_call`` items and ``tool`` messages as their ``function_call_output``."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.text}
            )
            continue
        if message.role != "assistant":
            items.append({"role": message.role, "content": _content(message)})
            continue
        if message.text or not message.tool_calls:
            items.append({"role": "assistant", "content": message.text})
        for call in message.tool_calls or []:
            function = call.get("function") or {}
            arguments = function.get("arguments", "{}")
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id") or "",
                    "name": function.get("name") or "",
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                }
            )
    return items


def _content(message: Message) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    return [_part(part) for part in message.content]


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image":
        return {"type": "input_image", "image_url": Message.part_url(part), "detail": "auto"}
    if kind == "file":
        url = Message.part_url(part)
        name = part.get("name") or (Path(part["path"]).name if part.get("path") else None)
        file: dict[str, Any] = {"type": "input_file"}
        if url.startswith("data:"):
            file["file_data"] = url
        else:
            file["file_url"] = url
        if name:
            file["filename"] = name
        return file
    raise TargetError(f"the OpenAI Agents SDK takes text, image and file parts, not a {kind!r} part")


# -- a run's items out -------------------------------------------------------------------------


def _get(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, Mapping) else getattr(raw, key, None)


def turn_of(run_input: Any) -> int:
    """The user turn a run answered: the user messages in its input (a text input is one)."""
    if isinstance(run_input, str):
        return 1
    return max(1, sum(1 for item in run_input or () if _get(item, "role") == "user"))


def final_content(output: Any) -> Any:
    """A run's ``final_output`` as a Response's content: text, or structured output as JSON data."""
    if output is None or isinstance(output, str | int | float | bool | list | dict):
        return output
    if hasattr(output, "model_dump"):  # a pydantic model: the agent's output_type
        return output.model_dump(mode="json")
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return json.loads(json.dumps(dataclasses.asdict(output), default=str))
    return str(output)


def usage_of(raw_responses: Iterable[Any]) -> Usage | None:
    """The tokens of a run's model responses, added up (None when it has none: unknown)."""
    responses = list(raw_responses)
    if not responses:
        return None
    total = Usage()
    for response in responses:
        usage = getattr(response, "usage", None)
        if usage is not None:
            total.add(Usage(usage.input_tokens, usage.output_tokens, usage.total_tokens))
    return total


def _arguments(raw: Any) -> dict[str, Any]:
    text = _get(raw, "arguments")
    if isinstance(text, str):
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:  # the SDK failed the call too: kept as the model sent it
            return {"_raw": text}
        return value if isinstance(value, dict) else {"_value": value}
    if isinstance(raw, Mapping):  # a hosted tool's call: its own fields are its arguments
        fields = dict(raw)
    elif hasattr(raw, "model_dump"):
        fields = raw.model_dump(mode="json", exclude_none=True)
    else:
        return {}
    return {key: value for key, value in fields.items() if key not in _NOT_ARGUMENTS}


def _result(item: Any) -> Any:
    """What the tool returned, kept as is when it is JSON data, else the text the model got."""
    if not hasattr(item, "output"):  # a handoff's output item has only the model's text
        return _get(item.raw_item, "output")
    try:
        json.dumps(item.output, allow_nan=False)
    except (TypeError, ValueError):
        return _get(item.raw_item, "output")
    return item.output


def _steps(raw_responses: list[Any]) -> dict[str, int]:
    """Which model response (1, 2, ... within the run) issued each call id."""
    steps: dict[str, int] = {}
    for step, response in enumerate(raw_responses, start=1):
        for out in getattr(response, "output", None) or ():
            call_id = _get(out, "call_id") or _get(out, "id")
            if isinstance(call_id, str):
                steps.setdefault(call_id, step)
    return steps


def tool_calls(run: Any, failed: set[str] | None = None) -> list[ToolCall]:
    """Every tool call of a run (a ``RunResult`` or an exception's ``run_data``), in order, with
    its result, status, step (the model response that issued it) and turn. ``failed`` holds
    the call ids whose failure the SDK reported to the adapter's ``tool_error_formatter``."""
    failed = failed or set()
    steps = _steps(list(run.raw_responses))
    turn = turn_of(run.input)
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for item in run.new_items:
        kind = getattr(item, "type", None)
        raw = getattr(item, "raw_item", None)
        call_id = _get(raw, "call_id") or _get(raw, "id")
        call_id = call_id if isinstance(call_id, str) else None
        if kind in _CALL:
            name = getattr(item, "tool_name", None) or _get(raw, "name") or _get(raw, "type") or "tool"
            call = ToolCall(str(name), _arguments(raw), id=call_id, step=steps.get(call_id or ""), turn=turn)
            calls.append(call)
            if call_id:
                by_id[call_id] = call
        elif kind in _OUTPUT and call_id in by_id:
            call = by_id[call_id]
            call.result = _result(item)
            call.status = "ok" if kind == "handoff_output_item" else _status(call, item, failed)
    for step, response in enumerate(run.raw_responses, start=1):  # asked for, never run: a run that failed
        for out in getattr(response, "output", None) or ():
            call_id = _get(out, "call_id")
            if _get(out, "type") == "function_call" and isinstance(call_id, str) and call_id not in by_id:
                calls.append(ToolCall(str(_get(out, "name")), _arguments(out), id=call_id, step=step, turn=turn))
    calls.sort(key=lambda c: c.step or 0)
    return calls


def _status(call: ToolCall, item: Any, failed: set[str]) -> Literal["ok", "error"] | None:
    """``error`` when the SDK reported the call failed (an exception, a timeout), ``ok`` when
    it would have and did not (a function tool with the SDK's own failure handling), else None:
    a tool's own ``failure_error_function`` answers the model in the tool's name, unseen."""
    if call.id in failed:
        return "error"
    try:
        from agents.tool import (
            FunctionTool,
            default_tool_error_function,
            default_tool_timeout_error_message,
            resolve_function_tool_failure_error_function,
        )
    except ImportError:
        return None
    agent = getattr(item, "agent", None)
    tool = next(
        (t for t in getattr(agent, "tools", None) or () if isinstance(t, FunctionTool) and t.name == call.name), None
    )
    if tool is None:
        return None
    timeout = tool.timeout_seconds
    if timeout is not None and tool.timeout_error_function is None:
        if _get(item.raw_item, "output") == default_tool_timeout_error_message(
            tool_name=tool.name, timeout_seconds=timeout
        ):
            return "error"
    elif timeout is not None:
        return None  # the tool's own timeout message: a timeout cannot be told from an answer
    return "ok" if resolve_function_tool_failure_error_function(tool) is default_tool_error_function else None


def pending_approvals(run: Any) -> list[str]:
    """Why a run stopped short: tools waiting for a human's approval, which specrun never gives."""
    names = [getattr(item, "tool_name", None) or "tool" for item in getattr(run, "interruptions", None) or ()]
    if not names:
        return []
    return [f"the run stopped for approval of {', '.join(names)}: specrun approves no tool call, so none of them ran"]
