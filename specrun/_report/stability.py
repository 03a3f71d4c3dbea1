"""Per-case and run statistics over repeated runs, computed as result records stream in.

The input is the ``result`` record of the JSONL stream (``Result.to_dict()``). An
``Aggregator`` keeps a few numbers per case (counts, a running mean and variance of durations,
one 16-byte hash per distinct output, token totals) and never an output itself, so the runner
(exit code, console) and the reporters (which re-read the stream file) can share it whatever
the size of the run. Definitions are in ``docs/reports.md``.
"""

from __future__ import annotations

import copy
import math
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Any

from .._core.data import TIMEOUT_ERROR
from .._core.fingerprint import fingerprint
from .._core.identity import CaseKey
from .._run.matrix import matrix
from .display import shorten
from .rates import disagreed, percent, rounded, wilson_pct
from .totals import Totals

STABLE = "Stable"
MOSTLY_STABLE = "Mostly Stable"
UNSTABLE = "Unstable"
HIGHLY_UNSTABLE = "Highly Unstable"
CONSISTENTLY_FAILING = "Consistently Failing"
CONSISTENTLY_ERRORING = "Consistently Erroring"  # every run an error: not the agent's wrong answer
SKIPPED = "Skipped"

REASON_CHARS = 300
_CLASSES = ((100, STABLE), (80, MOSTLY_STABLE), (50, UNSTABLE))  # (lowest pass rate, name)
_pct, _round = percent, rounded


def classify(pass_rate: float | None) -> str:
    """Stable at 100 and Consistently Failing at 0: both consistent. Between them the seed's
    classes: Mostly Stable from 80, Unstable from 50, Highly Unstable below 50."""
    if pass_rate is None:
        return SKIPPED
    if pass_rate <= 0:
        return CONSISTENTLY_FAILING
    return next((name for lowest, name in _CLASSES if pass_rate >= lowest), HIGHLY_UNSTABLE)


def failure_reason(record: dict[str, Any]) -> str | None:
    """Why a run did not pass, in one short line: its error or first failing assertion."""
    text = record.get("error")
    if not text:
        for a in record.get("assertions") or []:
            if isinstance(a, dict) and a.get("status") in ("failed", "error"):
                text = f"{a.get('type', '?')}: {a.get('message') or a.get('status')}"
                break
    if not text:
        return None
    return shorten(str(text), REASON_CHARS)


