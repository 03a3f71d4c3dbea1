"""Measured assertions: word_count, latency, cost.

Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, EvaluationError, Verdict

from ._common import show

_COUNT = {"type": "integer", "minimum": 0}


class WordCount(AssertionType):
    name = "word_count"
    description = "The output has between min and max words (whitespace separated), inclusive."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "min": {**_COUNT, "description": "At least this many words."},
            "max": {**_COUNT, "description": "At most this many words."},
        },
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        low, high = assertion.params.get("min"), assertion.params.get("max")
        if low is None and high is None:
            yield "min", "word_count needs 'min', 'max' or both"
        elif low is not None and high is not None and low > high:
            yield "min", f"min ({low}) is greater than max ({high})"

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        low, high = assertion.params.get("min"), assertion.params.get("max")
        if low is None and high is None:
            raise EvaluationError("word_count needs 'min', 'max' or both")
        text = check.response.text
        count = len(text.split())
        passed = (low is None or count >= low) and (high is None or count <= high)
        bounds = " and ".join(
            part
            for part in (
                f"at least {low}" if low is not None else "",
                f"at most {high}" if high is not None else "",
            )
            if part
        )
        return Verdict(
            passed,
            f"output has {count} words (expected {bounds}); output: {show(text, 120)}",
            expected={k: v for k, v in (("min", low), ("max", high)) if v is not None},
            actual=count,
        )


class Latency(AssertionType):
    name = "latency"
    description = "The agent answered within max milliseconds."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {"max": {"type": "number", "exclusiveMinimum": 0, "description": "Milliseconds."}},
        "required": ["max"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        limit = assertion.params["max"]
        took = check.response.latency_ms
        if took is None:
            raise EvaluationError("latency is unknown: the target did not measure this response")
        passed = took <= limit
        return Verdict(passed, f"latency {took:.0f} ms (expected at most {limit} ms)", limit, took)


class Cost(AssertionType):
    name = "cost"
    description = "The response cost at most max US dollars."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {"max": {"type": "number", "minimum": 0, "description": "US dollars."}},
        "required": ["max"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        limit = assertion.params["max"]
        usage = check.response.usage
        if usage is None or usage.cost is None:
            raise EvaluationError("cost is unknown: the target did not report the cost of this response")
        passed = usage.cost <= limit
        return Verdict(passed, f"cost ${usage.cost:.6g} (expected at most ${limit:g})", limit, usage.cost)
