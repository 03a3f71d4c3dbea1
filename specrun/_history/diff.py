"""Compare two runs' reports: what regressed, what got fixed, pass rates, duration, cost.

Either side may be a JSONL result stream or a ``.json`` report, read by
:func:`specrun._history.report_loading.load_side`. ``compare_sides`` sorts the cases by the rules in
docs/reports.md, a case run against several agents once per agent, and counts the cases both ran
for McNemar's paired test (``specrun._report.rates``); ``to_markdown`` renders a pull-request
comment, with every case text escaped and every pass rate with its 95% Wilson interval.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._report.display import md_text
from .._report.rates import Paired, interval_of, summary_runs
from .report_loading import Outcome, Side, load_side

__all__ = ["Change", "Comparison", "Outcome", "Side", "compare_files", "compare_sides", "load_side", "to_markdown"]

FAILING = ("failed", "error")
MAX_ROWS = 50
SLOWER = 1.25  # a case is slower (faster) when its mean duration moved by this ratio
MIN_DURATION_MS = 100.0  # ... and by at least this much

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
    matrix: bool = False  # a side ran cases against several agents: cases are named with theirs
    paired: Paired = field(default_factory=Paired)  # the cases both ran, for McNemar's test

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


def several_agents(side: Side) -> bool:
    """Some case of ``side`` ran against more than one agent (a matrix run)."""
    agents: dict[tuple[str, str], str] = {}
    return any(agents.setdefault(o.key.any_agent, o.agent) != o.agent for o in side.cases.values())


def _pair(old: Side, new: Side, matrix: bool) -> tuple[list[Change], list[Outcome], list[Outcome]]:
    """Cases in both reports, only in ``old``, only in ``new``; linear in the number of cases.
    A case pairs with its ``CaseKey.paired(matrix)`` (the agent counts in a matrix only)."""

    def loose(o: Outcome) -> tuple[str, ...]:
        return o.key.paired(matrix, suite=False)

    olds = {o.key.paired(matrix): o for o in old.cases.values()}
    news = {n.key.paired(matrix): n for n in new.cases.values()}
    pairs = [Change(o, news[k]) for k, o in olds.items() if k in news]
    left = {k: o for k, o in olds.items() if k not in news}
    right = {k: n for k, n in news.items() if k not in olds}
    # Paths may differ between the two runs (another checkout): match leftovers by unique id.
    left_count, right_count = Counter(map(loose, left.values())), Counter(map(loose, right.values()))
    right_by_id = {loose(n): k for k, n in right.items() if right_count[loose(n)] == 1}
    for k, o in list(left.items()):
        if left_count[loose(o)] == 1 and loose(o) in right_by_id:
            pairs.append(Change(left.pop(k), right.pop(right_by_id[loose(o)])))
    return pairs, list(left.values()), list(right.values())


def compare_sides(old: Side, new: Side) -> Comparison:
    """Sort every case into the comparison's lists."""
    matrix = several_agents(old) or several_agents(new)
    result = Comparison(old, new, matrix=matrix)
    pairs, missing, added = _pair(old, new, matrix)
    for change in pairs:
        before, now = change.old.status, change.new.status  # type: ignore[union-attr]
        if "skipped" not in (before, now):
            result.paired.add(before == "passed", now == "passed")
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
    for n in added:  # every case only in NEW is a new case; one that fails is newly failing too
        result.added.append(Change(None, n))
        if n.status in FAILING:
            result.newly_failing.append(result.added[-1])
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


def _name(o: Outcome, matrix: bool = False) -> str:
    text = md_text(o.id, 80) + (f" [{md_text(o.agent, 40)}]" if matrix and o.agent else "")
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
    runs = [summary_runs(old), summary_runs(new)]
    cis = [interval_of(*r) if r else "-" for r in runs]
    lines.append(f"| Pass rate, 95% CI | {md_text(cis[0])} | {md_text(cis[1])} | |")
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
    lines += [f"**Larger than chance?** {c.paired.text()}", ""]  # numbers and our words: nothing to escape

    def name(o: Outcome) -> str:
        return _name(o, c.matrix)

    def status(o: Outcome | None) -> str:
        return "(new)" if o is None else md_text(o.label)

    def reason(ch: Change) -> str:
        return md_text(ch.new.reason or "", 160) if ch.new else ""

    head = ["Case", "Before", "Now", "Reason"]
    rows = [[name(x.case), status(x.old), status(x.new), reason(x)] for x in c.newly_failing]
    lines += _table("❌ Newly failing", head, rows)
    rows = [[name(x.case), status(x.old), status(x.new)] for x in c.newly_skipped]
    lines += _table("⏭️ Newly skipped", head[:3], rows)
    lines += _table("❓ Missing from NEW", ["Case", "Was"], [[name(x.case), status(x.old)] for x in c.missing])
    rows = [[name(x.case), status(x.old), status(x.new)] for x in c.fixed]
    lines += _table("✅ Fixed", head[:3], rows)
    rows = [[name(x.case), status(x.old), status(x.new), reason(x)] for x in c.still_failing]
    lines += _table("🔁 Still failing", head, rows)
    rows = [[name(x.case), status(x.old), status(x.new), _signed(x.rate_delta, "{:+.1f} pp")] for x in c.moved]
    lines += _table("〰️ Pass rate moved (flaky)", ["Case", "Before", "Now", "Change"], rows)
    lines += _table("➕ New cases", ["Case", "Status"], [[name(x.case), status(x.new)] for x in c.added])

    def moved(changes: list[Change], value: str, fmt: Any, delta: Any) -> list[list[str]]:
        return [[name(x.case), fmt(getattr(x.old, value)), fmt(getattr(x.new, value)), delta(x)] for x in changes]

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