class CaseStats:
    """What is known of one case after some of its runs; ``to_dict()`` gives the report fields."""

    __slots__ = (
        "_m2 _mean agent completion_tokens cost errors failed file flaky has_usage id line max_ms min_ms "
        "min_pass_rate name offsets order outputs own_gate passed prompt_tokens reason skipped "
        "tags timeout_s timeouts total_ms total_tokens uncertain"
    ).split()

    def __init__(self, record: dict[str, Any], order: int, gate: float | None, outputs: bool = True):
        self.id = str(record.get("id"))
        self.agent: str | None = record.get("agent")
        self.name: str | None = record.get("name")
        self.file: str = str(record.get("file") or "")
        self.line: int = int(record.get("line") or 0)
        self.tags: list[str] = list(record.get("tags") or [])
        self.flaky = record.get("flaky") is True  # flaky in the run history (specrun._history.store)
        own = record.get("min_pass_rate")
        self.own_gate: float | None = float(own) if own is not None else None
        self.min_pass_rate: float | None = self.own_gate if own is not None else gate
        self.timeout_s: float | None = t if type(t := record.get("timeout_s")) in (int, float) else None
        self.order = order
        self.passed = self.failed = self.errors = self.skipped = 0
        self.timeouts = 0  # error runs that ran out of time (V2's summary counts them apart)
        self.uncertain = 0  # runs in which a judge's samples disagreed (specrun._judges.samples)
        self._mean = self._m2 = self.total_ms = 0.0
        self.min_ms = math.inf
        self.max_ms = -math.inf
        # None: outputs are not compared (the runner's summary has no consistency to give)
        self.outputs: Counter[bytes] | None = Counter() if outputs else None
        self.prompt_tokens = self.completion_tokens = self.total_tokens = 0
        self.cost: float | None = None
        self.has_usage = False
        self.reason: str | None = None
        self.offsets: array[int] | None = None

    def add(self, record: dict[str, Any], offset: int | None = None) -> None:
        if offset is not None:
            if self.offsets is None:
                self.offsets = array("q")
            self.offsets.append(offset)
        if record.get("flaky") is True:  # any of its runs said so (each run's job is marked alike)
            self.flaky = True
        usage = record.get("usage")
        if isinstance(usage, dict):
            self.has_usage = True
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            self.total_tokens += int(usage.get("total_tokens") or 0)
            if usage.get("cost") is not None:
                self.cost = (self.cost or 0.0) + float(usage["cost"])
        status = record.get("status")
        if status == "skipped":
            self.skipped += 1
            return
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        else:
            self.errors += 1
            self.timeouts += str(record.get("error") or "").startswith(TIMEOUT_ERROR)
        if status != "passed" and self.reason is None:
            self.reason = failure_reason(record)
        ms = float(record.get("duration_ms") or 0.0)
        self.total_ms += ms
        n = self.runs  # Welford: a running population variance without keeping the durations
        delta = ms - self._mean
        self._mean += delta / n
        self._m2 += delta * (ms - self._mean)
        self.min_ms = min(self.min_ms, ms)
        self.max_ms = max(self.max_ms, ms)
        if self.outputs is not None:
            self.outputs[fingerprint(record)] += 1
        self.uncertain += disagreed(record)

    @property
    def key(self) -> CaseKey:
        """The case's key, as ``CaseKey.of`` its records."""
        return CaseKey(self.file, self.id, str(self.agent or ""))

    @property
    def runs(self) -> int:
        """Runs that reached a verdict or an error (skipped runs are not counted)."""
        return self.passed + self.failed + self.errors

    @property
    def pass_rate(self) -> float | None:
        return None if not self.runs else 100.0 * self.passed / self.runs

    @property
    def consistency(self) -> float | None:
        """Share of runs whose output equals the most common output (1.0: all identical)."""
        if not self.runs or self.outputs is None:
            return None
        return max(self.outputs.values()) / self.runs

    @property
    def stable(self) -> bool:
        return self.runs > 0 and self.passed == self.runs

    @property
    def classification(self) -> str:
        rate = self.pass_rate if self.stable or not self.runs else min(self.pass_rate or 0.0, 99.99)  # 1999/2000
        return CONSISTENTLY_ERRORING if self.errors == self.runs > 0 else classify(rate)

    @property
    def status(self) -> str:
        """The verdict: every run passed, or the pass rate meets the gate when there is one.

        A case none of whose runs passed never passes, whatever gate a suite or a stream says.
        """
        runs = self.runs
        if not runs:
            return "skipped"
        if self.min_pass_rate is not None:
            ok = self.passed > 0 and 100.0 * self.passed / runs + 1e-9 >= self.min_pass_rate
        else:
            ok = self.passed == runs
        if ok:
            return "passed"
        return "failed" if self.failed else "error"

    @property
    def std_deviation_ms(self) -> float | None:
        return math.sqrt(self._m2 / self.runs) if self.runs else None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id}
        if self.name:
            data["name"] = self.name
        if self.agent is not None:
            data["agent"] = self.agent
        data.update(
            status=self.status,
            runs=self.runs,
            passed=self.passed,
            failed=self.failed,
            errors=self.errors,
            skipped=self.skipped,
            pass_rate=_round(self.pass_rate, 1),
            pass_rate_ci=wilson_pct(self.passed, self.runs),
            consistency=_round(self.consistency, 2),
            distinct_outputs=len(self.outputs) if self.outputs is not None else None,
            stable=self.stable,
            classification=self.classification,
            avg_duration_ms=_round(self._mean if self.runs else None, 1),
            min_duration_ms=_round(self.min_ms if self.runs else None, 1),
            max_duration_ms=_round(self.max_ms if self.runs else None, 1),
            std_deviation_ms=_round(self.std_deviation_ms, 1),
            total_duration_ms=round(self.total_ms, 1),
        )
        if self.min_pass_rate is not None:
            data["min_pass_rate"] = self.min_pass_rate
        if self.reason:
            data["reason"] = self.reason
        if self.flaky:
            data["flaky"] = True
        if self.uncertain:
            data["uncertain_runs"] = self.uncertain
        if self.has_usage:
            data["usage"] = self.usage()
        data["file"] = self.file
        data["line"] = self.line
        if self.tags:
            data["tags"] = self.tags
        return data

    def usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost": self.cost,
        }


