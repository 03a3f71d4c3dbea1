"""The ``match`` assertion: Agent Kernel's compare (score, llm or fallback) over expected answers.

The verdict's details record the stage that decided and every attempt; see ``specrun._judges.matching``.
``samples: N`` asks the llm stage's judge N times, the majority deciding (:mod:`specrun._judges.samples`);
a verdict of the score stage is offline and certain, so it is reached once.
Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..._core.data import MISSING, Assertion
from ..._core.errors import EvaluationError
from ..._core.kinds import AssertionType, Check, Verdict
from ..._core.services import Services
from ..matching import DEFAULT_MODE as DEFAULT_COMPARE_MODE
from ..matching import MATCH_THRESHOLD as COMPARE_THRESHOLD
from ..matching import MODES as COMPARE_MODES
from ..matching import CompareResult, alternatives, compare
from ..samples import SAMPLES_PARAM, sampled
from .judge import run_of


def _alternatives(value: Any) -> list[str]:
    try:
        return alternatives(value)
    except (TypeError, ValueError):
        raise EvaluationError(f"match needs `expected` text or a list of texts, not {value!r}") from None


def _mode(params: dict[str, Any], services: Services | None) -> str:
    """The assertion's own mode, else ``compare_mode`` of the project config, else the default."""
    config = services.config if services is not None else {}
    return str(params.get("mode") or config.get("compare_mode") or DEFAULT_COMPARE_MODE)


class Match(AssertionType):
    name = "match"
    description = (
        "The response matches one of the expected answers: score (quasi-exact), "
        "llm (a judge per answer) or fallback (score, then llm)."
    )
    needs_model: ClassVar[bool] = True
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "expected": {
                "type": ["string", "array"],
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Acceptable answers (any one passes); default: the case's expected.",
            },
            "threshold": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": f"Pass when an answer's score >= threshold (default {COMPARE_THRESHOLD}).",
            },
            "mode": {
                "enum": list(COMPARE_MODES),
                "description": "Default: compare_mode in specrun.yaml, else fallback.",
            },
            "contains": {
                "type": "boolean",
                "description": "Score mode also passes when an expected answer occurs in the response as whole words.",
            },
            "model": {"type": "string", "description": "litellm model for the llm stage."},
            "samples": SAMPLES_PARAM,
        },
    }

    @classmethod
    def uses_model(cls, assertion: Assertion, config: dict[str, Any]) -> bool:
        # score mode never asks a judge; preloading litellm for it cost seconds of CPU mid-run
        return (assertion.params.get("mode") or config.get("compare_mode") or DEFAULT_COMPARE_MODE) != "score"

    @classmethod
    def reads_expected(cls, assertion: Assertion) -> bool:
        return "expected" not in assertion.params

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        expected = params.get("expected", MISSING)
        if expected is MISSING:
            expected = check.case.expected
        if expected is MISSING:
            raise EvaluationError("match needs `expected` on the assertion or on the case")
        alternatives = _alternatives(expected)
        services = check.services
        mode = _mode(params, services)
        messages = check.messages or check.case.input
        users = [m for m in messages if m.role == "user"]
        threshold = float(params.get("threshold", COMPARE_THRESHOLD))
        containment = bool(params.get("contains", False))

        async def judge(sample: int) -> Verdict:
            result = await compare(
                check.response.text,
                alternatives,
                mode=mode,
                threshold=threshold,
                user_input=users[-1].text if users else None,
                judge=getattr(services, "models", None),
                containment=containment,
                model=params.get("model"),
                run=run_of(check),
                sample=sample,
            )
            return _verdict(result, alternatives, check.response.text)

        if mode != "llm":  # the score stage decides alone, offline, when it matches (or in score mode)
            offline = await compare(
                check.response.text, alternatives, mode="score", threshold=threshold, containment=containment
            )
            if mode == "score" or offline.passed:
                return await judge(1)
        return await sampled(check, params, judge)


def _verdict(result: CompareResult, alternatives: list[str], actual: str) -> Verdict:
    if result.problem is not None:
        return Verdict(False, result.problem, usage=result.usage, error=True)
    details = {k: v for k, v in result.to_dict().items() if k != "usage"}
    reason = result.reason
    if result.passed:
        message = f"matched by {result.decided_by}" + (f": {reason}" if reason else "")
    elif result.decided_by == "score":
        message = f"no expected answer matches (score mode, threshold {result.threshold:g})"
    else:
        message = f"no expected answer judged close enough: {reason}"
    return Verdict(
        result.passed,
        message,
        expected=alternatives,
        actual=actual,
        score=result.score,
        details=details,
        usage=result.usage,
    )
