"""Dynamic mode: ordered checkpoints, max turns, early goals, timeouts, crashes, usage."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import support.cli
from support.llm_server import LLMServer

from specrun import Response, ToolCall
from specrun._core.data import Agent as AgentFile
from specrun._core.data import Case, Context, Message, Usage
from specrun._core.errors import UsageError
from specrun._core.kinds import Job, Session
from specrun._core.services import Services
from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run.conversation import build_simulator, run_conversation, simulator_config


@pytest.fixture(scope="module")
def registry():
    return get_plugin_manager().registry


def make_case(registry, tmp_path: Path, **data: Any) -> Case:
    suite = Loader(registry).load_data([{"id": "dyn", **data}], "dyn.yaml", tmp_path, generated=False)
    return suite.cases[0]


def cp(cid: str, value: str, after: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    point: dict[str, Any] = {"id": cid, "assertion": {"type": "contains", "value": value}, **extra}
    if after:
        point["after"] = after
    return point


def scripted(*turns: str) -> dict[str, Any]:
    return {"type": "scripted", "turns": list(turns)}


class Agent(Session):
    """The agent under test: each reply is a string (a reply that called no tool, and says so),
    a Response, or a coroutine function."""

    def __init__(self, *replies: Any):
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    async def send(self, messages: list[Message]) -> Response:
        self.seen.append(list(messages))
        reply = self.replies[min(len(self.seen), len(self.replies)) - 1]
        if callable(reply):
            reply = await reply()
        return reply if isinstance(reply, Response) else Response(reply, tool_calls=[])


async def converse(registry, case: Case, agent: Session, timeout: float = 60.0, services: Any = None, default=None):
    ctx = Context(case_id=case.id)
    job = Job(case, AgentFile("bot", {"type": "python"}, case.suite.base_dir if case.suite else Path()))
    return await run_conversation(job, agent, ctx, services, registry, timeout, default)


async def test_ordered_checkpoints_two_in_one_turn_stop_the_conversation(registry, tmp_path):
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted("file an expense", "travel, $3500", "yes", "never said"),
        checkpoints=[
            cp("ask_type", "What type"),
            cp("confirm", "Please confirm", ["ask_type"]),
            {
                "id": "call_create",
                "after": ["confirm"],
                "assertion": {"type": "tool_called", "name": "create_expense"},
            },
            cp("submitted", "submitted", ["call_create"], description="says it is done"),
        ],
    )
    done = Response("Expense submitted!", tool_calls=[ToolCall("create_expense", {"amount": 3500})])
    agent = Agent("What type of expense?", "Travel, $3,500. Please confirm.", done, "unused")
    result = await converse(registry, case, agent)
    assert result.status == "passed", result.error
    assert result.error is None
    assert [t["input"] for t in result.turns] == ["file an expense", "travel, $3500", "yes"]
    assert result.turns[2]["tool_calls"] == [{"name": "create_expense", "arguments": {"amount": 3500}, "turn": 3}]
    assert result.turns[0]["tool_calls"] == []  # the reply said it called none
    assert [(c["id"], c["reached_at_turn"], c["passed"]) for c in result.checkpoints] == [
        ("ask_type", 1, True),
        ("confirm", 2, True),
        ("call_create", 3, True),
        ("submitted", 3, True),
    ]
    assert result.checkpoints[3] == {
        "id": "submitted",
        "description": "says it is done",
        "reached_at_turn": 3,
        "passed": True,
        "required": True,
    }
    assert result.response is not None and result.response.text == "Expense submitted!"
    assert [a.status for a in result.assertions] == ["passed"] * 4
    # the agent got the whole conversation each turn, and was not called again after the pass
    assert len(agent.seen) == 3
    assert [m.role for m in agent.seen[2]] == ["user", "assistant", "user", "assistant", "user"]
    record = result.to_dict()
    assert record["total_turns"] == 3 and record["checkpoints"][0]["id"] == "ask_type"


async def test_dependency_order_does_not_depend_on_listing_order(registry, tmp_path):
    # "b" is listed first but follows "a"; both are reached in the one turn.
    case = make_case(
        registry, tmp_path, simulator=scripted("hi"), checkpoints=[cp("b", "beta", ["a"]), cp("a", "alpha")]
    )
    result = await converse(registry, case, Agent("alpha and beta"))
    assert result.status == "passed"
    assert [(c["id"], c["reached_at_turn"]) for c in result.checkpoints] == [("b", 1), ("a", 1)]


async def test_a_checkpoint_matched_before_its_after_ones_counts_only_later(registry, tmp_path):
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted("one", "two", "three"),
        checkpoints=[cp("first", "FIRST"), cp("second", "SECOND", ["first"])],
    )
    result = await converse(registry, case, Agent("SECOND too early", "FIRST now", "SECOND again"))
    assert result.status == "passed"
    assert [(c["id"], c["reached_at_turn"]) for c in result.checkpoints] == [("first", 2), ("second", 3)]
    assert len(result.turns) == 3


async def test_max_turns_exceeded_is_a_failure_listing_what_is_missing(registry, tmp_path):
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted(*[f"msg {i}" for i in range(10)]),
        checkpoints=[cp("greet", "hello"), cp("never", "xyzzy", ["greet"]), cp("also", "plugh")],
        max_turns=3,
    )
    result = await converse(registry, case, Agent("hello there"))
    assert result.status == "failed"
    assert result.error == "max turns (3) exceeded; missing checkpoints: never, also"
    assert len(result.turns) == 3
    assert [c["passed"] for c in result.checkpoints] == [True, False, False]
    failed = [a for a in result.assertions if a.status == "failed"]
    assert [a.message.split(":")[0] for a in failed] == ["checkpoint never not reached", "checkpoint also not reached"]


async def test_default_max_turns_is_twenty(registry, tmp_path):
    case = make_case(registry, tmp_path, simulator=scripted(*["again"] * 30), checkpoints=[cp("x", "xyzzy")])
    result = await converse(registry, case, Agent("no"))
    assert result.status == "failed"
    assert result.error == "max turns (20) exceeded; missing checkpoints: x"
    assert len(result.turns) == 20


async def test_goal_achieved_too_early_fails_with_the_missing_checkpoints(registry, tmp_path):
    # The scripted user runs out of things to say after two turns: its goal is "achieved".
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted("hi", "bye"),
        checkpoints=[cp("greet", "Hello"), cp("help", "help you", ["greet"]), cp("bye", "Goodbye", ["help"])],
    )
    agent = Agent("Hello!", "Goodbye!")
    result = await converse(registry, case, agent)
    assert result.status == "failed"
    assert result.error == "missing checkpoints: help, bye (the simulator declared its goal achieved in turn 3)"
    assert len(result.turns) == 2 and len(agent.seen) == 2
    assert [c["reached_at_turn"] for c in result.checkpoints] == [1, None, None]


async def test_optional_checkpoints_never_block_nor_fail(registry, tmp_path):
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted("hi", "more"),
        checkpoints=[cp("nice", "please", required=False), cp("greet", "Hello"), cp("later", "later", ["greet"])],
    )
    result = await converse(registry, case, Agent("Hello", "see you later"))
    assert result.status == "passed"
    assert result.checkpoints[0] == {
        "id": "nice",
        "description": None,
        "reached_at_turn": None,
        "passed": False,
        "required": False,
    }
    assert [a.status for a in result.assertions] == ["skipped", "passed", "passed"]


async def test_without_required_checkpoints_the_goal_decides(registry, tmp_path):
    case = make_case(registry, tmp_path, input="a", simulator=scripted("b"))
    result = await converse(registry, case, Agent("ok"))
    assert result.status == "passed" and result.error is None
    assert len(result.turns) == 2 and result.checkpoints == []


async def test_an_opening_input_is_said_first(registry, tmp_path):
    case = make_case(registry, tmp_path, input="I have a receipt", simulator=scripted("then this"))
    agent = Agent("one", "two")
    result = await converse(registry, case, agent)
    assert [t["input"] for t in result.turns] == ["I have a receipt", "then this"]


async def test_timeout_cuts_a_turn_short_and_keeps_the_turns_done(registry, tmp_path):
    async def slow():
        await asyncio.sleep(30)
        return "too late"

    case = make_case(
        registry, tmp_path, simulator=scripted("one", "two", "three"), checkpoints=[cp("a", "fast"), cp("b", "never")]
    )
    started = time.perf_counter()
    result = await converse(registry, case, Agent("fast", slow), timeout=0.2)
    assert time.perf_counter() - started < 5
    assert result.status == "error"
    assert result.error == "timeout after 200ms in turn 2; missing checkpoints: b"
    assert [t["input"] for t in result.turns] == ["one"]
    assert result.checkpoints[0]["reached_at_turn"] == 1


async def test_a_crashing_agent_is_an_error(registry, tmp_path):
    async def boom():
        raise ValueError("db down")

    case = make_case(registry, tmp_path, simulator=scripted("one", "two"), checkpoints=[cp("a", "zzz")])
    result = await converse(registry, case, Agent("fine", boom))
    assert result.status == "error"
    assert result.error == "agent error: ValueError: db down (in turn 2)"
    assert len(result.turns) == 1
    assert "in boom\n" in result.traceback and result.traceback.endswith("ValueError: db down\n")
    assert "specrun/_run/conversation.py" not in result.traceback  # the agent's frames, not specrun's


async def test_a_checkpoint_that_cannot_be_judged_is_an_error(registry, tmp_path):
    # An llm checkpoint with no model client cannot decide: never a silent fail.
    case = make_case(
        registry,
        tmp_path,
        simulator=scripted("one", "two"),
        checkpoints=[{"id": "judged", "assertion": {"type": "llm", "criteria": "is polite"}}],
    )
    result = await converse(registry, case, Agent("hi"))
    assert result.status == "error"
    assert result.error.startswith("checkpoint judged could not be checked in turn 1: ")
    assert "model client" in result.error
    assert [a.status for a in result.assertions] == ["error"]


async def test_a_crashing_simulator_is_an_error(registry, tmp_path):
    async def caller(agent_id, messages, context):
        raise RuntimeError("simulator offline")

    case = make_case(registry, tmp_path, simulator={"use": "sim"}, checkpoints=[cp("a", "x")])
    result = await converse(registry, case, Agent("hi"), services=Services(agent_caller=caller))
    assert result.status == "error"
    assert result.error == "simulator error: simulator agent 'sim' failed: RuntimeError: simulator offline"
    assert result.turns == []


async def test_default_simulator_and_usage_summed(registry, tmp_path):
    calls: list[tuple[str, Context]] = []

    async def caller(agent_id, messages, context):
        calls.append((agent_id, context))
        said = ["hi", "done?"][len(calls) - 1]
        return Response(json.dumps({"message": said, "goal_achieved": False}), usage=Usage(3, 2, 5))

    case = make_case(registry, tmp_path, checkpoints=[cp("a", "A"), cp("b", "B", ["a"])])
    assert simulator_config(case, "workers.sim", registry) == {"use": "workers.sim", "type": "agent"}
    agent = Agent(Response("A", usage=Usage(10, 1, 11, cost=0.5)), Response("B", usage=Usage(10, 1, 11)))
    result = await converse(registry, case, agent, services=Services(agent_caller=caller), default="workers.sim")
    assert result.status == "passed"
    assert [c[0] for c in calls] == ["workers.sim", "workers.sim"]
    assert result.usage is not None
    assert (result.usage.total_tokens, result.usage.cost) == (32, 0.5)


async def test_no_simulator_at_all(registry, tmp_path):
    case = make_case(registry, tmp_path, checkpoints=[cp("a", "A")])
    with pytest.raises(UsageError, match="has no simulator"):
        build_simulator(case, None, registry)
    result = await converse(registry, case, Agent("A"))
    assert result.status == "error" and "has no simulator" in result.error


# -- an LLM simulator over real HTTP (litellm against the loopback server) ----------------------


def llm_services(server: LLMServer, tmp_path: Path) -> Services:
    from specrun._models.client import ModelClient

    params = {"api_base": server.base_url, "api_key": "test-key"}
    models = ModelClient("openai/gpt-4o-mini", params=params, cache_dir=tmp_path / "cache", base_delay=0.01)
    return Services(models=models, run=1)


LLM_SIM = {"type": "llm", "persona": "A new employee", "goal": "Submit a $3500 travel expense"}


async def test_llm_simulator_drives_a_conversation(registry, tmp_path):
    case = make_case(
        registry,
        tmp_path,
        simulator=LLM_SIM,
        checkpoints=[cp("ask_type", "type"), cp("done", "submitted", ["ask_type"])],
    )
    with LLMServer() as server:
        server.script(
            {"content": '{"message": "I need to file an expense", "goal_achieved": false, "reasoning": "start"}'},
            {"content": 'Sure:\n```json\n{"input": "Travel, $3500, confirm", "goal_achieved": false}\n```'},
        )
        services = llm_services(server, tmp_path)
        result = await converse(registry, case, Agent("What type?", "Expense submitted!"), services=services)
        assert result.status == "passed", result.error
        assert [t["input"] for t in result.turns] == ["I need to file an expense", "Travel, $3500, confirm"]
        prompt = server.requests[1]["messages"][0]["content"]
        assert "Persona: A new employee" in prompt and "Goal: Submit a $3500 travel expense" in prompt
        assert server.requests[1]["messages"][1:] == [  # the simulated user speaks as the assistant
            {"role": "user", "content": "(The conversation has not started: you speak first.)"},
            {"role": "assistant", "content": "I need to file an expense"},
            {"role": "user", "content": "What type?"},
        ]
        assert "turn 2 of at most 20" in prompt
        assert server.requests[0]["model"] == "gpt-4o-mini"
        assert result.usage is not None and result.usage.total_tokens == 30  # two simulator calls


async def test_llm_simulator_replying_prose_is_retried_then_an_error(registry, tmp_path):
    case = make_case(registry, tmp_path, simulator=LLM_SIM, checkpoints=[cp("a", "x")])
    with LLMServer() as server:
        server.script({"content": "Hello! I'd like help."}, {"content": "Still just prose, sorry."})
        result = await converse(registry, case, Agent("hi"), services=llm_services(server, tmp_path))
        assert len(server.requests) == 2
        reminder = server.requests[1]["messages"][-1]["content"]
        assert "could not be used" in reminder and '"goal_achieved"' in reminder
    assert result.status == "error"
    assert result.error.startswith("simulator error: the model's reply was unusable twice (no JSON object found)")
    assert result.turns == []


async def test_llm_simulator_declaring_the_goal_too_early(registry, tmp_path):
    case = make_case(registry, tmp_path, simulator=LLM_SIM, checkpoints=[cp("a", "What type"), cp("b", "submitted")])
    with LLMServer() as server:
        server.script(
            {"content": '{"message": "expense please", "goal_achieved": false}'},
            {"content": '{"message": "", "goal_achieved": true, "reasoning": "I am satisfied"}'},
        )
        result = await converse(registry, case, Agent("What type?"), services=llm_services(server, tmp_path))
    assert result.status == "failed"
    assert result.error == "missing checkpoints: b (the simulator declared its goal achieved in turn 2)"


# -- the shipped example, through the CLI ------------------------------------------------------


def test_the_scripted_expense_example_passes_offline(tmp_path):
    repo = Path(__file__).resolve().parent.parent
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = support.cli.run_cli(["suites/", "-o", str(out)], repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "result"}
    dynamic = results["expense-dynamic"]
    assert dynamic["status"] == "passed" and dynamic["total_turns"] == 3
    assert [c["reached_at_turn"] for c in dynamic["checkpoints"]] == [1, 2, 3, 3]
    assert results["expense-dynamic-chatty"]["status"] == "passed"
    assert "└─ ✓ checkpoint: submitted" in proc.stdout