class Aggregator:
    """Statistics of a run, fed one ``result`` record at a time.

    ``min_pass_rate`` is the run's gate (``--min-pass-rate``); a case's own ``min_pass_rate``
    takes precedence. ``runs`` is the configured runs per case (inferred when None). With
    ``keep=False`` (the runner's, which needs only the summary) a case whose ``runs`` are all
    in is added to the run's totals and dropped: memory does not grow with the run, and no
    output is fingerprinted (the summary compares none).
    """

    def __init__(self, min_pass_rate: float | None = None, runs: int | None = None, keep: bool = True):
        self.min_pass_rate = min_pass_rate
        self.runs = runs
        self.keep = keep or not runs
        self._cases: dict[CaseKey, CaseStats] = {}
        self._done = Totals()  # the cases dropped
        # Without keep: whether a case ran against several agents (the summary's per-agent
        # totals), found from the hash of each (file, id) and its agent. Kept only when the run
        # has several agents (``agents``, set by the runner) and until one such case is seen:
        # a matrix run finds one at once, a one-agent run keeps nothing.
        self.agents = 1
        self._several = False
        self._agent_of: dict[int, str] = {}
        self._max_runs = 0

    def add(self, record: dict[str, Any], offset: int | None = None) -> CaseStats:
        """Count one result record; ``offset`` (its byte offset in the stream) is remembered."""
        key = CaseKey.of(record)
        stats = self._cases.get(key)
        if stats is None:
            stats = self._cases[key] = CaseStats(record, len(self._cases), self.min_pass_rate, self.keep)
        stats.add(record, offset)
        seen = stats.runs + stats.skipped
        self._max_runs = max(self._max_runs, seen)
        if not self.keep:
            if self.agents > 1:
                self._note_agent(key)
            if seen >= (self.runs or 0):
                self._done.add(self._cases.pop(key))
        return stats

    def _note_agent(self, key: CaseKey) -> None:
        if self._several or not key.agent or self.agents < 2:
            return
        seen = self._agent_of.setdefault(hash(key.any_agent), key.agent)
        if seen != key.agent:
            self._several = True
            self._agent_of.clear()

    def set_gate(self, min_pass_rate: float | None) -> None:
        """Change the run's gate (cases with their own ``min_pass_rate`` keep it)."""
        self.min_pass_rate = min_pass_rate
        for c in self._cases.values():
            c.min_pass_rate = c.own_gate if c.own_gate is not None else min_pass_rate

    def __len__(self) -> int:
        return len(self._cases)

    def cases(self) -> list[CaseStats]:
        """Every case seen, in suite order (by file, then line, then first appearance)."""
        return sorted(self._cases.values(), key=lambda c: (c.file, c.line, c.order))

    @property
    def runs_per_case(self) -> int:
        return self.runs if self.runs else max(self._max_runs, 1)

    def summary(self, duration_ms: float | None = None, interrupted: bool = False) -> dict[str, Any]:
        """The run summary. ``duration_ms`` is wall time (the sum of run durations when None)."""
        t = copy.deepcopy(self._done)
        for c in self._cases.values():
            t.add(c)
        measured = t.stable + t.unstable + t.failing  # the cases with a run that reached a verdict
        executed = t.passed + t.failed + t.errors
        data: dict[str, Any] = {
            "total": t.cases,
            "passed": t.verdicts["passed"],
            "failed": t.verdicts["failed"],
            "errors": t.verdicts["error"],
            "skipped": t.verdicts["skipped"],
            "total_cases": t.cases,
            "total_runs": executed + t.skipped,
            "runs_per_case": self.runs_per_case,
            "runs_passed": t.passed,
            "runs_failed": t.failed,
            "runs_errors": t.errors,
            "runs_skipped": t.skipped,
            "timeouts": t.timeouts,
            "overall_pass_rate": _pct(t.passed, executed),
            "overall_pass_rate_ci": wilson_pct(t.passed, executed),
            "stable_cases": t.stable,
            "unstable_cases": t.unstable,
            "consistently_failing_cases": t.failing,
            "uncertain_cases": t.uncertain,
            "pass_hat_k": _pct(t.all_passed, measured),
            "pass_at_k": _pct(t.any_passed, measured),
            "min_pass_rate": self.min_pass_rate,
            "duration_ms": round(t.total_ms if duration_ms is None else duration_ms, 1),
            "interrupted": interrupted,
        }
        if t.usage_seen:
            data["usage"] = t.usage
        if self._several if not self.keep else matrix(self._cases.values()):
            data["agents"] = t.agents.rows()
        return data


