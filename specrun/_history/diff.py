"""Compare two runs' reports: what regressed, what got fixed, pass rates, duration, cost.

Either side may be a JSONL result stream or a ``.json`` report. ``load_side`` reads one and
rejects what it cannot trust (a field of the wrong type, a case reported twice) with a
``UsageError`` naming the file and the field, and notes whether the run was complete.
``compare_sides`` sorts the cases by the rules in docs/reports.md; ``to_markdown`` renders a
pull-request comment, with every case text escaped.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.errors import UsageError
from .._report.display import md_text, shorten
from .._report.stability import CaseStats, failure_reason, scan

FAILING = ("failed", "error")
STATUSES = ("passed", "failed", "error", "skipped")
MAX_ROWS = 50
SLOWER = 1.25  # a case is slower (faster) when its mean duration moved by this ratio
MIN_DURATION_MS = 100.0  # ... and by at least this much

# -- loading ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One case in one report."""

    id: str
    file: str
    status: str
    name: str | None = None
    pass_rate: float | None = None
    runs: int = 1
    duration_ms: float | None = None  # mean per run
    cost: float | None = None  # mean per run
    reason: str | None = None

    @property
    def label(self) -> str:
        rate = f" ({self.pass_rate:.1f}%)" if self.runs > 1 and self.pass_rate is not None else ""
        return f"{self.status}{rate}"


@dataclass
class Side:
    """A loaded report: its cases by (file, id), its summary, and why it is incomplete (if it is)."""

    path: Path
    cases: dict[tuple[str, str], Outcome]
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
    **dict.fromkeys(("id", "name", "file", "error", "reason"), "string"),
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
    seen: set[tuple[str, str, int]] = set()

    def check(offset: int, record: dict[str, Any]) -> None:
        try:
            kind = record.get("type", "result")
            if kind not in ("start", "result", "summary"):
                raise _Bad(f"field type: expected start, result or summary, got {_shown(kind)}")
            if kind == "result":
                _check(record, _RESULT, required=("id", "status"))
                key = (record.get("file") or "", record["id"], record.get("run") or 1)
                if key in seen:
                    raise _Bad(f"duplicate id: case {key[1]!r} of {key[0] or '?'} has a second result for run {key[2]}")
                seen.add(key)
            else:
                _check(record, _START if kind == "start" else _SUMMARY)
        except _Bad as exc:
            raise UsageError(f"{path}:{_line_at(path, offset)}: {exc}") from None

    stream = scan(path, check=check)
    agg = stream.aggregator
    cases = {(c.file, c.id): _from_stats(c) for c in agg.cases()}
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
    cases: dict[tuple[str, str], Outcome] = {}
    where: dict[tuple[str, str], int] = {}
    try:
        _check(data, _REPORT)
        for i, r in enumerate(data["results"]):
            if not isinstance(r, dict):
                raise _Bad(f"field results[{i}]: expected an object, got {_shown(r)}")
            _check(r, _RESULT, f"results[{i}].", ("id", "status"))
            key = (r.get("file") or "", r["id"])
            if key in where:
                raise _Bad(f"duplicate id: results[{i}] and results[{where[key]}] are both case {key[1]!r}")
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


# -- comparing --------------------------------------------------------------------------------


@dataclass
class Change:
    """A case in both reports (or only one: ``old`` or ``new`` is None)."""

    old: Outcome | None
    new: Outcome | None

    @property
    def case(self) -> Outcome:
        return self.new or self.old  # type: ignore[return-value]

    @property
    def rate_delta(self) -> float | None:
        if not self.old or not self.new or self.old.pass_rate is None or self.new.pass_rate is None:
            return None
        return self.new.pass_rate - self.old.pass_rate

    @property
    def duration_delta(self) -> float | None:
        if not self.old or not self.new or self.old.duration_ms is None:
            return None
        return None if self.new.duration_ms is None else self.new.duration_ms - self.old.duration_ms

    @property
    def cost_delta(self) -> float | None:
        if not self.old or not self.new or self.old.cost is None or self.new.cost is None:
            return None
        return self.new.cost - self.old.cost


@dataclass
class Comparison:
    """What changed from ``old`` to ``new``."""

    old: Side
    new: Side
    newly_failing: list[Change] = field(default_factory=list)
    newly_skipped: list[Change] = field(default_factory=list)  # ran before, skipped now
    missing: list[Change] = field(default_factory=list)  # in old, not in new
    fixed: list[Change] = field(default_factory=list)
    still_failing: list[Change] = field(default_factory=list)
    moved: list[Change] = field(default_factory=list)  # flaky: passing both times, rate moved
    added: list[Change] = field(default_factory=list)
    slower: list[Change] = field(default_factory=list)
    faster: list[Change] = field(default_factory=list)
    costlier: list[Change] = field(default_factory=list)
    cheaper: list[Change] = field(default_factory=list)

    @property
    def rate_dropped(self) -> list[Change]:
        """Cases present in both reports whose pass rate went down."""
        both = self.moved + self.still_failing + self.newly_failing
        return [c for c in both if (c.rate_delta or 0.0) < 0]

    @property
    def regressed(self) -> bool:
        """New is incomplete, or a case newly fails, is newly skipped or missing, or its pass rate dropped."""
        return bool(
            self.new.incomplete or self.newly_failing or self.newly_skipped or self.missing or self.rate_dropped
        )


