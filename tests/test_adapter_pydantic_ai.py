"""The pydantic-ai adapter: real pydantic-ai agents, driven offline by FunctionModel, run by
specrun with no glue (the agent object as the target, or a function returning AgentRunResult).

One run of one suite holds every case (passing and failing tool assertions, a message history,
a dynamic conversation, timeouts, a crash), so pydantic-ai is imported once and the run paid once.
"""

from __future__ import annotations

import ast
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli

# Imported in the background from the start (tests/conftest.py): pydantic-ai, 0.6 s.
PRELOADS = ("pydantic_ai",)

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "plugins" / "specrun_plugins" / "adapters" / "pydantic_ai.py"

BOTS = '''
import asyncio, threading
from pathlib import Path
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel


def model(messages, info):
    """Calls tools as the prompt says; answers a tool's return with it; tells what it saw."""
    last = messages[-1]
    said = [p.content for m in messages for p in m.parts if p.part_kind == "user-prompt"][-1]
    returns = [p for p in last.parts if p.part_kind in ("tool-return", "retry-prompt")]
    if said.startswith("tick "):  # `tick N name`: N calls, one per step, each counted in ticks-name.txt
        _, times, name = said.split()
        ticked = sum(p.part_kind == "tool-return" for m in messages for p in m.parts)
        if ticked < int(times):
            return ModelResponse(parts=[ToolCallPart("tick", {"name": name})])
        return ModelResponse(parts=[TextPart(f"ticked {ticked} times")])
    if said == "crash" and returns:  # a second step, once search has returned
        return ModelResponse(parts=[ToolCallPart("boom", {}, "b1")])
    if returns:
        return ModelResponse(parts=[TextPart("; ".join(f"{p.tool_name}: {p.content}" for p in returns))])
    if said.startswith("search "):
        return ModelResponse(parts=[ToolCallPart("search", {"q": said[7:]}, "s1"), ToolCallPart("flaky", {}, "f1")])
    if said == "crash":
        return ModelResponse(parts=[ToolCallPart("search", {"q": "x"}, "s1")])
    if said == "settings":
        return ModelResponse(parts=[TextPart(f"temperature={info.model_settings['temperature']}")])
    if said.startswith("hang "):
        return ModelResponse(parts=[ToolCallPart(said[5:], {})])
    seen = [
        f"{p.part_kind}:{getattr(p, 'tool_name', p.part_kind)}={p.args if p.part_kind == 'tool-call' else p.content}"
        for m in messages[:-1] for p in m.parts
    ]
    return ModelResponse(parts=[TextPart("saw " + " | ".join(seen))])


agent = Agent(FunctionModel(model), retries=3)


@agent.tool_plain
def search(q: str) -> str:
    return f"found {q}"


@agent.tool_plain
def flaky() -> str:
    raise ModelRetry("the index is busy")


@agent.tool_plain
def tick(name: str) -> str:
    with open(f"ticks-{name}.txt", "a") as ticks:
        ticks.write("tick\\n")
    return "ticked"


@agent.tool_plain
def boom() -> str:
    raise ValueError("the tool broke")


@agent.tool_plain
def hang_sync() -> str:
    Path("daemon.txt").write_text(str(threading.current_thread().daemon))
    threading.Event().wait(60)  # abandoned at the case timeout
    return "never"


@agent.tool_plain
async def hang_async() -> str:
    await asyncio.sleep(3600)
    return "never"


async def returns_result(messages, ctx):
    return await agent.run(messages[-1].text)
'''