def case_stats(records: Iterable[dict[str, Any]], min_pass_rate: float | None = None) -> dict[str, Any]:
    """The statistics of one case from the result records of its runs."""
    agg = Aggregator(min_pass_rate)
    for record in records:
        agg.add(record)
    cases = agg.cases()
    if len(cases) != 1:
        raise ValueError(f"expected the records of one case, got {len(cases)} cases")
    return cases[0].to_dict()


EXIT_CODES = {"passed": 0, "failed": 1, "incomplete": 3, "interrupted": 130}


def verdict(summary: dict[str, Any]) -> tuple[str, str]:
    """The run's outcome and its one-line label, from the summary's case verdicts.

    The outcome is ``interrupted``, ``incomplete`` (results could not be written), ``failed``
    (a case failed or errored) or ``passed``. The console's banner and the exit code are both
    read from here, so they cannot disagree with each other or with the case counts.
    """
    failed, errors = summary.get("failed") or 0, summary.get("errors") or 0
    passed, skipped = summary.get("passed") or 0, summary.get("skipped") or 0
    counts = [f"{failed} FAILED" * bool(failed), f"{errors} ERROR{'S' * (errors > 1)}" * bool(errors)]
    counts += [f"{passed} PASSED" * bool(passed), f"{skipped} SKIPPED" * bool(skipped)]
    label = ", ".join(c for c in counts if c)
    if summary.get("interrupted"):
        return "interrupted", "INTERRUPTED: partial results written"
    if summary.get("incomplete"):
        return "incomplete", f"INCOMPLETE: not every result could be written ({label})"
    not_judged = summary.get("not_judged")  # a rejudge: runs of cases its recording has no answer of
    if failed or errors:
        return "failed", label + (f", {not_judged} NOT JUDGED (not in the recording)" if not_judged else "")
    if not_judged:
        return "incomplete", f"INCOMPLETE: {not_judged} not in the recording, not judged ({label or 'none judged'})"
    if not passed:
        return "passed", f"NO TESTS RAN ({label or 'no cases'})"
    if not skipped:
        label = "ALL TESTS PASSED"
    bad_runs = (summary.get("runs_failed") or 0) + (summary.get("runs_errors") or 0)
    if bad_runs:  # cases passed by a pass-rate gate: their failing run lines were printed above
        total = summary.get("total_runs") or 0
        label += f" ({bad_runs} of {total} runs failed or errored, within min_pass_rate)"
    return "passed", label


def exit_code(summary: dict[str, Any]) -> int:
    """The exit code of ``verdict``: 0 passed, 1 a case failed or errored, 3 results could not
    be written, 130 interrupted (the runner says 143 after SIGTERM)."""
    return EXIT_CODES[verdict(summary)[0]]
