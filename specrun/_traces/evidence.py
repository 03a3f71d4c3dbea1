"""What a case's spans say the agent did: tool calls, model usage, and the span tree recorded
with its result.

- A tool call is a span with ``gen_ai.operation.name`` = ``execute_tool`` (GenAI semantic
  conventions: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``,
  ``gen_ai.tool.call.result``) or ``openinference.span.kind`` = ``TOOL`` (OpenInference:
  ``tool.name``, arguments in ``input.value``, else in ``tool.parameters`` when that is not a
  JSON Schema, result in ``output.value``). Status ERROR: the call failed (``status: error``).
  Calls are in the order they started; a call's ``step`` counts the model calls that ended
  before it started (calls of one step were issued by one model response).
- Usage is the sum over model-call spans (``chat``, ``text_completion``, ``generate_content``;
  OpenInference ``LLM``): ``gen_ai.usage.input_tokens``/``output_tokens`` (or the older
  ``prompt_tokens``/``completion_tokens``), ``llm.token_count.*``. Agent spans that repeat the
  totals are not model calls, so nothing is counted twice.
- Merged with what the target reported (``merge``): a traced call and a reported one are the
  same call when their ids are equal, else (either has no id) when name and arguments are, the
  n-th such traced call matching the n-th such reported one. A match is one call, the reported
  fields first and the trace filling what they lack; the rest of either side is added. A
  target's usage wins over the trace's (the same tokens, counted once).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from .._core.data import Response, ToolCall, Usage
from .spans import ERROR, OK, Span

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
MAX_RECORD_SPANS = 200
MAX_RECORD_CHARS = 64 * 1024
MAX_SHOWN_VALUE = 300
MAX_SHOWN_ATTRIBUTES = 24
_STATUS = {OK: "ok", ERROR: "error"}


def is_tool(span: Span) -> bool:
    a = span.attributes
    return a.get("gen_ai.operation.name") == "execute_tool" or a.get("openinference.span.kind") == "TOOL"


def is_model(span: Span) -> bool:
    a = span.attributes
    return a.get("gen_ai.operation.name") in MODEL_OPERATIONS or a.get("openinference.span.kind") == "LLM"


def _parsed(value: Any) -> Any:
    """JSON text as its object or array; any other value as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _arguments(a: dict[str, Any]) -> Any:
    if "gen_ai.tool.call.arguments" in a:
        value = _parsed(a["gen_ai.tool.call.arguments"])
    elif "input.value" in a:
        value = _parsed(a["input.value"])
    else:
        value = _parsed(a.get("tool.parameters"))
        if isinstance(value, dict) and value.get("type") == "object" and "properties" in value:
            value = None  # the tool's JSON Schema (its definition), not the call's arguments
    return {} if value is None else value


def _tool_name(span: Span) -> str:
    a = span.attributes
    name = a.get("gen_ai.tool.name") or a.get("tool.name")
    if isinstance(name, str) and name:
        return name
    return span.name.removeprefix("execute_tool ").strip() or span.name


def tool_calls(spans: list[Span], turn: int | None = None) -> list[ToolCall]:
    """The tool calls among ``spans`` (see the module docstring), in the order they started."""
    tools = sorted((s for s in spans if is_tool(s)), key=lambda s: s.start)
    if not tools:
        return []
    model_ends = sorted(s.end for s in spans if is_model(s))
    calls = []
    for span in tools:
        a = span.attributes
        result = a.get("gen_ai.tool.call.result", a.get("output.value"))
        call_id = a.get("gen_ai.tool.call.id", a.get("tool_call.id"))
        step = sum(1 for end in model_ends if end <= span.start) if model_ends else None
        calls.append(
            ToolCall(
                name=_tool_name(span),
                arguments=_arguments(a),
                result=_parsed(result),
                id=str(call_id) if call_id not in (None, "") else None,
                status="error" if span.status == ERROR else "ok",
                step=step or None,
                turn=turn,
            )
        )
    return calls


def _count(a: dict[str, Any], *keys: str) -> int:
    for key in keys:
        value = a.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return 0


