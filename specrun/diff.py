"""Compare two runs' reports: newly failing, fixed, still failing, pass rates, duration, cost.

Either side may be a JSONL result stream or a ``.json`` report. ``compare`` does the logic;
``to_markdown`` renders a pull-request comment. Also home of the Markdown escaping used by the
Markdown reporter, so that agent text is escaped the same way everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .display import md_text
from .errors import UsageError
from .stability import CaseStats, failure_reason, scan

FAILING = ("failed", "error")
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
    """A loaded report: its cases by (file, id) and its summary."""

    path: Path
    cases: dict[tuple[str, str], Outcome]
    summary: dict[str, Any]


def _from_stats(c: CaseStats) -> Outcome:
    return Outcome(
        id=c.id,
        file=c.file,
        status=c.status,
        name=c.name,
        pass_rate=c.pass_rate,
        runs=c.runs,
        duration_ms=c.total_ms / c.runs if c.runs else None,
        cost=c.cost / c.runs if c.cost is not None and c.runs else None,
        reason=c.reason,
    )


def _from_result(r: dict[str, Any]) -> Outcome:
    status = str(r.get("status"))
    runs = int(r.get("runs") or 1)
    rate = r.get("pass_rate")
    if rate is None and status != "skipped":
        rate = 100.0 if status == "passed" else 0.0
    usage: dict[str, Any] = r["usage"] if isinstance(r.get("usage"), dict) else {}
    return Outcome(
        id=str(r.get("id")),
        file=str(r.get("file") or ""),
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


def load_side(path: Path) -> Side:
    """Load a JSONL result stream or a ``.json`` report; a ``UsageError`` for anything else."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such report file")
    first = _first_record(path)
    if isinstance(first, dict) and first.get("type") in ("start", "result", "summary"):
        stream = scan(path)
        agg = stream.aggregator
        cases = {(c.file, c.id): _from_stats(c) for c in agg.cases()}
        summary = {**agg.summary(), **(stream.summary or {})}
        return Side(path, cases, summary)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a specrun report (JSON or JSONL): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise UsageError(f"{path}: not a specrun report: expected a JSON object with 'results'")
    outcomes = [_from_result(r) for r in data["results"] if isinstance(r, dict)]
    summary = data["summary"] if isinstance(data.get("summary"), dict) else {}
    return Side(path, {(o.file, o.id): o for o in outcomes}, summary)


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
    fixed: list[Change] = field(default_factory=list)
    still_failing: list[Change] = field(default_factory=list)
    moved: list[Change] = field(default_factory=list)  # flaky: passing both times, rate moved
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
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
        """Something newly fails, or a pass rate dropped."""
        return bool(self.newly_failing or self.rate_dropped)


def _pair(old: Side, new: Side) -> tuple[list[Change], list[Outcome], list[Outcome]]:
    pairs = [Change(o, new.cases[k]) for k, o in old.cases.items() if k in new.cases]
    left = [o for k, o in old.cases.items() if k not in new.cases]
    right = [n for k, n in new.cases.items() if k not in old.cases]
    # Paths may differ between the two runs (another checkout): match leftovers by unique id.
    left_ids = {o.id: o for o in left if sum(x.id == o.id for x in left) == 1}
    right_ids = {n.id: n for n in right if sum(x.id == n.id for x in right) == 1}
    for case_id in left_ids.keys() & right_ids.keys():
        pairs.append(Change(left_ids[case_id], right_ids[case_id]))
        left.remove(left_ids[case_id])
        right.remove(right_ids[case_id])
    return pairs, left, right


def compare(old: Side, new: Side) -> Comparison:
    """Sort every case into the comparison's lists."""
    result = Comparison(old, new)
    pairs, removed, added = _pair(old, new)
    for change in pairs:
        before, now = change.old.status, change.new.status  # type: ignore[union-attr]
        if now in FAILING and before not in FAILING:
            result.newly_failing.append(change)
        elif now in FAILING:
            result.still_failing.append(change)
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
    result.removed = [Change(o, None) for o in removed]
    result.slower.sort(key=lambda c: -(c.duration_delta or 0))
    result.faster.sort(key=lambda c: c.duration_delta or 0)
    result.costlier.sort(key=lambda c: -(c.cost_delta or 0))
    result.cheaper.sort(key=lambda c: c.cost_delta or 0)
    return result


def compare_files(old: Path, new: Path) -> Comparison:
    """Load both reports and compare them."""
    return compare(load_side(old), load_side(new))


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


def to_markdown(c: Comparison) -> str:
    """The comparison as Markdown for a pull-request comment; every case text is escaped."""
    if c.regressed:
        parts = []
        if c.newly_failing:
            parts.append(f"{len(c.newly_failing)} newly failing")
        if c.rate_dropped:
            parts.append(f"{len(c.rate_dropped)} with a lower pass rate")
        verdict = f"❌ **Regressed**: {', '.join(parts)}"
    else:
        verdict = "✅ **No regressions**"
    lines = ["## specrun diff", "", verdict, ""]
    lines += [f"Old: {md_text(c.old.path)} · New: {md_text(c.new.path)}", ""]
    lines += _totals(c)

    def status(o: Outcome | None) -> str:
        return "(new)" if o is None else md_text(o.label)

    def reason(ch: Change) -> str:
        return md_text(ch.new.reason or "", 160) if ch.new else ""

    head = ["Case", "Before", "Now", "Reason"]
    rows = [[_name(x.case), status(x.old), status(x.new), reason(x)] for x in c.newly_failing]
    lines += _table("❌ Newly failing", head, rows)
    rows = [[_name(x.case), status(x.old), status(x.new)] for x in c.fixed]
    lines += _table("✅ Fixed", head[:3], rows)
    rows = [[_name(x.case), status(x.old), status(x.new), reason(x)] for x in c.still_failing]
    lines += _table("🔁 Still failing", head, rows)
    rows = [[_name(x.case), status(x.old), status(x.new), _signed(x.rate_delta, "{:+.1f} pp")] for x in c.moved]
    lines += _table("〰️ Pass rate moved (flaky)", ["Case", "Before", "Now", "Change"], rows)
    lines += _table("➕ New cases", ["Case", "Status"], [[_name(x.case), status(x.new)] for x in c.added])
    lines += _table("➖ Removed cases", ["Case", "Was"], [[_name(x.case), status(x.old)] for x in c.removed])

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
