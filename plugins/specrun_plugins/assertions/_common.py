"""Helpers shared by the deterministic assertion modules: JSON equality, display."""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Any

from specrun.plugin import MISSING, shorten

PREVIEW_CHARS = 200
_SHOWN = json.JSONEncoder(ensure_ascii=False, default=str)  # one encoder: json.dumps with options makes one a call

REGEX_FLAGS_SCHEMA = {
    "type": "string",
    "description": "Regex flags: i (ignore case), m (multiline), s (dot matches newline), a (ASCII).",
}
NAME_LIST_SCHEMA = {
    "type": ["string", "array"],
    "minLength": 1,
    "items": {"type": "string", "minLength": 1},
    "minItems": 1,
    "x-expect": "a name or a list of names",
}


def as_list(value: Any) -> list[Any]:
    """A list as is; anything else as a one-item list."""
    return value if isinstance(value, list) else [value]


def show(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as a person reads it in a message: JSON, cut to ``limit`` characters."""
    if value is MISSING:
        return "nothing"
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # its JSON is still longer than limit: the cut below is the same
    try:
        # a string as _SHOWN writes one, without an encoder's setup per call (two per contains)
        text = encode_basestring(value) if type(value) is str else _SHOWN.encode(value)  # NaN may show
    except (ValueError, RecursionError):  # a circular structure
        text = repr(value)
    return shorten(text, limit)


def json_type(value: Any) -> str:
    """The JSON type name of a Python value: string, number, boolean, object, array or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: key order is irrelevant, ``1 == 1.0``, but ``true`` is not ``1``."""
    return difference(a, b) is None


def difference(expected: Any, actual: Any, where: str = "$") -> str | None:
    """Where ``actual`` first differs from ``expected`` (a JSON path and both values), or None."""
    kind_e, kind_a = json_type(expected), json_type(actual)
    if kind_e != kind_a:
        return f"at {where}: expected {show(expected)}, got {show(actual)}"
    if isinstance(expected, dict):
        for key in expected:
            if key not in actual:
                return f"at {where}: missing key {key!r}"
        for key in actual:
            if key not in expected:
                return f"at {where}: unexpected key {key!r}"
        for key, value in expected.items():
            found = difference(value, actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list | tuple):
        if len(expected) != len(actual):
            return f"at {where}: expected {len(expected)} items, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = difference(e, a, f"{where}[{i}]")
            if found:
                return found
        return None
    if expected != actual:
        return f"at {where}: expected {show(expected)}, got {show(actual)}"
    return None


def is_subset(expected: Any, actual: Any) -> bool:
    """True when ``actual`` holds everything ``expected`` says: mappings may have extra keys."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and is_subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return json_equal(expected, actual)


_FENCED = re.compile(r"```[A-Za-z]*[ \t]*\n(.*?)\n?```", re.S)


def whole_json(text: str) -> Any:
    """The JSON value the text consists of (alone or in one fenced block), else ``MISSING``.

    Stricter than ``Response.json``, which also finds JSON inside prose.
    """
    stripped = text.strip()
    match = _FENCED.fullmatch(stripped)
    try:
        return json.loads(match.group(1) if match else stripped)
    except ValueError:
        return MISSING


def output_json(content: Any, text: str) -> Any:
    """Structured output as is; text output via ``whole_json``."""
    if content is not None and not isinstance(content, str):
        return content
    return whole_json(text)
