"""The case timeout (specrun._run.deadline): a check or an agent that waits is held to it, whether
its timer was armed before it started or once it began to wait; the deadline is the same."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import specrun
from specrun._core.data import Assertion, Case, Context, Location, Message, Response
from specrun._core.kinds import AssertionType, Check, Verdict
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run.verdicts import evaluate_all
from tests.support.cli import run_cli

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


AGENTS = """
import asyncio, time

async def at_once(messages, ctx):
    return "ok " + ctx.case_id

async def blocks_then_waits(messages, ctx):
    time.sleep(0.15)  # past the deadline before it first waits: that counts
    await asyncio.sleep(0)
    return "too late"

async def waits(messages, ctx):
    await asyncio.sleep(30)
"""


def test_an_agent_is_held_to_the_deadline_set_when_its_answer_started(tmp_path: Path) -> None:
    (tmp_path / "deadline_agents.py").write_text(AGENTS)
    (tmp_path / "agent.yaml").write_text("target: python:deadline_agents:at_once\n")
    # "waits" first: its deadline passes while "blocks_then_waits" holds the loop
    functions = ("waits", "blocks_then_waits")
    cases = [{"id": f, "input": "hi", "target": f"python:deadline_agents:{f}", "timeout": "100ms"} for f in functions]
    cases += [{"id": "a", "input": "hi", "assertions": [{"type": "contains", "value": "ok a"}], "timeout": "100ms"}]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    done = run_cli(["s.jsonl", "-j", "3", "-o", "out.jsonl"], tmp_path)
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    got = {r["id"]: (r["status"], r["error"]) for r in records if r["type"] == "result"}
    assert got == {
        "a": ("passed", None),  # answered at once
        "blocks_then_waits": ("error", "timeout after 100ms"),  # its time before it first waited counts
        "waits": ("error", "timeout after 100ms"),
    }, done.stdout + done.stderr
