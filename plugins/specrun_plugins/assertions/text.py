"""Text assertions on the output text: contains, not_contains, icontains, contains_any,
contains_all, starts_with, regex.

Structured output is searched as its JSON text. Registered by the family's
register_assertion_types hook.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import (
    Assertion,
    AssertionType,
    Check,
    EvaluationError,
    PatternError,
    Verdict,
    compile_pattern,
)

from ._common import REGEX_FLAGS_SCHEMA, as_list, show

_SCALAR = {"type": ["string", "number", "boolean"], "minLength": 1, "x-expect": "a string"}
_IGNORE_CASE = {"type": "boolean", "description": "Compare case-insensitively."}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _quoted(items: Iterable[str]) -> str:
    return ", ".join(show(i) for i in items)


class _Substrings(AssertionType):
    """Looks for the strings of ``value`` in the output; ``mode`` says how many must be there."""

    mode: ClassVar[str] = "all"  # all | any | none
    fold: ClassVar[bool] = False
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "value": {
                "type": ["string", "number", "boolean", "array"],
                "minLength": 1,
                "items": _SCALAR,
                "minItems": 1,
                "x-expect": "a string or a list of strings",
            },
            "ignore_case": _IGNORE_CASE,
        },
        "required": ["value"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        value = assertion.params["value"]
        # one string, the usual value, as it is (no list of texts made for it per case)
        items = [value] if type(value) is str else [_as_text(v) for v in as_list(value)]
        text = check.response.text
        fold = self.fold or assertion.params.get("ignore_case", False)
        haystack = text.casefold() if fold else text
        found = [i for i in items if (i.casefold() if fold else i) in haystack]
        missing = [i for i in items if i not in found]
        if self.mode == "all":
            passed = not missing
            said = f"output contains {_quoted(found)}" if passed else f"output lacks {_quoted(missing)}"
        elif self.mode == "any":
            passed = bool(found)
            said = f"output contains {_quoted(found)}" if passed else f"output contains none of {_quoted(items)}"
        else:
            passed = not found
            said = f"output contains none of {_quoted(items)}" if passed else f"output contains {_quoted(found)}"
        case = " (ignoring case)" if fold else ""
        return Verdict(
            passed,
            f"{said}{case}; output: {show(text)}",
            expected=value,
            actual=text,
            score=len(found) / len(items) if self.mode == "all" else None,
            details={"found": found, "missing": missing},
        )


class Contains(_Substrings):
    name = "contains"
    description = "The output contains the value (a list: every item)."


class NotContains(_Substrings):
    name = "not_contains"
    description = "The output contains none of the values."
    mode = "none"


class IContains(_Substrings):
    name = "icontains"
    description = "The output contains the value, ignoring case (a list: every item)."
    fold = True


class _ListOfSubstrings(_Substrings):
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "value": {
                "type": "array",
                "items": _SCALAR,
                "minItems": 1,
                "x-expect": "a list of strings",
            },
            "ignore_case": _IGNORE_CASE,
        },
        "required": ["value"],
    }


class ContainsAny(_ListOfSubstrings):
    name = "contains_any"
    description = "The output contains at least one of the values."
    mode = "any"


class ContainsAll(_ListOfSubstrings):
    name = "contains_all"
    description = "The output contains every one of the values."


class StartsWith(AssertionType):
    name = "starts_with"
    description = "The output text starts with the value."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {"value": {"type": "string", "minLength": 1}, "ignore_case": _IGNORE_CASE},
        "required": ["value"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        value: str = assertion.params["value"]
        text = check.response.text
        fold = assertion.params.get("ignore_case", False)
        passed = text.casefold().startswith(value.casefold()) if fold else text.startswith(value)
        head = text[: max(len(value), 40)]
        verb = "starts" if passed else "does not start"
        return Verdict(
            passed,
            f"output {verb} with {show(value)}; it begins {show(head)}",
            expected=value,
            actual=text,
        )


class Regex(AssertionType):
    name = "regex"
    description = "The output text matches the regular expression (searched, not anchored)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "value": {"type": "string", "description": "The pattern (RE2 syntax: matched in linear time)."},
            "pattern": {"type": "string", "description": "The pattern; an alias of value."},
            "flags": REGEX_FLAGS_SCHEMA,
        },
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        given = [k for k in ("value", "pattern") if k in assertion.params]
        if len(given) != 1:
            yield (
                "value",
                "give the regex as either 'value' or 'pattern'" + (", not both" if given else ""),
            )
            return
        pattern = assertion.params[given[0]]
        try:
            compile_pattern(pattern, assertion.params.get("flags", ""))
        except PatternError as exc:
            yield "flags" if exc.flags else given[0], str(exc)

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        pattern = assertion.params.get("value", assertion.params.get("pattern"))
        if not isinstance(pattern, str):
            raise EvaluationError("regex needs a 'value' (or 'pattern') string")
        flags = assertion.params.get("flags", "")
        try:
            compiled = compile_pattern(pattern, flags)
        except PatternError as exc:
            raise EvaluationError(str(exc)) from None
        text = check.response.text
        match = compiled.search(text)
        shown = f"/{pattern}/{flags}"
        if match:
            said = f"output matches {shown} at {show(match.group(0))}"
            details: dict[str, Any] | None = {
                "match": match.group(0),
                "groups": list(match.groups()),
            }
        else:
            said = f"output does not match {shown}; output: {show(text)}"
            details = None
        return Verdict(bool(match), said, expected=pattern, actual=text, details=details)
