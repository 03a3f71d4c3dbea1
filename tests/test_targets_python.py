"""The python target: sync and async agents, structured output, errors, worker threads."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from specrun_plugins.targets.python import PythonTarget

from specrun import Context, Message, Response, TargetError, ToolCall
from specrun._run.blocking import run_blocking
from specrun.plugin import Adapter, Session

AGENTS = Path(__file__).parent / "agents"
CTX = Context(case_id="c1", user="ann")


def target(function: str) -> PythonTarget:
    return PythonTarget({"type": "python", "function": function}, AGENTS)


async def ask(function: str, text: str = "hi") -> object:
    return await target(function).respond([Message("user", text)], CTX)


async def test_sync_agent_returns_text_with_latency():
    response = await ask("py_agents:echo", "hello")
    assert response.content == "echo: hello"
    assert response.latency_ms is not None and response.latency_ms >= 0


async def test_async_agent_and_dotted_reference():
    response = await ask("py_agents.async_echo")
    assert response.content == "async echo: hi (ann)"


async def test_async_callable_instance():
    assert (await ask("py_agents:instance")).content == "async instance"


async def test_structured_output():
    response = await ask("py_agents:structured")
    assert response.content == {"answer": 42, "case": "c1", "turns": 1}
    assert response.json == {"answer": 42, "case": "c1", "turns": 1}


async def test_response_object_keeps_its_own_latency_and_tool_calls():
    response = await ask("py_agents:full", "cats")
    assert response.latency_ms == 7.0
    assert [(t.name, t.arguments) for t in response.tool_calls] == [("search", {"q": "cats"})]


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("py_agents:boom", "agent error: ValueError: bad input"),
        ("py_agents:async_boom", "agent error: KeyError: 'missing'"),
        ("py_agents:returns_set", "agent returned set; expected str, dict, list or specrun.Response"),
    ],
)
async def test_agent_failures_are_target_errors(function, message):
    with pytest.raises(TargetError) as info:
        await ask(function)
    assert str(info.value) == message


async def test_agent_cannot_rewrite_the_conversation():
    messages = [Message("user", "hi")]
    await target("py_agents:mutating").respond(messages, CTX)
    assert len(messages) == 1


async def test_blocking_agent_runs_in_a_thread_while_the_loop_keeps_running():
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    response = await ask("py_agents:blocking")
    task.cancel()
    assert response.content.startswith("slept in specrun-")
    assert ticks >= 5  # the loop ran during the agent's 0.15 s sleep


async def test_blocking_agents_run_in_parallel_and_a_timeout_still_fires():
    agent = target("py_agents:blocking")
    start = time.perf_counter()
    replies = await asyncio.gather(*(agent.respond([Message("user", "x")], CTX) for _ in range(20)))
    assert len(replies) == 20
    assert time.perf_counter() - start < 2.0  # 20 x 0.15 s serially would be 3 s
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.respond([Message("user", "x")], CTX), 0.05)


async def test_run_blocking_passes_exceptions_and_uses_a_daemon_thread():
    assert await run_blocking(lambda: threading.current_thread().daemon)
    with pytest.raises(ZeroDivisionError):
        await run_blocking(lambda: 1 / 0)


def test_problems_report_a_missing_module_or_function():
    assert list(target("py_agents:echo").problems()) == []
    [(field, message)] = target("nowhere:agent").problems()
    assert field == "function" and "cannot find module 'nowhere'" in message
    [(field, message)] = target("py_agents:absent").problems()
    assert field == "function" and "no function 'absent'" in message


async def test_missing_function_at_run_time_is_a_target_error():
    with pytest.raises(TargetError, match="cannot find module 'nowhere'"):
        await ask("nowhere:agent")


async def test_session_resends_the_history():
    session = target("py_agents:structured").session(CTX)
    history = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    assert (await session.send(history)).content["turns"] == 3
    await session.close()


# -- framework adapters: the mechanism, with an in-test "framework" ----------------------------


class Bot:
    """A toy framework's agent: not callable, so only an adapter can run it."""

    def __init__(self, name: str):
        self.name = name


class BotResult:
    def __init__(self, text: str, calls: list[str]):
        self.text, self.calls = text, calls


class BotAdapter(Adapter):
    name = "toybot"
    modules = (__name__,)  # this test module stands for the framework: imported, so asked

    @classmethod
    def claims(cls, agent):
        return isinstance(agent, Bot)

    def session(self, agent, context):
        adapter = self

        class _Session(Session):
            async def send(self, messages):
                return adapter.unwrap(BotResult(f"{agent.name}: {messages[-1].text}", ["search"]))

        return _Session()

    def unwrap(self, value):
        if not isinstance(value, BotResult):
            return None
        return Response(value.text, tool_calls=[ToolCall(n, status="ok", step=1, turn=1) for n in value.calls])


def adapted(function: str) -> PythonTarget:
    made = target(function)
    made.adapters = (BotAdapter,)
    return made


async def test_an_object_an_adapter_claims_runs_through_its_session():
    made = adapted(f"{__name__}:BOT")
    assert not list(made.problems())
    response = await made.session(CTX).send([Message("user", "hello")])
    assert response.text == "toy: hello" and response.tools_reported
    assert [(t.name, t.status, t.step) for t in response.tool_calls] == [("search", "ok", 1)]


async def test_a_function_returning_a_frameworks_result_is_unwrapped():
    response = await adapted(f"{__name__}:returns_result").respond([Message("user", "x")], CTX)
    assert response.text == "plain" and [t.name for t in response.tool_calls] == ["search"]
    text_only = await adapted("py_agents:echo").respond([Message("user", "x")], CTX)
    assert not text_only.tools_reported  # a plain reply reports no tools: unknown, not none


def test_an_object_no_adapter_runs_is_bad_input():
    [(field, message)] = list(target(f"{__name__}:BOT").problems())
    assert field == "function" and "is a Bot: neither a function (messages, ctx) nor a framework agent" in message


BOT = Bot("toy")


def returns_result(messages, ctx):
    return BotResult("plain", ["search"])
