"""Reading a finished run's report back: a JSONL result stream or a ``.json`` report.

``load_side`` reads one for ``specrun diff`` (and ``specrun merge``, which checks every shard
with it) and rejects what it cannot trust, a field of the wrong type or a case reported twice,
with a ``UsageError`` naming the file (and, in a stream, the line) and the field; it notes
whether the run was complete. A case is identified by its file, id and agent (and, in a
stream, each run by its index): a run against several agents has one outcome per (case, agent).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.errors import UsageError
from .._core.identity import CaseKey, ResultKey
from .._report.display import shorten
from .._report.rates import interval_text, wilson_pct
from .._report.stability import CaseStats, failure_reason
from .._report.stream import scan

STATUSES = ("passed", "failed", "error", "skipped")


@dataclass
class Outcome:
    """One case (with one agent) in one report."""

    id: str
    file: str
    status: str
    agent: str = ""
    name: str | None = None
    pass_rate: float | None = None
    runs: int = 1
    duration_ms: float | None = None  # mean per run
    cost: float | None = None  # mean per run
    reason: str | None = None

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.file, self.id, self.agent)

    @property
    def label(self) -> str:
        """The verdict, with the pass rate and its 95% Wilson interval when the case ran several times."""
        if self.runs <= 1 or self.pass_rate is None:
            return self.status
        interval = interval_text(wilson_pct(round(self.pass_rate * self.runs / 100), self.runs))
        return f"{self.status} ({self.pass_rate:.1f}%" + (f", {interval})" if interval else ")")


@dataclass
class Side:
    """A loaded report: its cases by key (``CaseKey.of`` its records), its summary, and why it is
    incomplete (if it is)."""

    path: Path
    cases: dict[CaseKey, Outcome]
    summary: dict[str, Any]
    incomplete: list[str] = field(default_factory=list)


class _Bad(Exception):
    """A record of the wrong shape; the caller adds where it is."""


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# What each field diff reads must be (null is always allowed); a mapping is a nested object.
_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a finite number", _finite),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "list": ("a list", lambda v: isinstance(v, list)),
    "status": (" or ".join(STATUSES), lambda v: isinstance(v, str) and v in STATUSES),
}
_USAGE = {"prompt_tokens": "integer", "completion_tokens": "integer", "total_tokens": "integer", "cost": "number"}
_RESULT = {
    **dict.fromkeys(("id", "name", "file", "agent", "error", "reason"), "string"),
    **dict.fromkeys(("line", "run", "runs"), "integer"),
    **dict.fromkeys(("duration_ms", "avg_duration_ms", "pass_rate", "min_pass_rate"), "number"),
    **dict.fromkeys(("tags", "assertions", "turns"), "list"),
    "status": "status",
    "usage": _USAGE,
}
_SUMMARY = {
    **dict.fromkeys(("total_cases", "passed", "failed", "errors", "skipped", "not_run"), "integer"),
    **dict.fromkeys(("overall_pass_rate", "duration_ms", "min_pass_rate"), "number"),
    "interrupted": "boolean",
    "usage": _USAGE,
}
_START = {"total_cases": "integer", "runs": "integer"}
_REPORT = {"summary": _SUMMARY, "metadata": {"interrupted": "boolean"}}


def _check(record: dict[str, Any], fields: dict[str, Any], prefix: str = "", required: tuple[str, ...] = ()) -> None:
    """Raise ``_Bad`` naming the first field of ``record`` that is not what ``fields`` says."""
    for name in required:
        if record.get(name) is None:
            raise _Bad(f"field {prefix}{name} is missing")
    for name, kind in fields.items():
        value = record.get(name)
        if value is None:
            continue
        if isinstance(kind, dict):
            if not isinstance(value, dict):
                raise _Bad(f"field {prefix}{name}: expected an object, got {_shown(value)}")
            _check(value, kind, f"{prefix}{name}.")
        elif not _KINDS[kind][1](value):
            raise _Bad(f"field {prefix}{name}: expected {_KINDS[kind][0]}, got {_shown(value)}")


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return shorten(text, 60)


def _from_stats(c: CaseStats) -> Outcome:
    return Outcome(
        id=c.id,
        file=c.file,
        status=c.status,
        agent=c.agent or "",
        name=c.name,
        pass_rate=None if c.pass_rate is None else round(c.pass_rate, 1),  # as a .json report has it
        runs=c.runs,
        duration_ms=c.total_ms / c.runs if c.runs else None,
        cost=c.cost / c.runs if c.cost is not None and c.runs else None,
        reason=c.reason,
    )


def _from_result(r: dict[str, Any]) -> Outcome:
    status = r["status"]
    runs = r.get("runs") or 1
    rate = r.get("pass_rate")
    if rate is None and status != "skipped":
        rate = 100.0 if status == "passed" else 0.0
    usage: dict[str, Any] = r.get("usage") or {}
    return Outcome(
        id=r["id"],
        file=r.get("file") or "",
        status=status,
        agent=r.get("agent") or "",
        name=r.get("name"),
        pass_rate=rate,
        runs=runs,
        duration_ms=r.get("avg_duration_ms", r.get("duration_ms")),
        cost=usage["cost"] / runs if usage.get("cost") is not None else None,
        reason=r.get("reason") or failure_reason(r),
    )


def _first_record(path: Path) -> Any:
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                try:
                    return json.loads(line)
                except ValueError:
                    return None
    return None


def _line_at(path: Path, offset: int) -> int:
    with open(path, "rb") as f:
        return f.read(offset).count(b"\n") + 1


def _load_stream(path: Path) -> Side:
    seen: set[ResultKey] = set()

    def check(offset: int, record: dict[str, Any]) -> None:
        try:
            kind = record.get("type", "result")
            if kind not in ("start", "result", "summary"):
                raise _Bad(f"field type: expected start, result or summary, got {_shown(kind)}")
            if kind == "result":
                _check(record, _RESULT, required=("id", "status"))
                key = ResultKey.of(record)
                if key in seen:
                    at = f" with agent {key.agent!r}" if key.agent else ""
                    raise _Bad(
                        f"duplicate id: case {key.id!r} of {key.suite or '?'}{at} has a second result for run {key.run}"
                    )
                seen.add(key)
            else:
                _check(record, _START if kind == "start" else _SUMMARY)
        except _Bad as exc:
            raise UsageError(f"{path}:{_line_at(path, offset)}: {exc}") from None

    stream = scan(path, check=check)
    agg = stream.aggregator
    cases = {c.key: _from_stats(c) for c in agg.cases()}
    summary = {**agg.summary(), **(stream.summary or {})}
    incomplete = [] if stream.summary is not None else ["no summary line: the run was killed or had not finished"]
    planned = (stream.start.get("total_cases") or 0) * (stream.start.get("runs") or 1)
    recorded = sum(c.runs + c.skipped for c in agg.cases())
    if recorded < planned:
        incomplete.append(f"{recorded} of {planned} planned runs have a result")
    return Side(path, cases, summary, incomplete + _cut_short(summary))


def _cut_short(summary: dict[str, Any]) -> list[str]:
    """What a run's summary (or a report's metadata) says was not done."""
    reasons = ["interrupted"] if summary.get("interrupted") else []
    if summary.get("not_run"):
        reasons.append(f"{summary['not_run']} scheduled runs did not run")
    return reasons


def _load_report(path: Path) -> Side:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a specrun report (JSON or JSONL): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise UsageError(f"{path}: not a specrun report: expected a JSON object with 'results'")
    cases: dict[CaseKey, Outcome] = {}
    where: dict[CaseKey, int] = {}
    try:
        _check(data, _REPORT)
        for i, r in enumerate(data["results"]):
            if not isinstance(r, dict):
                raise _Bad(f"field results[{i}]: expected an object, got {_shown(r)}")
            _check(r, _RESULT, f"results[{i}].", ("id", "status"))
            key = CaseKey.of(r)
            if key in where:
                at = f" with agent {key.agent!r}" if key.agent else ""
                raise _Bad(f"duplicate id: results[{i}] and results[{where[key]}] are both case {key.id!r}{at}")
            where[key] = i
            cases[key] = _from_result(r)
    except _Bad as exc:
        raise UsageError(f"{path}: {exc}") from None
    summary = data.get("summary") or {}
    metadata = data.get("metadata") or {}
    reasons = _cut_short({**summary, "interrupted": summary.get("interrupted") or metadata.get("interrupted")})
    return Side(path, cases, summary, reasons)


def load_side(path: Path) -> Side:
    """Load a JSONL result stream or a ``.json`` report; a ``UsageError`` for anything else."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such report file")
    first = _first_record(path)
    if isinstance(first, dict) and first.get("type") in ("start", "result", "summary"):
        return _load_stream(path)
    return _load_report(path)
