"""Several samples, one verdict: a judge asked ``samples`` times, the verdict the majority.

``samples: N`` on an ``llm``, ``agent`` or ``match`` assertion (else the suite's ``samples``,
else ``samples`` in ``specrun.yaml``, else 1) makes N independent judge calls, each with its
own sample index, which is part of the model cache key: N samples are never answered by one
cached reply. The calls run at once, within the run's limits (the model's adaptive limit).

The verdict is the majority of the samples that reached one. A sample whose reply was unusable
twice, or whose call failed for good, is undecided. When fewer than a majority of N samples
were decided, or the decided ones tie, the assertion is an ``error``: a verdict is never
guessed. The verdict's ``details`` keep every sample (status, score, reason) and the
agreement (how many passed, failed, were undecided, of N); its message starts with it
(``2/3 passed: ...``), so every report shows it. With one sample nothing changes.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._core.data import Usage
from .._core.errors import EvaluationError
from .._core.kinds import Check, Verdict

MAX_SAMPLES = 100  # a typo (1000) would multiply a run's judge cost a thousandfold

SAMPLES_PARAM: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_SAMPLES,
    "description": "Judge calls whose majority is the verdict (default: the suite's, else specrun.yaml's, else 1).",
}

Judge = Callable[[int], Awaitable[Verdict]]
"""``judge(sample)``: one judge call's verdict, ``sample`` counting from 1."""


def sample_count(params: Mapping[str, Any], check: Check) -> int:
    """How many samples: the assertion's ``samples``, the suite's, ``specrun.yaml``'s, else 1."""
    suite = check.case.suite
    config = check.services.config if check.services is not None else {}
    for value in (params.get("samples"), suite.samples if suite is not None else None, config.get("samples")):
        if value is not None:
            return int(value)
    return 1


async def sampled(check: Check, params: Mapping[str, Any], judge: Judge) -> Verdict:
    """The verdict of ``sample_count`` calls of ``judge`` (see the module docstring)."""
    n = sample_count(params, check)
    if n <= 1:
        return await judge(1)
    outcomes = await asyncio.gather(*(_decided(judge, i) for i in range(1, n + 1)), return_exceptions=True)
    for outcome in outcomes:  # a crash is a bug to show, not an undecided sample
        if isinstance(outcome, BaseException):
            raise outcome
    return combine([o for o in outcomes if isinstance(o, Verdict)])


async def _decided(judge: Judge, sample: int) -> Verdict:
    try:
        return await judge(sample)
    except EvaluationError as exc:  # a call that failed for good: this sample is undecided
        return Verdict(False, str(exc), error=True)


def combine(verdicts: list[Verdict]) -> Verdict:
    """One verdict from the samples' verdicts: the majority of the decided ones, or an error."""
    n = len(verdicts)
    decided = [v for v in verdicts if not v.error]
    passed = sum(v.passed for v in decided)
    failed = len(decided) - passed
    usage = Usage()
    for v in verdicts:
        usage.add(v.usage)
    details: dict[str, Any] = {
        "agreement": {"passed": passed, "failed": failed, "undecided": n - len(decided), "samples": n},
        "samples": [_sample(i, v) for i, v in enumerate(verdicts, 1)],
    }
    spent = usage if usage.total_tokens or usage.cost else None
    majority = n // 2 + 1
    if len(decided) < majority:
        why = next(v.message for v in verdicts if v.error)
        message = f"only {len(decided)} of {n} samples reached a verdict (a majority is {majority}): {why}"
        return Verdict(False, message, details=details, usage=spent, error=True)
    if passed == failed:
        message = f"the samples tie: {passed} passed, {failed} failed" + _undecided(n - len(decided), n)
        return Verdict(False, message, details=details, usage=spent, error=True)
    verdict = passed > failed
    side = [v for v in decided if v.passed == verdict]
    scores = [v.score for v in decided if v.score is not None]
    # The median of the decided scores, not the mean: it sits on the majority's side of the
    # threshold, so the score never contradicts the verdict (ties are errors above).
    score = statistics.median(scores) if len(scores) == len(decided) else None
    first = side[0]
    details.update({k: v for k, v in (first.details or {}).items() if k not in ("score", "reason")})
    details.update(score=score, reason=(first.details or {}).get("reason", first.message))
    label = f"{passed}/{len(decided)} passed" + _undecided(n - len(decided), n)
    return Verdict(
        verdict,
        f"{label}: {first.message}" if first.message else label,
        expected=first.expected,
        actual=first.actual,
        score=score,
        details=details,
        usage=spent,
    )


def _undecided(count: int, n: int) -> str:
    return f", {count} of {n} undecided" if count else ""


def _sample(index: int, v: Verdict) -> dict[str, Any]:
    status = "error" if v.error else "passed" if v.passed else "failed"
    reason = v.message if v.error else (v.details or {}).get("reason", v.message)
    return {"sample": index, "status": status, "score": v.score, "reason": reason}