SUITE = """
name: pydantic-ai
target: python:bots:agent
cases:
  - id: calls-search
    input: search cats
    assertions:
      - {type: tool_called, name: search, arguments: {q: cats}}
      - {type: tool_not_called, name: boom}
  - id: wrong-arguments
    input: search cats
    assertions:
      - {type: tool_called, name: search, arguments: {q: dogs}}
  - id: forbidden-tool
    input: search cats
    assertions:
      - {type: tool_not_called, name: search}
  - id: through-a-function
    target: python:bots:returns_result
    input: search cats
    assertions:
      - {type: tool_called, name: search, arguments: {q: cats}}
  - id: through-a-function-fails
    target: python:bots:returns_result
    input: search cats
    assertions:
      - {type: tool_not_called, name: flaky}
  - id: history
    input:
      - {role: system, content: Be brief.}
      - {role: user, content: search cats}
      - role: assistant
        content: ""
        tool_calls: [{id: c9, type: function, function: {name: search, arguments: '{"q": "cats"}'}}]
      - {role: tool, tool_call_id: c9, content: found cats}
      - {role: assistant, content: Found cats.}
      - {role: user, content: what did you see?}
    assertions:
      - {type: tool_not_called}
  - id: settings
    input: settings
    options: {model_settings: {temperature: 0.25}}
  - id: dynamic
    simulator: {type: scripted, turns: [search cats, what did you see?]}
    checkpoints:
      - id: searched
        assertion: {type: tool_called, name: search}
      - id: remembers
        after: [searched]
        assertion: {type: contains, value: "tool-call:search={'q': 'cats'}"}
  - id: crash
    input: crash
  - id: ends-with-assistant
    input: [{role: user, content: hi}, {role: assistant, content: Hello.}]
  - id: bad-option
    input: hi
    options: {model_settings: hot}
  - id: over-tool-calls
    input: tick 5 over
    limits: {tool_calls: 2}
  - id: under-tool-calls
    input: tick 5 under
    limits: {tool_calls: 5}
  - id: over-tokens
    input: tick 5 tokens
    limits: {tokens: 300}
  - id: over-tool-calls-in-a-conversation
    simulator: {type: scripted, turns: [tick 5 talk, and again?]}
    limits: {tool_calls: 2}
    checkpoints: [{id: ticked, assertion: {type: contains, value: ticked}}]
  - id: hangs-in-a-thread
    input: hang hang_sync
    timeout: 200ms
  - id: hangs-awaiting
    input: hang hang_async
    timeout: 200ms
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = tmp_path_factory.mktemp("pyai")
    (project / "bots.py").write_text(BOTS)
    (project / "suite.yaml").write_text(SUITE)
    started = time.perf_counter()
    proc = run_cli(["suite.yaml", "-j", "4", "-o", "out.jsonl"], project)
    seconds = time.perf_counter() - started
    return {"proc": proc, "results": results_in(project / "out.jsonl"), "seconds": seconds, "project": project}


def results_in(path: Path) -> dict[str, dict[str, Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return {r["id"]: r for r in map(json.loads, lines) if r["type"] == "result"}


def calls(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("result", "status", "step", "turn")
    return [(c["name"], c["arguments"], *(c.get(k) for k in keys)) for c in result["tool_calls"]]


def test_the_agent_object_runs_with_no_glue_and_tool_assertions_pass_and_fail(run):
    proc, results = run["proc"], run["results"]
    assert proc.returncode == 1, proc.stdout + proc.stderr  # some cases fail on purpose
    assert results["calls-search"]["status"] == "passed"
    assert calls(results["calls-search"]) == [
        ("search", {"q": "cats"}, "found cats", "ok", 1, 1),
        ("flaky", {}, "the index is busy", "error", 1, 1),  # ModelRetry: the call failed
    ]
    assert results["calls-search"]["output"] == "search: found cats; flaky: the index is busy"
    assert results["calls-search"]["usage"]["total_tokens"] > 0
    wrong = results["wrong-arguments"]
    assert wrong["status"] == "failed"
    assert 'calls: search({"q": "cats"}), flaky({})' in wrong["assertions"][0]["message"]
    assert results["forbidden-tool"]["status"] == "failed"
    assert "expected no call to search; matched 1" in results["forbidden-tool"]["assertions"][0]["message"]


def test_a_function_returning_agent_run_result_is_unwrapped(run):
    results = run["results"]
    assert results["through-a-function"]["status"] == "passed"
    assert calls(results["through-a-function"])[0] == ("search", {"q": "cats"}, "found cats", "ok", 1, 1)
    assert results["through-a-function-fails"]["status"] == "failed"


def test_a_message_history_becomes_the_frameworks_history(run):
    history = run["results"]["history"]
    assert history["status"] == "passed", history
    assert history["output"] == (
        "saw system-prompt:system-prompt=Be brief. | user-prompt:user-prompt=search cats"
        ' | tool-call:search={"q": "cats"} | tool-return:search=found cats | text:text=Found cats.'
    )


def test_case_options_give_model_settings(run):
    assert run["results"]["settings"]["output"] == "temperature=0.25"


def test_each_simulated_turn_continues_the_frameworks_conversation(run):
    dynamic = run["results"]["dynamic"]
    assert dynamic["status"] == "passed", dynamic
    assert [c["reached_at_turn"] for c in dynamic["checkpoints"]] == [1, 2]
    # Turn 2's model saw turn 1's tool call and its return, from the kept pydantic-ai history.
    turn2 = dynamic["turns"][1]["output"]
    assert "tool-call:search={'q': 'cats'} | tool-call:flaky={} | tool-return:search=found cats" in turn2


def test_a_crash_is_an_error_that_keeps_the_calls_made(run):
    crash = run["results"]["crash"]
    assert crash["status"] == "error"
    assert crash["error"] == "agent error: ValueError: the tool broke"
    assert [(c["name"], c["status"], c["step"]) for c in crash["tool_calls"]] == [
        ("search", "ok", 1),
        ("boom", "error", 2),
    ]
    assert crash["usage"]["total_tokens"] > 0  # the two model steps it paid for


def test_what_the_agent_cannot_answer_is_an_error(run):
    results = run["results"]
    assert results["ends-with-assistant"]["status"] == "error"
    assert results["ends-with-assistant"]["error"] == (
        "the conversation ends with an assistant message: the agent has nothing to answer"
    )
    assert results["bad-option"]["error"] == "options.model_settings must be a mapping, not str"


def test_a_hanging_tool_is_cut_at_the_case_timeout(run):
    results = run["results"]
    for case in ("hangs-in-a-thread", "hangs-awaiting"):
        assert results[case]["status"] == "error"
        assert results[case]["error"].startswith("timeout"), results[case]["error"]
    assert run["seconds"] < 10  # nothing waited for the hung tools
    # A sync tool runs in a daemon thread: abandoned at the timeout, it cannot block the exit.
    assert (run["project"] / "daemon.txt").read_text() == "True"


def test_a_limit_stops_the_agent_as_soon_as_its_reply_goes_over(run):
    results, project = run["results"], run["project"]
    over = results["over-tool-calls"]
    assert over["status"] == "failed"
    assert over["error"] == "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent)"
    # The third call was seen before it ran: the run stopped there, not after its five calls.
    assert (project / "ticks-over.txt").read_text().count("tick") == 2
    assert [c["name"] for c in over["tool_calls"]] == ["tick"] * 3
    assert over["usage"]["total_tokens"] > 0  # what it spent until stopped
    assert results["under-tool-calls"]["status"] == "passed"
    assert (project / "ticks-under.txt").read_text().count("tick") == 5
    tokens = results["over-tokens"]
    assert tokens["status"] == "failed"
    assert tokens["error"].startswith("limit exceeded: tokens reached "), tokens["error"]
    assert (project / "ticks-tokens.txt").read_text().count("tick") < 5
    talk = results["over-tool-calls-in-a-conversation"]
    assert talk["status"] == "failed"
    assert talk["error"] == (
        "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent) (in turn 1)"
    )
    assert (project / "ticks-talk.txt").read_text().count("tick") == 2


def test_the_example_runs_offline(tmp_path):
    project = tmp_path / "example"
    shutil.copytree(ROOT / "examples" / "pydantic_ai", project)
    proc = run_cli(["tests/", "guards/", "-o", "out.jsonl"], project)
    results = results_in(project / "out.jsonl")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    guard = results.pop("never-deletes-on-request")
    assert guard["status"] == "failed"
    assert "expected no call to delete_expense; matched 1" in guard["assertions"][0]["message"]
    assert {case: r["status"] for case, r in results.items() if r["status"] != "passed"} == {}
    assert len(results) == 6
    assert [c["status"] for c in results["over-the-limit"]["tool_calls"]] == ["error"]


def test_the_adapter_imports_pydantic_ai_only_when_used():
    top = [node for node in ast.parse(ADAPTER.read_text()).body if isinstance(node, ast.Import | ast.ImportFrom)]
    names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in top if isinstance(n, ast.ImportFrom)}
    assert not {n for n in names if n.split(".")[0] in ("pydantic_ai", "pydantic", "pydantic_core")}