def _pair(old: Side, new: Side) -> tuple[list[Change], list[Outcome], list[Outcome]]:
    """Cases in both reports, only in ``old``, only in ``new``; linear in the number of cases."""
    pairs = [Change(o, new.cases[k]) for k, o in old.cases.items() if k in new.cases]
    left = {k: o for k, o in old.cases.items() if k not in new.cases}
    right = {k: n for k, n in new.cases.items() if k not in old.cases}
    # Paths may differ between the two runs (another checkout): match leftovers by unique id.
    left_count, right_count = Counter(o.id for o in left.values()), Counter(n.id for n in right.values())
    right_by_id = {n.id: k for k, n in right.items() if right_count[n.id] == 1}
    for k, o in list(left.items()):
        if left_count[o.id] == 1 and o.id in right_by_id:
            pairs.append(Change(left.pop(k), right.pop(right_by_id[o.id])))
    return pairs, list(left.values()), list(right.values())


def compare_sides(old: Side, new: Side) -> Comparison:
    """Sort every case into the comparison's lists."""
    result = Comparison(old, new)
    pairs, missing, added = _pair(old, new)
    for change in pairs:
        before, now = change.old.status, change.new.status  # type: ignore[union-attr]
        if now in FAILING and before not in FAILING:
            result.newly_failing.append(change)
        elif now in FAILING:
            result.still_failing.append(change)
        elif now == "skipped" and before != "skipped":
            result.newly_skipped.append(change)
        elif before in FAILING and now == "passed":
            result.fixed.append(change)
        elif change.rate_delta:
            result.moved.append(change)
        d = change.duration_delta
        base = change.old.duration_ms or 0.0  # type: ignore[union-attr]
        if d is not None and abs(d) >= MIN_DURATION_MS:
            if base and (base + d) / base >= SLOWER:
                result.slower.append(change)
            elif base and (base + d) / base <= 1 / SLOWER:
                result.faster.append(change)
        cd = change.cost_delta
        if cd:
            (result.costlier if cd > 0 else result.cheaper).append(change)
    for n in added:
        target = result.newly_failing if n.status in FAILING else result.added
        target.append(Change(None, n))
    result.missing = [Change(o, None) for o in missing]
    result.slower.sort(key=lambda c: -(c.duration_delta or 0))
    result.faster.sort(key=lambda c: c.duration_delta or 0)
    result.costlier.sort(key=lambda c: -(c.cost_delta or 0))
    result.cheaper.sort(key=lambda c: c.cost_delta or 0)
    return result


def compare_files(old: Path, new: Path) -> Comparison:
    """Load both reports and compare them."""
    return compare_sides(load_side(old), load_side(new))


# -- rendering --------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}ms" if abs(value) < 1000 else f"{value / 1000:.1f}s"


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _money_delta(value: float | None) -> str:
    return "-" if value is None else f"{'-' if value < 0 else '+'}${abs(value):.4f}"


