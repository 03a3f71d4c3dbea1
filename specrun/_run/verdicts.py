"""Apply assertions to a response: the engine's side of every assertion (negate, message, errors)."""

from __future__ import annotations

from typing import Any

from .._core.data import Assertion, Response, Status, Usage, format_duration
from .._core.errors import EvaluationError
from .._core.kinds import AssertionType, Check
from .._core.results import Verdict
from .._project.registry import Registry
from .deadline import within

_instances: dict[type, AssertionType] = {}


async def evaluate(assertion: Assertion, check: Check, registry: Registry) -> Verdict:
    """One assertion's verdict, settled; an assertion that cannot decide (or crashes) is an ``error``."""
    cls = registry.get("assertion", assertion.type)
    instance = _instances.get(cls) or _instances.setdefault(cls, cls())
    try:
        verdict = await instance.evaluate(assertion, check)
    except EvaluationError as exc:
        return Verdict.settled(assertion.type, "error", str(exc), details=exc.details or None)
    except Exception as exc:
        crashed = f"{assertion.type} assertion crashed: {type(exc).__name__}: {exc}"
        return Verdict.settled(assertion.type, "error", crashed)
    spent = verdict.usage if verdict.usage is not None and (verdict.usage.total_tokens or verdict.usage.cost) else None
    usage = {"usage": spent.to_dict()} if spent is not None else {}  # what the record says it cost
    if verdict.error:  # what could not be decided is an error, whatever negate says
        return Verdict.settled(assertion.type, "error", verdict.message, details=usage or None, usage=spent)
    passed = verdict.passed != assertion.negate
    message = verdict.message
    if assertion.negate and not passed:
        message = f"negated {assertion.type} matched" + (f": {message}" if message else "")
    if assertion.message and not passed:
        message = f"{assertion.message} ({message})" if message else assertion.message
    return Verdict.settled(
        assertion.type,
        "passed" if passed else "failed",
        message,
        verdict.expected,
        verdict.actual,
        verdict.score,
        {**verdict.details, **usage} if verdict.details is not None else usage or None,
        spent,
    )


async def evaluate_all(
    assertions: list[Assertion], check: Check, registry: Registry, timeout: float
) -> list[Verdict]:
    """Every assertion's verdict, each within ``timeout`` seconds (the case timeout): one that
    does not finish in time (a script that hangs) is an ``error`` that names it."""
    return [await _bounded(a, check, registry, timeout) for a in assertions]


async def _bounded(assertion: Assertion, check: Check, registry: Registry, timeout: float) -> Verdict:
    kind = registry.get("assertion", assertion.type)
    config: Any = check.services.config if check.services is not None else {}
    # A check that runs no user code and calls no model or agent (as its kind declares) is
    # started before its timer (specrun._run.deadline): contains, equals, regex... need none.
    eager = kind.data_only and not kind.agent_params and not kind.uses_model(assertion, config)
    try:
        return await within(evaluate(assertion, check, registry), timeout, eager)
    except TimeoutError:  # only ours: evaluate() turns an assertion's own exceptions into verdicts
        what = kind.label(assertion.params) if kind.label_params else f"{assertion.type} assertion"
        return Verdict.settled(
            assertion.type, "error", f"{what} did not finish within the case timeout ({format_duration(timeout)})"
        )


def combine(results: list[Verdict]) -> Status:
    """A case's status from its assertions: a definite fail decides; else an error; else passed."""
    statuses = {r.status for r in results}
    if "failed" in statuses:
        return "failed"
    if "error" in statuses:
        return "error"
    return "passed"


def judge_usage(results: list[Verdict]) -> Usage | None:
    """Tokens and cost the assertions spent (judges put theirs on their verdicts)."""
    total: Usage | None = None
    for r in results:
        if r.usage is not None:
            total = total or Usage()
            total.add(r.usage)
    return total


def spent_on(response: Response, verdicts: list[Verdict]) -> Usage | None:
    """What a case cost: its agent's answer and its judges, added up (None when neither said)."""
    spent = judge_usage(verdicts)
    if response.usage is None and spent is None:
        return None
    usage = Usage()
    usage.add(response.usage)
    usage.add(spent)
    return usage
