"""The one fingerprint of what an agent produced in a run, shared by every room that compares outputs.

A result's ``fingerprint`` (``Result.fingerprint``, computed once from its sealed record) is what
the statistics count as distinct outputs (``consistency``), what the run history stores per result
(``new output`` in ``specrun history CASE``) and what the viewer compares: one definition, so a
report and the history never disagree on whether two runs said the same thing. The definition is
in ``docs/reports.md`` (Consistency).
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring  # how JSONEncoder(ensure_ascii=False) writes a string
from typing import Any

from .data import to_json

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal data, equal text, whatever the key order."""
    try:
        return _CANONICAL.encode(value)
    except TypeError:  # keys of mixed types (1 and "a") cannot be sorted: compare them as JSON has them
        return _CANONICAL.encode(json.loads(to_json(value)))


def normalize_output(value: Any) -> str:
    """Text lowercased with whitespace collapsed; structured output as canonical JSON."""
    if isinstance(value, str):
        return " ".join(value.lower().split())
    return canonical_json(value)


def _calls(calls: Any) -> list[list[Any]]:
    if not isinstance(calls, list):
        return []
    return [[c.get("name"), c.get("arguments") or {}] if isinstance(c, dict) else [str(c), {}] for c in calls]


def fingerprint(record: dict[str, Any]) -> bytes:
    """A 16-byte hash of what the agent produced in one run, from its ``result`` record.

    Covers the normalised output, the tool calls (name and arguments, in order; not their
    results) and, in dynamic mode, the output and tool calls of every turn.
    """
    output, calls, turns = record.get("output"), record.get("tool_calls"), record.get("turns")
    if isinstance(output, str) and not calls and not turns:
        # The usual record, a text answer: its canonical JSON (``["text",[]]``) written out at once,
        # the same text canonical_json makes of it, without an encoder's work per call.
        text = "[" + encode_basestring(" ".join(output.lower().split())) + ",[]]"
        return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
    parts: list[Any] = [normalize_output(output), _calls(calls)]
    for turn in turns or []:
        if isinstance(turn, dict):
            parts.append([normalize_output(turn.get("output")), _calls(turn.get("tool_calls"))])
    return hashlib.blake2b(canonical_json(parts).encode("utf-8", "replace"), digest_size=16).digest()