def _signed(value: float | None, fmt: str = "{:+.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _name(o: Outcome) -> str:
    text = md_text(o.id, 80)
    return f"{text} · {md_text(o.name, 80)}" if o.name else text


def _table(title: str, head: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    lines = [f"### {title} ({len(rows)})", "", "| " + " | ".join(head) + " |"]
    lines.append("|" + "---|" * len(head))
    lines += ["| " + " | ".join(r) + " |" for r in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n… and {len(rows) - MAX_ROWS} more")
    return [*lines, ""]


def _totals(c: Comparison) -> list[str]:
    old, new = c.old.summary, c.new.summary

    def row(label: str, key: str) -> str:
        a, b = old.get(key), new.get(key)
        delta = f"{b - a:+d}" if isinstance(a, int) and isinstance(b, int) else "-"
        return f"| {label} | {a if a is not None else '-'} | {b if b is not None else '-'} | {delta} |"

    rate_a, rate_b = old.get("overall_pass_rate"), new.get("overall_pass_rate")
    rate_d = rate_b - rate_a if rate_a is not None and rate_b is not None else None
    dur_a, dur_b = old.get("duration_ms"), new.get("duration_ms")
    dur_d = f"{(dur_b - dur_a) / dur_a:+.0%}" if dur_a and dur_b is not None else "-"
    cost_a = (old.get("usage") or {}).get("cost")
    cost_b = (new.get("usage") or {}).get("cost")
    cost_d = cost_b - cost_a if cost_a is not None and cost_b is not None else None
    lines = ["| Metric | Old | New | Change |", "|---|---:|---:|---:|"]
    lines += [row("Cases", "total_cases"), row("Passed", "passed"), row("Failed", "failed")]
    lines += [row("Errors", "errors"), row("Skipped", "skipped")]
    rates = [f"{r:.1f}%" if r is not None else "-" for r in (rate_a, rate_b)]
    lines.append(f"| Pass rate | {rates[0]} | {rates[1]} | {_signed(rate_d, '{:+.1f} pp')} |")
    lines.append(f"| Duration | {_ms(dur_a)} | {_ms(dur_b)} | {dur_d} |")
    if cost_a is not None or cost_b is not None:
        lines.append(f"| Cost | {_money(cost_a)} | {_money(cost_b)} | {_money_delta(cost_d)} |")
    return [*lines, ""]


def _verdict(c: Comparison) -> list[str]:
    """The first lines of the comment: regressed or not, and why; an incomplete run says what is missing."""
    lines = []
    if c.regressed:
        counts = [
            (c.newly_failing, "newly failing"),
            (c.newly_skipped, "newly skipped"),
            (c.missing, "missing from NEW"),
            (c.rate_dropped, "with a lower pass rate"),
        ]
        parts = ["NEW is incomplete"] if c.new.incomplete else []
        parts += [f"{len(changes)} {what}" for changes, what in counts if changes]
        lines.append(f"❌ **Regressed**: {', '.join(parts)}")
    else:
        lines.append("✅ **No regressions**")
    for label, side in (("NEW", c.new), ("OLD", c.old)):
        if side.incomplete:
            reasons = "; ".join(md_text(r) for r in side.incomplete)
            lines += ["", f"⛔ **{label} is an incomplete run** ({reasons}): its missing cases are not known to pass."]
    return [*lines, ""]


def to_markdown(c: Comparison) -> str:
    """The comparison as Markdown for a pull-request comment; every case text is escaped."""
    lines = ["## specrun diff", "", *_verdict(c)]
    lines += [f"Old: {md_text(c.old.path)} · New: {md_text(c.new.path)}", ""]
    lines += _totals(c)

    def status(o: Outcome | None) -> str:
        return "(new)" if o is None else md_text(o.label)

    def reason(ch: Change) -> str:
        return md_text(ch.new.reason or "", 160) if ch.new else ""

    head = ["Case", "Before", "Now", "Reason"]
    rows = [[_name(x.case), status(x.old), status(x.new), reason(x)] for x in c.newly_failing]
    lines += _table("❌ Newly failing", head, rows)
    rows = [[_name(x.case), status(x.old), status(x.new)] for x in c.newly_skipped]
    lines += _table("⏭️ Newly skipped", head[:3], rows)
    lines += _table("❓ Missing from NEW", ["Case", "Was"], [[_name(x.case), status(x.old)] for x in c.missing])
    rows = [[_name(x.case), status(x.old), status(x.new)] for x in c.fixed]
    lines += _table("✅ Fixed", head[:3], rows)
    rows = [[_name(x.case), status(x.old), status(x.new), reason(x)] for x in c.still_failing]
    lines += _table("🔁 Still failing", head, rows)
    rows = [[_name(x.case), status(x.old), status(x.new), _signed(x.rate_delta, "{:+.1f} pp")] for x in c.moved]
    lines += _table("〰️ Pass rate moved (flaky)", ["Case", "Before", "Now", "Change"], rows)
    lines += _table("➕ New cases", ["Case", "Status"], [[_name(x.case), status(x.new)] for x in c.added])

    def moved(changes: list[Change], value: str, fmt: Any, delta: Any) -> list[list[str]]:
        return [[_name(x.case), fmt(getattr(x.old, value)), fmt(getattr(x.new, value)), delta(x)] for x in changes]

    def ms_delta(x: Change) -> str:
        return _signed(x.duration_delta, "{:+.0f}ms")

    def cost_delta(x: Change) -> str:
        return _money_delta(x.cost_delta)

    head = ["Case", "Before", "Now", "Change"]
    lines += _table("🐢 Slower (mean duration)", head, moved(c.slower, "duration_ms", _ms, ms_delta))
    lines += _table("⚡ Faster (mean duration)", head, moved(c.faster, "duration_ms", _ms, ms_delta))
    lines += _table("💸 Costlier per run", head, moved(c.costlier, "cost", _money, cost_delta))
    lines += _table("💰 Cheaper per run", head, moved(c.cheaper, "cost", _money, cost_delta))
    return "\n".join(lines).rstrip() + "\n"
