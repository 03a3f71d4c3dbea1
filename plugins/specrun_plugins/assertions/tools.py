"""Tool-call assertions: tool_called, tool_not_called, tool_order.

Names match exactly by default, never by substring; ``match: suffix`` also accepts a name that
ends with the given one after a namespace separator (``.``, ``/``, ``:`` or ``__``), as in
``github.create_issue`` or ``mcp__github__create_issue``; a single ``_`` is part of a name.

A target that reported no tool calls (a plain text reply: ``Response.tools_reported`` is False)
leaves every one of them undecided: an ``EvaluationError`` saying how to make it report them,
never a pass or a fail. ``status`` and ``turn`` narrow the calls counted; a call that does not
say its status (or turn) counts for neither value, and a verdict that would hinge on such calls
is an error too. Steps (``ToolCall.step``) order the calls: calls of one step were made in
parallel, so they have no order among themselves.
Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, EvaluationError, ToolCall, Verdict

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
_STATUS = {
    "enum": ["ok", "error"],
    "x-kind": "call status",
    "description": "Only calls that succeeded (ok) or failed (error) count.",
}
_TURN = {
    "type": "integer",
    "minimum": 1,
    "description": "Only calls of this user turn of the conversation (from 1) count.",
}
_FILTERS = ("status", "turn")  # parameters that a call may not be able to answer (its field is None)

_TRACES = "turn on traces: otel (docs/targets.md#traces)"
_RETURN_CALLS = "return specrun.Response(..., tool_calls=[...]) (tool_calls=[] when it called none)"
_HOW = {  # why a target's reply carries no tool list, and how to make it carry one
    "http": (
        "its reply template has no tool_calls path",
        "set tool_calls: to the JMESPath of the calls in the reply (docs/targets.md#format-template-any-json-api),"
        f" or {_TRACES}",
    ),
    "process": (
        "a CLI agent prints text only",
        f"{_TRACES}, or test the agent through a python target that would {_RETURN_CALLS}",
    ),
    "a2a": ("an A2A agent does not report its tool calls", f"{_TRACES}: its spans give them"),
}


def name_matches(actual: str, wanted: str, mode: str = "exact") -> bool:
    """``actual`` is ``wanted``, or (suffix mode) ends with it right after a namespace separator."""
    if actual == wanted:
        return True
    if mode != "suffix" or not actual.endswith(wanted):
        return False
    return actual[: -len(wanted)].endswith(SEPARATORS)


def reported_calls(check: Check, kind: str) -> list[ToolCall]:
    """The tool calls the target reported (``[]``: none was called), or ``EvaluationError`` when
    it reported none at all: what it called is not known, so ``kind`` cannot be judged."""
    response = check.response
    if response.tools_reported:
        return list(response.tool_calls)
    what = "text" if response.content is None or isinstance(response.content, str) else "its output"
    why, how = _HOW.get(
        check.target or "",
        (
            f"it returned {what} only",
            f"{_RETURN_CALLS}, use a framework agent object (docs/targets.md#frameworks), or {_TRACES}",
        ),
    )
    target = f"target {check.target}" if check.target else "the target"
    raise EvaluationError(f"{kind} cannot be judged: {target} reports no tool calls ({why}): {how}")


def _arguments(call: ToolCall) -> Any:
    args = call.arguments
    if isinstance(args, str):  # some agents pass the raw JSON text of the arguments
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def _matching(calls: list[ToolCall], params: dict[str, Any]) -> tuple[list[ToolCall], list[ToolCall]]:
    """The calls that match ``params``, and the calls that may: they match by name and arguments
    but do not say the status or turn asked for."""
    names = as_list(params["name"]) if "name" in params else None
    mode = params.get("match", "exact")
    wanted_args = params.get("arguments")
    filters = [(key, params[key]) for key in _FILTERS if key in params]
    sure: list[ToolCall] = []
    unsure: list[ToolCall] = []
    for call in calls:
        if names is not None and not any(name_matches(call.name, n, mode) for n in names):
            continue
        if wanted_args is not None and not is_subset(wanted_args, _arguments(call)):
            continue
        known = [(getattr(call, key), value) for key, value in filters if getattr(call, key) is not None]
        if any(have != value for have, value in known):
            continue
        (sure if len(known) == len(filters) else unsure).append(call)
    return sure, unsure


def _unknown(unsure: list[ToolCall], params: dict[str, Any]) -> str:
    many = len(unsure) > 1
    said = {
        "status": f"whether {'they' if many else 'it'} succeeded (ToolCall.status)",
        "turn": f"{'their' if many else 'its'} turn (ToolCall.turn)",
    }
    missing = [said[key] for key in _FILTERS if key in params and any(getattr(c, key) is None for c in unsure)]
    return f"{len(unsure)} matching call{'s do' if many else ' does'} not say {' or '.join(missing)}"


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
    if "status" in params:
        text += " that succeeded (status ok)" if params["status"] == "ok" else " that failed (status error)"
    if "turn" in params:
        text += f" in turn {params['turn']}"
    return text


def _decide(
    expected: str, kind: str, calls: list[ToolCall], params: dict[str, Any], passes: Any
) -> tuple[bool, int, str]:
    """``passes(count)`` for the calls that match; an ``EvaluationError`` when the calls that
    may match could change it. Returns the verdict, the count and a note on those calls."""
    sure, unsure = _matching(calls, params)
    verdicts = {passes(n) for n in range(len(sure), len(sure) + len(unsure) + 1)}
    if len(verdicts) > 1:
        raise EvaluationError(
            f"{kind} cannot be judged: expected {expected}; {_unknown(unsure, params)}; {_describe_calls(calls)}"
        )
    note = f" ({_unknown(unsure, params)}: not counted)" if unsure else ""
    return verdicts.pop(), len(sure), note


class ToolCalled(AssertionType):
    name = "tool_called"
    description = "The agent called the tool (a list: any of them), optionally with arguments, status, turn, times."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "name": {
                **NAME_LIST_SCHEMA,
                "description": "The tool name, or a list meaning any of them.",
            },
            "match": _MATCH,
            "arguments": _ARGUMENTS,
            "status": _STATUS,
            "turn": _TURN,
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
        calls = reported_calls(check, self.name)
        times = params.get("times")

        def passes(count: int) -> bool:
            return count == times if times is not None else count > 0

        wanted = f"a call to {_wanted(params)}" + (f" exactly {times} time(s)" if times is not None else "")
        passed, count, note = _decide(wanted, self.name, calls, params, passes)
        return Verdict(
            passed,
            f"expected {wanted}; matched {count}{note}; {_describe_calls(calls)}",
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
            "status": _STATUS,
            "turn": _TURN,
        },
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        calls = reported_calls(check, self.name)
        wanted = f"no call to {_wanted(params)}"
        passed, count, note = _decide(wanted, self.name, calls, params, lambda n: n == 0)
        return Verdict(
            passed,
            f"expected {wanted}; matched {count}{note}; {_describe_calls(calls)}",
            expected=params,
            actual=[c.to_dict() for c in calls],
            details={"matched": count},
        )


class ToolOrder(AssertionType):
    name = "tool_order"
    description = "The tools were called in this order (a nested list: calls made together, in one step)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "names": {
                "type": "array",
                "items": {
                    "type": ["string", "array"],
                    "minLength": 1,
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "x-expect": "a tool name, or a list of names called in one step",
                },
                "minItems": 1,
                "description": "Tool names in order; a list of names: called in parallel, in one model step.",
            },
            "match": _MATCH,
            "turn": _TURN,
        },
        "required": ["names"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        calls = reported_calls(check, self.name)
        turn = params.get("turn")
        if turn is not None:
            if any(c.turn is None for c in calls):
                raise EvaluationError(
                    f"{self.name} cannot be judged in turn {turn}: the target does not say the turn of each"
                    " call (ToolCall.turn)"
                )
            calls = [c for c in calls if c.turn == turn]
        items = [as_list(item) for item in params["names"]]
        order = _Order(calls, params.get("match", "exact"), self.name)
        previous: list[int] = []
        said = f"tools called in order {_show_items(items)}"
        passed = True
        for position, item in enumerate(items):
            found = order.find(item, previous)
            if found is None:
                done = " → ".join(_show_item(i) for i in items[:position]) or "the start"
                said = f"expected tools in order {_show_items(items)}; {_quoted(item)} not found after {done}"
                said += order.why_not(item, previous)
                passed = False
                break
            order.used.update(found)
            previous = found
        shown = order.shape()
        where = f" in turn {turn}" if turn is not None else ""
        return Verdict(
            passed,
            f"{said}; called{where}: {', '.join(_show_item(i) for i in shown) or 'nothing'}",
            expected=params["names"],
            actual=[i[0] if len(i) == 1 else i for i in shown],
        )


def _show_item(item: list[str]) -> str:
    return item[0] if len(item) == 1 else f"[{', '.join(item)}]"


def _quoted(item: list[str]) -> str:
    return repr(item[0]) if len(item) == 1 else f"{_show_item(item)} (in one step)"


def _show_items(items: list[list[str]]) -> str:
    return " → ".join(_show_item(i) for i in items)


class _Order:
    """The calls of a trajectory in time: by turn, then by model step where both calls say it,
    else as listed."""

    def __init__(self, calls: list[ToolCall], mode: str, kind: str):
        self.calls, self.mode, self.kind = calls, mode, kind
        self.used: set[int] = set()

    def after(self, later: int, earlier: int) -> bool:
        b, a = self.calls[later], self.calls[earlier]
        if a.turn is not None and b.turn is not None and a.turn != b.turn:
            return b.turn > a.turn
        if a.step is not None and b.step is not None:
            return b.step > a.step  # one step: made in parallel, neither after the other
        return later > earlier

    def _step(self, i: int) -> tuple[int | None, int] | None:
        call = self.calls[i]
        return None if call.step is None else (call.turn, call.step)

    def _candidates(self, previous: list[int]) -> list[int]:
        return [i for i in range(len(self.calls)) if i not in self.used and all(self.after(i, p) for p in previous)]

    def _is(self, i: int, name: str) -> bool:
        return name_matches(self.calls[i].name, name, self.mode)

    def find(self, item: list[str], previous: list[int]) -> list[int] | None:
        """The calls (indexes) that make ``item`` after the ``previous`` item's calls: the first
        call of its name, or for a list, calls of all its names made in one step."""
        candidates = self._candidates(previous)
        if len(item) == 1:
            return next(([i] for i in candidates if self._is(i, item[0])), None)
        steps = list(dict.fromkeys(s for i in candidates if (s := self._step(i)) is not None))
        for step in steps:
            found = self._assign(item, [i for i in candidates if self._step(i) == step])
            if found is not None:
                return found
        unknown = sorted(
            {self.calls[i].name for i in candidates if self._step(i) is None and any(self._is(i, n) for n in item)}
        )
        if unknown:
            raise EvaluationError(
                f"{self.kind} cannot be judged: {_show_item(item)} must be called in one step (in parallel), and"
                f" the calls to {', '.join(unknown)} do not say their model step (ToolCall.step)"
            )
        return None

    def _assign(self, names: list[str], calls: list[int]) -> list[int] | None:
        """A distinct call for each name, or None: a bipartite matching by augmenting paths, so
        that many calls of one name never make the search explode."""
        owner: dict[int, int] = {}  # call -> the name it stands for

        def place(name: int, seen: set[int]) -> bool:
            for i in calls:
                if i not in seen and self._is(i, names[name]):
                    seen.add(i)
                    if i not in owner or place(owner[i], seen):
                        owner[i] = name
                        return True
            return False

        return sorted(owner) if all(place(n, set()) for n in range(len(names))) else None

    def why_not(self, item: list[str], previous: list[int]) -> str:
        """Why a single name was not found although it was called: in the same step as the item before."""
        if len(item) != 1:
            return ""
        for p in previous:
            same = [
                i
                for i in range(len(self.calls))
                if i != p and self._step(i) is not None and self._step(i) == self._step(p)
            ]
            if any(self._is(i, item[0]) for i in same):
                return f" ({item[0]} was called in the same step as {self.calls[p].name}, in parallel, not after it)"
        return ""

    def shape(self) -> list[list[str]]:
        """The names called, a step's calls together (as ``names`` writes them)."""
        shown: list[list[str]] = []
        last: object = object()
        for i, call in enumerate(self.calls):
            step = self._step(i)
            if step is not None and step == last:
                shown[-1].append(call.name)
            else:
                shown.append([call.name])
            last = step
        return shown