def usage(spans: list[Span]) -> Usage | None:
    """The tokens of the model-call spans, or None when none says."""
    total = Usage()
    said = False
    for span in spans:
        if not is_model(span):
            continue
        a = span.attributes
        prompt = _count(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
        completion = _count(
            a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"
        )
        whole = _count(a, "llm.token_count.total") or prompt + completion
        if whole:
            said = True
            total.add(Usage(prompt, completion, whole))
    return total if said else None


def _same_arguments(one: Any, other: Any) -> bool:
    return _parsed(one) == _parsed(other)


def merge(reported: list[ToolCall] | None, traced: list[ToolCall]) -> list[ToolCall]:
    """The target's calls and the trace's as one list, each call once (see the module docstring)."""
    if not reported:
        return list(traced)
    merged = list(reported)
    free = list(range(len(reported)))
    for call in traced:
        match = next((i for i in free if call.id is not None and reported[i].id == call.id), None)
        if match is None:
            match = next(
                (
                    i
                    for i in free
                    if (call.id is None or reported[i].id is None)
                    and reported[i].name == call.name
                    and _same_arguments(reported[i].arguments, call.arguments)
                ),
                None,
            )
        if match is None:
            merged.append(call)
            continue
        free.remove(match)
        mine = reported[match]
        merged[match] = replace(
            mine,
            result=mine.result if mine.result is not None else call.result,
            id=mine.id or call.id,
            status=mine.status or call.status,
            step=mine.step if mine.step is not None else call.step,
            turn=mine.turn if mine.turn is not None else call.turn,
        )
    return merged


def apply(response: Response, spans: list[Span], turn: int) -> Response:
    """``response`` with the tool calls and usage its turn's ``spans`` add (a trace that has
    spans reports its calls, none among them included: ``tool_calls=[]`` means none)."""
    reported = response.tool_calls if response.tools_reported else None
    response.tool_calls = merge(reported, tool_calls(spans, turn))
    if response.usage is None:
        response.usage = usage(spans)
    return response


# -- the recorded trace ---------------------------------------------------------------------------


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_SHOWN_VALUE else value[:MAX_SHOWN_VALUE] + "…"
    if isinstance(value, bool | int | float) or value is None:
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_SHOWN_VALUE else text[:MAX_SHOWN_VALUE] + "…"


def record(spans: list[Span], root_id: int) -> tuple[list[dict[str, Any]], int]:
    """The span tree as the result records it: the first ``MAX_RECORD_SPANS`` spans by start
    time, each with its ids (hex), parent (None for the agent's top-level spans), start (ms
    after the trace's first span), duration, status and attributes (each value cut at
    ``MAX_SHOWN_VALUE`` characters; past ``MAX_RECORD_CHARS`` in all, none); and how many
    spans were left out."""
    ordered = sorted(spans, key=lambda s: s.start)
    kept, left = ordered[:MAX_RECORD_SPANS], max(0, len(ordered) - MAX_RECORD_SPANS)
    origin = kept[0].start if kept else 0
    chars = 0
    out = []
    for span in kept:
        item: dict[str, Any] = {
            "name": _shown(span.name),
            "span_id": f"{span.span_id:016x}",
            "parent_id": None if span.parent_id in (0, root_id) else f"{span.parent_id:016x}",
            "start_ms": round((span.start - origin) / 1e6, 3),
            "duration_ms": round(max(0, span.end - span.start) / 1e6, 3),
        }
        if span.status in _STATUS:
            item["status"] = _STATUS[span.status]
        if span.message:
            item["message"] = _shown(span.message)
        attributes = span.attributes
        if chars < MAX_RECORD_CHARS and attributes:
            if len(attributes) > MAX_SHOWN_ATTRIBUTES:
                attributes = dict(list(attributes.items())[:MAX_SHOWN_ATTRIBUTES])
            item["attributes"] = {k[:MAX_SHOWN_VALUE]: _shown(v) for k, v in attributes.items()}
            chars += min(span.size, len(attributes) * (MAX_SHOWN_VALUE + 40))  # at most what was shown
        out.append(item)
    return out, left
