"""The script assertion: a Python function next to the suite decides.

Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import (
    MISSING,
    Assertion,
    AssertionType,
    Check,
    EvaluationError,
    UsageError,
    Verdict,
    load_callable,
    run_blocking,
)

from ._common import show

_REF = {
    "type": "string",
    "minLength": 1,
    "description": "module.func or module:func (scripts: prefix optional).",
}


def _wants_context(func: Callable[..., Any]) -> bool:
    """True when ``func`` takes a fourth positional argument (or ``*args``)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 4


def _verdict(result: Any, ref: str, expected: Any, output: Any) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool):
        return Verdict(result, f"script {ref} returned {result}; output: {show(output)}", expected, output)
    if isinstance(result, dict) and ("pass" in result or "passed" in result):
        passed, score = Verdict.checked(result.get("pass", result.get("passed")), result.get("score"), f"script {ref}")
        message = result.get("message") or result.get("reason") or f"script {ref} returned {passed}"
        extra = {k: v for k, v in result.items() if k not in ("pass", "passed", "message", "reason", "score")}
        return Verdict(passed, str(message), expected, output, score=score, details=extra or None)
    raise EvaluationError(
        f"script {ref} returned {show(result, 80)} ({type(result).__name__}); "
        "expected True/False or {'pass': bool, 'message': str, 'score': float}"
    )


class Script(AssertionType):
    name = "script"
    description = "A Python function (output, input, expected) returns a bool or {pass, message, score}."
    data_only = False
    label_params: ClassVar[tuple[str, ...]] = ("script", "use")
    ref_params: ClassVar[tuple[str, ...]] = ("script", "use")
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "script": _REF,
            "use": {**_REF, "description": "The function; an alias of script."},
            "options": {
                "type": "object",
                "description": "Passed to a function that takes a fourth argument.",
            },
        },
    }

    @classmethod
    def reads_expected(cls, assertion: Assertion) -> bool:
        return True  # the function receives it

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        given = [k for k in ("script", "use") if k in assertion.params]
        if len(given) != 1:
            yield (
                "script",
                "give the function as either 'script' or 'use'" + (", not both" if given else ""),
            )
            return
        yield from super().problems(assertion, base_dir)  # the reference can be found (ref_params)

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        ref = params.get("script", params.get("use"))
        if not isinstance(ref, str):
            raise EvaluationError("script needs a 'script' (or 'use') reference")
        case = check.case
        search = [case.suite.base_dir if case.suite is not None else Path.cwd()]
        try:
            func = load_callable(ref, search)
        except UsageError as exc:
            raise EvaluationError(str(exc)) from exc
        output = check.response.content
        expected = None if case.expected is MISSING else case.expected
        args: list[Any] = [output, [m.to_dict() for m in case.input], expected]
        if _wants_context(func):
            args.append(
                {
                    "options": params.get("options", {}),
                    "tool_calls": [c.to_dict() for c in check.response.tool_calls],
                    "response": check.response.to_dict(),
                    "context": check.context.to_dict(),
                }
            )
        try:
            if inspect.iscoroutinefunction(func):
                result = await func(*args)
            else:  # like a sync hook: in its own thread, so a slow script blocks no other case
                result = await run_blocking(func, *args)
                if inspect.isawaitable(result):
                    result = await result
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # a script's sys.exit() ends only the script
            raise EvaluationError(f"script {ref} raised {type(exc).__name__}: {exc}") from exc
        return _verdict(result, ref, expected, output)
