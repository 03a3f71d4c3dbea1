"""Tool-call assertions: tool_called, tool_not_called, tool_order.

Names match exactly by default, never by substring; ``match: suffix`` also accepts a name that
ends with the given one after a namespace separator (``.``, ``/``, ``:`` or ``__``), as in
``github.create_issue`` or ``mcp__github__create_issue``; a single ``_`` is part of a name.
Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, ToolCall, Verdict

from ._common import NAME_LIST_SCHEMA, as_list, is_subset, show

SEPARATORS = (".", "/", ":", "__")
_MATCH = {
    "enum": ["exact", "suffix"],
    "x-kind": "match mode",
    "description": "exact (default), or suffix after a namespace separator (. / : __).",
}
_ARGUMENTS = {
    "type": "object",
    "description": "Arguments the call must have (a deep subset match).",
}


def name_matches(actual: str, wanted: str, mode: str = "exact") -> bool:
    """``actual`` is ``wanted``, or (suffix mode) ends with it right after a namespace separator."""
    if actual == wanted:
        return True
    if mode != "suffix" or not actual.endswith(wanted):
        return False
    return actual[: -len(wanted)].endswith(SEPARATORS)


def _arguments(call: ToolCall) -> Any:
    args = call.arguments
    if isinstance(args, str):  # some agents pass the raw JSON text of the arguments
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def _matching(check: Check, params: dict[str, Any]) -> list[ToolCall]:
    names = as_list(params["name"]) if "name" in params else None
    mode = params.get("match", "exact")
    wanted_args = params.get("arguments")
    return [
        call
        for call in check.response.tool_calls
        if (names is None or any(name_matches(call.name, n, mode) for n in names))
        and (wanted_args is None or is_subset(wanted_args, _arguments(call)))
    ]


def _describe_calls(calls: list[ToolCall]) -> str:
    if not calls:
        return "no tools were called"
    return "calls: " + ", ".join(f"{c.name}({show(_arguments(c), 80)})" for c in calls)


def _wanted(params: dict[str, Any]) -> str:
    names = as_list(params.get("name", []))
    text = " or ".join(names) if names else "any tool"
    if params.get("match") == "suffix":
        text += " (by suffix)"
    if "arguments" in params:
        text += f" with arguments {show(params['arguments'], 120)}"
    return text


class ToolCalled(AssertionType):
    name = "tool_called"
    description = "The agent called the tool (a list: any of them), optionally with arguments, times."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "name": {
                **NAME_LIST_SCHEMA,
                "description": "The tool name, or a list meaning any of them.",
            },
            "match": _MATCH,
            "arguments": _ARGUMENTS,
            "times": {
                "type": "integer",
                "minimum": 0,
                "description": "Exactly this many matching calls.",
            },
        },
        "required": ["name"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        calls = check.response.tool_calls
        count = len(_matching(check, params))
        times = params.get("times")
        passed = count == times if times is not None else count > 0
        wanted = f"{_wanted(params)}" + (f" exactly {times} time(s)" if times is not None else "")
        return Verdict(
            passed,
            f"expected a call to {wanted}; matched {count}; {_describe_calls(calls)}",
            expected=params,
            actual=[c.to_dict() for c in calls],
            details={"matched": count},
        )


class ToolNotCalled(AssertionType):
    name = "tool_not_called"
    description = "The agent did not call the tool (no name: no tool at all)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "name": {**NAME_LIST_SCHEMA, "description": "The tool name, or a list: none of them."},
            "match": _MATCH,
            "arguments": {**_ARGUMENTS, "description": "Only calls with these arguments count."},
        },
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        calls = check.response.tool_calls
        matched = _matching(check, params)
        return Verdict(
            not matched,
            f"expected no call to {_wanted(params)}; matched {len(matched)}; {_describe_calls(calls)}",
            expected=params,
            actual=[c.to_dict() for c in calls],
            details={"matched": len(matched)},
        )


class ToolOrder(AssertionType):
    name = "tool_order"
    description = "The named tools were called in this order (other calls may come between)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "names": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            "match": _MATCH,
        },
        "required": ["names"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        names: list[str] = assertion.params["names"]
        mode = assertion.params.get("match", "exact")
        called = [c.name for c in check.response.tool_calls]
        position = 0
        for name in called:
            if position < len(names) and name_matches(name, names[position], mode):
                position += 1
        passed = position == len(names)
        said = (
            f"tools called in order {' → '.join(names)}"
            if passed
            else f"expected tools in order {' → '.join(names)}; {names[position]!r} not found after"
            f" {' → '.join(names[:position]) or 'the start'}"
        )
        return Verdict(
            passed,
            f"{said}; called: {', '.join(called) or 'nothing'}",
            expected=names,
            actual=called,
        )
