"""The engine's side of each assertion: a check that waits is held to the case timeout, whether
its timer was armed before it started or once it began to wait (specrun._run.verdicts)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import specrun
from specrun._core.data import Assertion, Case, Context, Location, Message, Response
from specrun._core.kinds import AssertionType, Check, Verdict
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run.verdicts import evaluate_all

ENDED: list[str] = []


class Waits(AssertionType):
    """Data only, no model: the engine starts it before arming its timer."""

    name = "waits"
    params_schema: ClassVar[dict[str, Any]] = {"properties": {"seconds": {"type": "number"}}}

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        try:
            await asyncio.sleep(0)  # a bare yield to the loop first, then a real wait
            await asyncio.sleep(assertion.params["seconds"])
        except BaseException as exc:  # the timeout's cancellation reaches the check itself
            ENDED.append(type(exc).__name__)
            raise
        return Verdict(True, f"waited {assertion.params['seconds']}s")


class ScriptLike(Waits):
    """Runs user code (``data_only`` False): its timer is armed before it starts."""

    name = "waits_eagerly"
    data_only = False


class _Types:
    @specrun.hookimpl
    def register_assertion_types(self, register: Callable[[type[AssertionType]], None]) -> None:
        register(Waits)
        register(ScriptLike)


@pytest.fixture(scope="module")
def registry() -> Any:
    return get_plugin_manager(extra=[_Types()]).registry


def _verdicts(registry: Any, seconds: float, timeout: float) -> list[tuple[str, str]]:
    case = Case(id=f"waits-{seconds}", location=Location("<test>", 1), input=[Message("user", "hi")])
    check = Check(Response("ok"), case, Context(case_id=case.id), None, case.input)
    assertions = [
        Assertion("waits", {"seconds": seconds}),
        Assertion("waits_eagerly", {"seconds": seconds}),
        Assertion("contains", {"value": "ok"}),
    ]
    results = asyncio.run(evaluate_all(assertions, check, registry, timeout))
    return [(r.status, r.message) for r in results]


def test_a_check_that_waits_a_little_passes_with_its_own_message(registry: Any) -> None:
    assert _verdicts(registry, 0.01, 5.0) == [
        ("passed", "waited 0.01s"),
        ("passed", "waited 0.01s"),
        ("passed", 'output contains "ok"; output: "ok"'),
    ]


def test_a_check_that_waits_past_the_case_timeout_is_an_error_naming_it(registry: Any) -> None:
    ENDED.clear()
    assert _verdicts(registry, 30.0, 0.05) == [
        ("error", "waits assertion did not finish within the case timeout (50ms)"),
        ("error", "waits_eagerly assertion did not finish within the case timeout (50ms)"),
        ("passed", 'output contains "ok"; output: "ok"'),
    ]
    assert ENDED == ["CancelledError", "CancelledError"]
