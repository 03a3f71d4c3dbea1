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


async def evaluate(
    assertion: Assertion, check: Check, registry: Registry, kind: type[AssertionType] | None = None
) -> Verdict:
    """One assertion's verdict, settled; an assertion that cannot decide (or crashes) is an ``error``.
    ``kind``: its type's class, when the caller has looked it up already."""
    cls = kind or registry.get("assertion", assertion.type)
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
    if verdict.error:  # what could not be decided is an error, whatever negate says; its details stay (samples)
        details = {**(verdict.details or {}), **usage}
        return Verdict.settled(assertion.type, "error", verdict.message, details=details or None, usage=spent)
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
    verdicts = []
    for a in assertions:  # a loop, not a comprehension: an awaiting one is a coroutine more per case
        verdicts.append(await _bounded(a, check, registry, timeout))
    return verdicts


async def _bounded(assertion: Assertion, check: Check, registry: Registry, timeout: float) -> Verdict:
    kind = registry.get("assertion", assertion.type)
    config: Any = check.services.config if check.services is not None else {}
    # A check that runs no user code and calls no model or agent (as its kind declares) is
    # started before its timer (specrun._run.deadline): contains, equals, regex... need none.
    eager = kind.data_only and not kind.agent_params and not kind.uses_model(assertion, config)
    try:
        return await within(evaluate(assertion, check, registry, kind), timeout, eager)
    except TimeoutError:  # only ours: evaluate() turns an assertion's own exceptions into verdicts
        what = kind.label(assertion.params) if kind.label_params else f"{assertion.type} assertion"
        return Verdict.settled(
            assertion.type, "error", f"{what} did not finish within the case timeout ({format_duration(timeout)})"
        )


async def evaluate_case(
    check: Check, success: tuple[str, ...], registry: Registry, timeout: float
) -> list[Verdict]:
    """The verdicts of a case's assertions (``evaluate_all``) and of the check of the response's
    ``state`` that its target's ``success_states`` imply: the installed type with a
    ``state_param`` checks a state that is not None, unless the case checks it itself; with no
    such type installed, a state to check is an ``error``. A call to the case's mocked tools
    that no mock answered is a failed verdict of its own."""
    assertions, state = check.case.assertions, check.response.state
    mocked = []
    if check.case.tools:  # a call the agent made that no mock answered fails the case (specrun._mocks)
        from .._mocks.session import verdicts as unmocked

        mocked = unmocked(check.response)
    if not success or state is None:
        return [*mocked, *await evaluate_all(assertions, check, registry, timeout)]
    cls = registry.declaring("assertion", "state_param")
    if cls is None:
        message = f"state {state!r} needs a check and no installed assertion type checks states"
        results = await evaluate_all(assertions, check, registry, timeout)
        return [*mocked, *results, Verdict.settled("state", "error", message)]
    if not any(a.type == cls.name for a in assertions):
        assertions = [*assertions, Assertion(cls.name, {cls.state_param: list(success)})]
    return [*mocked, *await evaluate_all(assertions, check, registry, timeout)]


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


def spent_on(response: Response, judged: Usage | None) -> Usage | None:
    """What a case cost: its agent's answer and its judges (``judge_usage``) added up; None
    when neither said."""
    if response.usage is None and judged is None:
        return None
    usage = Usage()
    usage.add(response.usage)
    usage.add(judged)
    return usage
