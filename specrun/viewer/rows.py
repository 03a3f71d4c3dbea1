"""The history's rows as the viewer's pages read them: each column checked against what specrun
writes. A damaged value (a JSON column cut short, a hand edit, a missing field) is replaced by
a neutral one (none; an unreadable verdict is ``error``, never a pass) and named in the row's
``damaged`` list, so that a page shows what is readable and says what is not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

from .._core.data import Status

Kind = tuple[str, Callable[[Any], bool]]  # what the column holds, and the test of a value
TEXT: Kind = ("text", lambda v: isinstance(v, str))
WHOLE: Kind = ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUMBER: Kind = ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool))
ARRAY: Kind = ("a JSON array", lambda v: isinstance(v, list))
OBJECT: Kind = ("a JSON object", lambda v: isinstance(v, dict))
STATUSES = get_args(Status)
STATUS: Kind = (f"one of {', '.join(STATUSES)}", lambda v: v in STATUSES)

RUN = {
    "id": TEXT,
    "started_at": TEXT,
    "argv": ARRAY,
    "agents": ARRAY,
    "suites": ARRAY,
    "git_commit": TEXT,
    **dict.fromkeys(("total", "passed", "failed", "errors", "skipped", "interrupted"), WHOLE),
    "duration_ms": NUMBER,
    "cost": NUMBER,
    "summary": OBJECT,
    "rejudge": TEXT,  # `specrun rejudge`: the recorded run it judged again (`stream PATH`, `run ID`)
}
CASE = {
    "run_id": TEXT,
    "case_id": TEXT,
    "run_index": WHOLE,
    "agent": TEXT,
    "suite": TEXT,
    "line": WHOLE,
    "status": STATUS,
    "duration_ms": NUMBER,
    "tokens": WHOLE,
    "cost": NUMBER,
    "fingerprint": TEXT,
    "result": OBJECT,
}
# The fields of a result record the transcript walks through (the rest it shows as they are).
RESULT = {
    **dict.fromkeys(("tool_calls", "turns", "checkpoints", "assertions", "warnings"), ARRAY),
    "usage": OBJECT,
    "traceback": TEXT,
}
REQUIRED = {"id", "run_id", "case_id", "run_index", "status", "result"}  # never empty as specrun writes them
FALLBACK = {"status": "error", "run_index": 0}  # a verdict that cannot be read is no pass


def checked_run(row: dict[str, Any]) -> dict[str, Any]:
    """A ``runs`` row, checked (see the module docstring)."""
    return _checked(row, RUN)


def checked_case(row: dict[str, Any]) -> dict[str, Any]:
    """A ``cases`` row, checked, with the fields of its result record the pages walk through."""
    row = _checked(row, CASE)
    if row["result"] is not None:
        record = dict(row["result"])
        row["damaged"] += [f"result.{p}" for p in _problems(record, RESULT, set())]
        row["result"] = record
    return row


def _checked(row: dict[str, Any], columns: dict[str, Kind]) -> dict[str, Any]:
    row = dict(row)
    row["damaged"] = _problems(row, columns, REQUIRED)
    return row


def _problems(row: dict[str, Any], columns: dict[str, Kind], required: set[str]) -> list[str]:
    """What is wrong in ``row`` (fixed in place: each bad value replaced by its fallback)."""
    problems = []
    for name, (kind, fits) in columns.items():
        value = row.setdefault(name, None)  # a column a hand-made table lacks reads as empty
        if value is None:
            if name in required:
                problems.append(f"{name} is missing")
                row[name] = FALLBACK.get(name)
            continue
        if not fits(value):
            problems.append(f"{name} is {_described(value, kind)}")
            row[name] = FALLBACK.get(name)
    return problems


def _described(value: Any, kind: str) -> str:
    """A bad value in a few words: JSON text that does not parse says where it stops."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and kind.startswith("a JSON"):
        try:
            json.loads(value)
        except json.JSONDecodeError as exc:
            return f"not valid JSON, cut short or edited ({exc.msg}: character {exc.pos} of {len(value)})"
    if isinstance(value, str):
        shown = f"the text {value[:40]!r}" + ("…" if len(value) > 40 else "")
    elif isinstance(value, bytes):
        shown = f"{len(value)} bytes of binary data"
    else:
        shown = f"{type(value).__name__} {str(value)[:40]}"
    return f"{shown}, not {kind}"
