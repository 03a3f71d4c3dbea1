"""The OpenAI Agents SDK adapter, with the real SDK against the loopback chat-completions server:
an ``agents.Agent`` named as the target (no glue), a function returning a ``RunResult`` or a
``ChatCompletion``, a dynamic case continuing the SDK's conversation, the case timeout.

One ``specrun`` run (in process) of one suite serves most tests: the SDK is imported once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import sys
import time
import types
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from specrun_plugins.adapters.openai_agents import OpenAIAgentsAdapter, OpenAIChatCompletionAdapter
from specrun_plugins.targets.python import PythonTarget
from support.cli import run_cli
from support.llm_server import LLMServer

from specrun import Context, Message, TargetError

# Imported in the background from the start (tests/conftest.py): the OpenAI Agents SDK, 1 s.
PRELOADS = ("agents",)

if TYPE_CHECKING:  # the SDK and openai are imported by the tests that use them: collection pays 1-2 s else
    from openai.types.chat import ChatCompletion

EXAMPLE = Path(__file__).parents[1] / "examples" / "openai_agents"

AGENT = """
import asyncio, os, threading, time
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

client = AsyncOpenAI(base_url=os.environ["MOCK_LLM"], api_key="test", max_retries=0)

@function_tool
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"

STARTED, CANCELLED = threading.Event(), threading.Event()  # what the direct timeout tests wait for

@function_tool
async def slow_lookup(query: str) -> str:
    '''A lookup that outlives any case timeout.'''
    STARTED.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CANCELLED.set()
        raise
    return "late"

@function_tool
def stuck_lookup(query: str) -> str:
    '''A sync tool that hangs: the SDK runs it in a thread, which no timeout can stop.'''
    STARTED.set()
    time.sleep(8)
    return "late"

@function_tool(timeout=0.05)
async def timed() -> str:
    await asyncio.sleep(5)
    return "late"

@function_tool(failure_error_function=lambda ctx, error: f"sorry: {error}")
def own_failure() -> str:
    raise ValueError("boom")

@function_tool
def fine() -> dict:
    return {"a": 1}

@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    return "paid"

@function_tool
def tick(file: str) -> str:
    '''A tool with a side effect: a line added to a file.'''
    with open(file, "a") as out:
        out.write("tick\\n")
    return "ticked"

agent = Agent(
    name="weather",
    instructions="Answer about the weather.",
    tools=[get_weather, slow_lookup, stuck_lookup, timed, own_failure, fine, pay, tick],
    model=OpenAIChatCompletionsModel(model="mock", openai_client=client),
)

async def ask(messages, ctx):
    return await Runner.run(agent, messages[-1].text, run_config=RunConfig(tracing_disabled=True))

async def complete(messages, ctx):
    return await client.chat.completions.create(model="mock", messages=[m.to_dict() for m in messages])
"""

SUITE = """
target: python:weather_agent:agent
cases:
  - id: slow
    input: slow thing
    timeout: 0.2s
    assertions: [{type: tool_called, name: slow_lookup}]
  - id: paris
    input: weather in Paris
    assertions:
      - {type: tool_called, name: get_weather, arguments: {city: Paris}, times: 1}
      - {type: contains, value: sunny in Paris}
  - id: wrong-city
    input: weather in Paris
    assertions: [{type: tool_called, name: get_weather, arguments: {city: London}}]
  - id: hello
    input: hello
    options: {model_settings: {temperature: 0}}
    assertions: [{type: tool_not_called, name: get_weather}]
  - id: atlantis
    input: weather in Atlantis
    assertions: [{type: tool_not_called, name: get_weather}]
  - id: run-result
    target: python:weather_agent:ask
    input: weather in Oslo
    assertions: [{type: tool_called, name: get_weather, arguments: {city: Oslo}}]
  - id: completion
    target: python:weather_agent:complete
    input: weather in Rome
    assertions: [{type: tool_called, name: get_weather, arguments: {city: Rome}}]
  - id: statuses
    input: statuses
    assertions: [{type: tool_called, name: [timed, own_failure, fine], times: 3}]
  - id: approval
    input: pay 5
    assertions: [{type: tool_called, name: pay}]
  - id: max-turns
    input: weather in Paris
    options: {max_turns: 1}
    assertions: [{type: tool_called, name: get_weather}]
  - id: bad-option
    input: hello
    options: {max_turns: "3"}
    assertions: [{type: tool_not_called}]
  - id: misspelt-setting
    input: hello
    options: {model_settings: {temprature: 0}}
    assertions: [{type: tool_not_called}]
  - id: history
    input:
      - {role: system, content: Be terse.}
      - {role: user, content: weather in Oslo}
      - role: assistant
        content: ""
        tool_calls: [{id: h1, type: function, function: {name: get_weather, arguments: '{"city": "Oslo"}'}}]
      - {role: tool, tool_call_id: h1, content: rain in Oslo}
      - {role: assistant, content: It rains in Oslo.}
      - {role: user, content: thanks}
    assertions: [{type: tool_not_called}]
  - id: ticks-over-limit
    input: tick 5 into over.txt
    limits: {tool_calls: 2}
    assertions: [{type: contains, value: ticked}]
  - id: ticks-within-limit
    input: tick 5 into within.txt
    limits: {tool_calls: 5, tokens: 1000}
    assertions: [{type: tool_called, name: tick, times: 5}]
  - id: chat
    simulator: {type: scripted, turns: ["weather in Paris", "and in Rome?"]}
    checkpoints:
      - {id: paris, assertion: {type: tool_called, name: get_weather, arguments: {city: Paris}}}
      - {id: rome, after: [paris], assertion: {type: tool_called, name: get_weather, arguments: {city: Rome}}}
