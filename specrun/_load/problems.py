"""Problems described in the user's words: where (a field path, a file path) and what, for a
value that breaks a JSON Schema."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._core.data import parse_duration
from .schemas import subschema


def pointer(path: Iterable[Any]) -> str:
    """``["cases", 3, "assertions", 0, "value"]`` → ``cases[3].assertions[0].value``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def display_path(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def did_you_mean(value: Any, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(value), list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def describe_schema_error(
    error: Any,
    schema: dict[str, Any],
    instance: Any,
    root: list[Any] | None = None,
    whole: str = "the document",
) -> list[tuple[list[Any], str, bool]]:
    """(path, message, at_key) for one jsonschema-rs error, worded for a person.

    Messages name the field as ``root`` + its path (``whole`` when that is empty).
    """
    path = list(error.instance_path)
    kind = type(error.kind).__name__
    if kind == "AdditionalProperties":
        parent = subschema(schema, list(error.schema_path)[:-1])
        allowed = sorted(parent.get("properties", {}))
        listed = ", ".join(allowed)
        return [
            ([*path, name], f"unknown field {name!r}{did_you_mean(name, allowed)} (allowed: {listed})", True)
            for name in error.kind.unexpected
        ]
    if kind == "Enum":
        parent = subschema(schema, list(error.schema_path)[:-1])
        label = parent.get("x-kind")
        options = [str(o) for o in error.kind.options]
        value = _value_at(instance, path)
        if label:
            message = f"unknown {label} {value!r}{did_you_mean(value, options)} (known: {', '.join(options)})"
        else:
            message = f"{json.dumps(value)} is not one of: {', '.join(options)}"
        return [(path, message, False)]
    if kind == "Required":
        name = error.message.split('"')[1] if '"' in error.message else error.message
        return [(path, f"missing required field {name!r}", False)]
    field = pointer([*(root or []), *path]) or whole
    if kind == "Pattern" and list(error.schema_path)[:2] == ["$defs", "duration"]:
        return [(path, str(duration_problem(_value_at(instance, path))), False)]
    if kind == "Type":
        parent = subschema(schema, list(error.schema_path)[:-1])
        wanted = parent.get("x-expect") or " or ".join(_TYPE_NAMES.get(t, t) for t in _types(error.kind.types))
        return [(path, f"{field} must be {wanted}, not {_json_type(_value_at(instance, path))}", False)]
    return [(path, f"{field}: {error.message}", False)]


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "null": "null",
}


def _types(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _json_type(value: Any) -> str:
    if (isinstance(value, float) and value != value) or value in (float("inf"), float("-inf")):
        return f"{value} (JSON has no such number)"  # YAML's .nan and .inf
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _value_at(instance: Any, path: list[Any]) -> Any:
    for step in path:
        try:
            instance = instance[step]
        except (KeyError, IndexError, TypeError):
            return None
    return instance


def duration_problem(value: Any) -> str | None:
    """Why ``value`` is not a usable timeout, or None when it is."""
    try:
        seconds = parse_duration(value)
    except (ValueError, TypeError, AttributeError) as exc:
        return str(exc) if isinstance(exc, ValueError) else f"invalid duration {value!r}"
    return None if seconds > 0 else f"a timeout must be more than 0, not {value!r}"
