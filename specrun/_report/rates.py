"""Rates and how far to trust them: percentages, 95% Wilson intervals, McNemar's exact test, and
the agreement of a judge's samples. Definitions are in ``docs/reports.md``.

**Wilson interval** (a pass rate of k in n): the score interval of the binomial proportion. Unlike
``p ± 1.96·sqrt(p(1-p)/n)`` it never leaves 0-100% and is not zero-width at 0 or n of n, which
is where small runs live (3 of 3 passed is 43.9-100%, not 100 ± 0).

**McNemar's exact test** (two runs of the same cases): only the discordant cases say anything
about a change, those that passed in one run and not the other (``b`` and ``c``). Under "no
change" each is as likely to go one way as the other, so ``b`` is Binomial(b + c, 1/2); the
two-sided p-value is twice the smaller tail. The exact test is used at every count: the
chi-square form is an approximation that is poor below about 25 discordant cases (the usual case
for a suite), and computing the exact tail is cheap at any size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal distribution
ALPHA = 0.05  # a change with p below this is "larger than chance"
_EXACT_INTEGERS = 5000  # discordant cases up to which McNemar's tail is summed in integers


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def percent(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in percent to one decimal; None of nothing."""
    return round(100.0 * part / whole, 1) if whole else None


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` in ``trials`` as fractions; None without trials
    (or for counts that are no proportion, as a hand-edited report may hold)."""
    if trials <= 0 or not 0 <= successes <= trials:
        return None
    p = successes / trials
    shrink = 1 + z * z / trials
    center = (p + z * z / (2 * trials)) / shrink
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / shrink
    # at 0 or n of n the bound is exactly 0 or 1; computed, it may miss by a rounding error
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == trials else min(1.0, center + half)
    return low, high


def wilson_pct(successes: int, trials: int) -> list[float] | None:
    """``wilson`` in percent to one decimal, as reports store it: ``[low, high]``."""
    interval = wilson(successes, trials)
    return None if interval is None else [round(100 * interval[0], 1), round(100 * interval[1], 1)]


def interval_text(interval: Any, label: bool = True) -> str:
    """``[low, high]`` (percent) as ``95% CI 43.9-100.0%`` (an en dash; without ``label``, the
    bounds alone); empty for none."""
    if not (isinstance(interval, list | tuple) and len(interval) == 2):
        return ""
    low, high = interval
    return f"{'95% CI ' if label else ''}{low:.1f}–{high:.1f}%"


def runs_text(count: int, what: str = "run") -> str:
    return f"{count} {what}{'s' * (count != 1)}"


def rate_text(successes: int, trials: int) -> str:
    """``66.7% (95% CI 20.8-93.9%, 3 runs)`` (an en dash in the range); ``-`` without trials."""
    rate, interval = percent(successes, trials), wilson_pct(successes, trials)
    if rate is None or interval is None:
        return "-"
    return f"{rate:.1f}% ({interval_text(interval)}, {runs_text(trials)})"


def interval_of(successes: int, trials: int) -> str:
    """``20.8-93.9% (3 runs)`` (an en dash in the range); ``-`` without trials."""
    interval = wilson_pct(successes, trials)
    return f"{interval_text(interval, False)} ({runs_text(trials)})" if interval else "-"


def summary_runs(summary: Mapping[str, Any]) -> tuple[int, int] | None:
    """The runs that passed and the runs that reached a verdict or an error, from a summary."""
    counts = [summary.get(k) for k in ("runs_passed", "runs_failed", "runs_errors")]
    whole = [n for n in counts if isinstance(n, int) and not isinstance(n, bool)]
    return (whole[0], sum(whole)) if len(whole) == 3 else None


def summary_rate_text(summary: Mapping[str, Any]) -> str:
    """A summary's pass rate of runs with its interval (``rate_text``); ``-`` when it has none."""
    runs = summary_runs(summary)
    return rate_text(*runs) if runs else "-"


def mcnemar(b: int, c: int) -> float:
    """The two-sided p-value of McNemar's exact test: ``b`` cases passed only in one run, ``c``
    only in the other (see the module docstring)."""
    n = b + c
    low = min(b, c)
    if n == 0 or 2 * low == n:
        return 1.0
    if n <= _EXACT_INTEGERS:  # the tail as a ratio of integers, rounded once
        term = total = 1
        for i in range(1, low + 1):
            term = term * (n - i + 1) // i  # C(n, i) from C(n, i - 1)
            total += term
        return min(1.0, 2 * total / 2**n)
    # Beyond, the same sum in logarithms (2**n overflows a float, the integers grow slow)
    top, log_half = math.lgamma(n + 1), n * math.log(0.5)
    tail = math.fsum(math.exp(top - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half) for i in range(low + 1))
    return min(1.0, 2 * tail)


@dataclass
class Paired:
    """The cases two runs both ran (skipped in neither), by where they passed, for McNemar's test."""

    both: int = 0
    old_only: int = 0  # passed in the old run only: b
    new_only: int = 0  # passed in the new run only: c
    neither: int = 0

    def add(self, old_passed: bool, new_passed: bool) -> None:
        if old_passed and new_passed:
            self.both += 1
        elif old_passed:
            self.old_only += 1
        elif new_passed:
            self.new_only += 1
        else:
            self.neither += 1

    @property
    def cases(self) -> int:
        return self.both + self.old_only + self.new_only + self.neither

    @property
    def p_value(self) -> float:
        return mcnemar(self.old_only, self.new_only)

    @property
    def beyond_chance(self) -> bool:
        """The change is larger than chance: McNemar's exact p below ``ALPHA`` (0.05)."""
        return self.p_value < ALPHA

    def text(self) -> str:
        """The test in one sentence, for ``specrun diff`` and the viewer's compare."""
        if not self.cases:
            return "Paired test: no case ran in both runs, so there is nothing to compare."
        how = "larger than chance" if self.beyond_chance else "within chance"
        return (
            f"Paired test (McNemar's exact test on the verdicts of the {runs_text(self.cases, 'case')} both runs ran): "
            f"{self.old_only} passed only in OLD, {self.new_only} only in NEW; p = {self.p_value:.3g}, "
            f"so the change is {how} (p {'<' if self.beyond_chance else '≥'} {ALPHA:g})."
        )


# -- a judge's samples ------------------------------------------------------------------------


_COUNTS = ("passed", "failed", "undecided", "samples")


def agreement(assertion: Any) -> dict[str, int] | None:
    """The agreement of a judge assertion's samples (``details.agreement`` of its record), if it
    sampled; None for anything else, a record of another shape included (a stream read back)."""
    details = assertion.get("details") if isinstance(assertion, dict) else None
    found = details.get("agreement") if isinstance(details, dict) else None
    if not isinstance(found, dict) or not all(type(found.get(k)) is int for k in _COUNTS):
        return None
    return found


def disagreed(record: Mapping[str, Any]) -> bool:
    """Some judge of this result asked several samples and they did not all say the same."""
    assertions = record.get("assertions")
    for assertion in assertions if isinstance(assertions, list) else ():
        found = agreement(assertion)
        if found is not None and max(found["passed"], found["failed"]) < found["samples"]:
            return True
    return False


def sample_lines(assertion: Any) -> list[str]:
    """One line per sample of a judge assertion that sampled: ``sample 2: failed (score 0.2): why``."""
    if agreement(assertion) is None:
        return []
    lines = []
    for s in assertion["details"].get("samples") or ():
        if isinstance(s, dict):
            score = f" (score {s['score']:g})" if isinstance(s.get("score"), int | float) else ""
            lines.append(f"sample {s.get('sample')}: {s.get('status')}{score}: {s.get('reason') or ''}".rstrip(": "))
    return lines


# -- the pairwise judge's tally (specrun._judges.pairwise) ----------------------------------------


def pair_lines(pairwise: Mapping[str, Any] | None) -> list[str]:
    """The summary's ``pairwise`` in lines of text, one per pair of agents, for the console and the reports."""
    if not isinstance(pairwise, Mapping):
        return []
    if pairwise.get("skipped"):
        return [f"not judged: {pairwise['skipped']}"]
    lines = []
    for p in pairwise.get("pairs") or ():
        a, b = p["agents"]
        decided = p["wins"] + p["ties"] + p["losses"]
        line = f"{a} vs {b}: {a} won {p['wins']}, tied {p['ties']}, lost {p['losses']} of {decided} compared"
        if decided:
            line += (
                f" ({a} wins {p['win_rate']:.1f}%, {interval_text(p['win_rate_ci'])}; "
                f"{b} wins {p['loss_rate']:.1f}%, {interval_text(p['loss_rate_ci'])})"
            )
        if p["undecided"]:
            first = next((c["reason"] for c in p["comparisons"] if c["winner"] is None), "")
            line += f"; {p['undecided']} undecided: {first}"
        lines.append(line)
    return lines