"""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def weather_model() -> Any:
    """The server's replies: a tool's answer is summed up, a city asks for the weather tool, text
    starting with "slow" for the slow one, and anything else is echoed. Decided by each request
    alone, so that cases running in parallel get their own answers."""
    ids = count()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        asked = next(_text(m) for m in messages if m["role"] == "user")
        if ticks := re.fullmatch(r"tick (\d+) into (\S+)", asked):  # one call per model response
            if sum(m["role"] == "tool" for m in messages) < int(ticks.group(1)):
                call = {"name": "tick", "arguments": {"file": ticks.group(2)}, "id": f"call_{next(ids)}"}
                return {"tool_calls": [call]}
            return {"content": "all ticked"}
        if messages[-1]["role"] == "tool":
            return {"content": "It is " + "; ".join(_text(m) for m in messages if m["role"] == "tool")}
        text = _text(messages[-1])
        if text == "pay 5":
            return {"tool_calls": [{"name": "pay", "arguments": {"amount": 5}, "id": f"call_{next(ids)}"}]}
        if text == "statuses":
            return {"tool_calls": [{"name": n, "id": f"call_{next(ids)}"} for n in ("timed", "own_failure", "fine")]}
        if text.startswith(("slow", "stuck")):
            name = f"{text.split()[0]}_lookup"
            return {"tool_calls": [{"name": name, "arguments": {"query": text}, "id": f"call_{next(ids)}"}]}
        if city := re.search(r"in (\w+)", text):
            call = {"name": "get_weather", "arguments": {"city": city.group(1)}, "id": f"call_{next(ids)}"}
            return {"tool_calls": [call]}
        return {"content": f"echo: {text}"}

    return respond


@pytest.fixture(scope="module")
def server():
    with LLMServer(weather_model()) as srv:
        yield srv


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oai")
    (root / "specrun.yaml").write_text("timeout: 10s\n")
    (root / "weather_agent.py").write_text(AGENT)
    (root / "suite.yaml").write_text(SUITE)
    return root


@pytest.fixture(scope="module")
def run(server: LLMServer, project: Path) -> dict[str, dict[str, Any]]:
    """Each case's result record."""
    env = {**os.environ, "MOCK_LLM": server.base_url}
    proc = run_cli(["suite.yaml", "-j", "20", "-o", "out.jsonl", "--no-history"], project, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in (project / "out.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in lines if r["type"] == "result"}


def test_tool_assertions_pass_and_fail_on_an_agent_with_no_glue(run):
    assert {k: run[k]["status"] for k in ("paris", "wrong-city", "hello", "atlantis")} == {
        "paris": "passed",
        "wrong-city": "failed",
        "hello": "passed",
        "atlantis": "failed",
    }
    [message] = [a["message"] for a in run["wrong-city"]["assertions"] if a["status"] == "failed"]
    assert 'matched 0; calls: get_weather({"city": "Paris"})' in message


def test_a_call_carries_its_result_id_status_step_and_turn_and_the_run_its_usage(run):
    paris = run["paris"]
    assert paris["output"] == "It is sunny in Paris"
    [call] = paris["tool_calls"]
    assert call["result"] == "sunny in Paris" and call["id"].startswith("call_")
    assert (call["name"], call["arguments"], call["status"], call["step"], call["turn"]) == (
        "get_weather",
        {"city": "Paris"},
        "ok",
        1,
        1,
    )
    assert paris["usage"]["total_tokens"] == 30  # two model responses of 15 tokens


def test_a_tool_that_raised_is_a_failed_call(run):
    [call] = run["atlantis"]["tool_calls"]
    assert call["status"] == "error" and call["arguments"] == {"city": "Atlantis"}
    assert run["atlantis"]["output"].startswith("It is An error occurred")  # the SDK told the model


def test_a_status_is_error_when_the_sdk_says_a_call_failed_and_unknown_when_it_cannot(run):
    calls = {c["name"]: c for c in run["statuses"]["tool_calls"]}
    assert (
        calls["timed"]["status"] == "error" and calls["timed"]["result"] == "Tool 'timed' timed out after 0.05 seconds."
    )
    # The tool's own failure_error_function answered for it: the SDK does not say it failed.
    assert "status" not in calls["own_failure"] and calls["own_failure"]["result"] == "sorry: boom"
    assert calls["fine"]["status"] == "ok" and calls["fine"]["result"] == {"a": 1}
    assert {c["step"] for c in calls.values()} == {1}  # one model response asked for all three


def test_a_run_stopped_for_approval_says_so(run):
    approval = run["approval"]
    assert approval["warnings"] == [
        "the run stopped for approval of pay: specrun approves no tool call, so none of them ran"
    ]
    [call] = approval["tool_calls"]
    assert call["arguments"] == {"amount": 5} and "result" not in call and "status" not in call


def test_a_function_returning_a_run_result_or_a_chat_completion_is_unwrapped(run):
    assert run["run-result"]["status"] == "passed"
    assert [(c["result"], c["status"]) for c in run["run-result"]["tool_calls"]] == [("sunny in Oslo", "ok")]
    assert run["completion"]["status"] == "passed"
    [asked] = run["completion"]["tool_calls"]  # a completion only asks: nothing ran the tool
    assert asked["arguments"] == {"city": "Rome"} and "result" not in asked and "status" not in asked


def test_a_dynamic_case_continues_the_sdks_conversation(run, server):
    chat = run["chat"]
    assert chat["status"] == "passed", chat
    assert [(t["turn"], [c["arguments"]["city"] for c in t["tool_calls"]]) for t in chat["turns"]] == [
        (1, ["Paris"]),
        (2, ["Rome"]),
    ]
    assert [c["turn"] for c in chat["tool_calls"]] == [1, 2]  # the case's evidence: every turn's calls
    # The second turn's request replays the first turn's tool call and output, as the SDK keeps them.
    second = next(r["messages"] for r in server.requests if _text(r["messages"][-1]) == "and in Rome?")
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "get_weather" and second[3]["content"] == "sunny in Paris"


def test_a_case_over_its_tool_call_limit_is_stopped_before_the_extra_call_runs(run, project):
    over = run["ticks-over-limit"]
    assert over["status"] == "failed"
    assert over["error"] == "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent)"
    # The model asked for a third call: it was stopped there, before the tool ran (and before
    # the five calls the model would have made).
    assert (project / "over.txt").read_text().splitlines() == ["tick", "tick"]
    assert [(c["name"], c.get("result"), c["step"]) for c in over["tool_calls"]] == [
        ("tick", "ticked", 1),
        ("tick", "ticked", 2),
        ("tick", None, 3),
    ]
    assert over["usage"]["total_tokens"] == 45  # the three model responses it had
    within = run["ticks-within-limit"]
    assert within["status"] == "passed", within
    assert len((project / "within.txt").read_text().splitlines()) == 5


def test_the_case_timeout_makes_the_case_an_error(run):
    assert run["slow"]["status"] == "error" and run["slow"]["error"] == "timeout after 200ms"


@pytest.fixture
def agent_module(server: LLMServer, project: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The test project's agent module, imported here under a name of its own."""
    monkeypatch.setenv("MOCK_LLM", server.base_url)
    spec = importlib.util.spec_from_file_location("oai_weather_agent", project / "weather_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def cancel_once_started(module: types.ModuleType, text: str) -> None:
    """What the case timeout does, at the moment the tool runs: cancel the task awaiting ``send``."""
    session = OpenAIAgentsAdapter().session(module.agent, Context("c1"))
    task = asyncio.create_task(session.send([Message("user", text)]))
    async with asyncio.timeout(10):
        while not module.STARTED.is_set():
            await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_cancelling_a_turn_cancels_the_run_and_its_tools(agent_module):
    asyncio.run(cancel_once_started(agent_module, "slow thing"))
    assert agent_module.CANCELLED.is_set()  # the tool was cancelled, not left running


def test_a_sync_tool_past_the_timeout_is_abandoned_not_waited_for(agent_module):
    start = time.perf_counter()
    asyncio.run(cancel_once_started(agent_module, "stuck thing"))  # its loop closes, as a run's does
    # The tool sleeps 8 s in the SDK's thread: the loop's close does not wait for it.
    assert time.perf_counter() - start < 5


def test_options_set_the_run_and_a_failed_run_keeps_its_calls(run):
    assert run["max-turns"]["status"] == "error"
    assert run["max-turns"]["error"] == "agent error: MaxTurnsExceeded: Max turns (1) exceeded"
    assert [c["result"] for c in run["max-turns"]["tool_calls"]] == ["sunny in Paris"]
    assert run["bad-option"]["error"] == 'options.max_turns must be a positive integer, not "3"'
    assert run["misspelt-setting"]["error"].startswith(
        "options.model_settings: unknown temprature (known: temperature,"
    )


def test_model_settings_reach_the_model(run, server):
    # Three cases say hello; the two with bad options never reach the model.
    assert [r.get("temperature") for r in server.requests if _text(r["messages"][-1]) == "hello"] == [0]


def test_a_message_history_becomes_the_sdks_items(run, server):
    assert run["history"]["status"] == "passed"
    sent = next(r["messages"] for r in server.requests if _text(r["messages"][-1]) == "thanks")
    assert sent[1:] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "weather in Oslo"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "h1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "h1", "content": "rain in Oslo"},
        {"role": "assistant", "content": "It rains in Oslo."},
        {"role": "user", "content": "thanks"},
    ]


# -- claims and unwrap, directly ----------------------------------------------------------------


def test_only_the_sdks_agent_is_claimed_not_any_agents_module(monkeypatch):
    import agents

    real = agents.Agent(name="x")
    assert OpenAIAgentsAdapter.claims(real)
    fake = types.ModuleType("agents")
    fake.__file__ = "/project/agents.py"  # a project's own agents.py with an Agent class

    class Agent:
        pass

    fake.Agent = Agent  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agents", fake)
    assert not OpenAIAgentsAdapter.claims(Agent()) and not OpenAIAgentsAdapter.claims(real)
    assert OpenAIAgentsAdapter().unwrap(object()) is None


def completion(message: dict[str, Any]) -> ChatCompletion:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "mock",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


def test_a_completion_without_tool_calls_reports_none_rather_than_unknown(tmp_path):
    target = PythonTarget({"function": "unused:reply"}, tmp_path)
    target.adapters = (OpenAIAgentsAdapter, OpenAIChatCompletionAdapter)
    response = target.unwrap(completion({"content": "plain"}))  # what a function's return goes through
    assert response.text == "plain" and response.tool_calls == [] and response.tools_reported
    assert response.usage is not None and response.usage.total_tokens == 5
    bad = completion(
        {"content": None, "tool_calls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{x"}}]}
    )
    with pytest.raises(TargetError, match=r"tool call 'f' has invalid JSON arguments: \{x"):
        target.unwrap(bad)


# -- the example ----------------------------------------------------------------------------------


def test_the_example_runs_offline_with_a_failing_tool_assertion(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "example")
    proc = run_cli(["-o", "out.jsonl", "--no-history"], tmp_path / "example")  # as its README says
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in (tmp_path / "example" / "out.jsonl").read_text().splitlines()]
    results = {r["id"]: r for r in lines if r["type"] == "result"}
    assert {k: r["status"] for k, r in results.items()} == {
        "forecast": "passed",
        "greeting-uses-no-tool": "passed",
        "unknown-city": "passed",
        "wrong-city": "failed",
        "two-cities": "passed",
    }
    assert [c["status"] for c in results["unknown-city"]["tool_calls"]] == ["error"]
