"""Simulated users: the reply format, scripted, agent and llm simulators, their schema, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import support.cli
from specrun_plugins.simulators._reply import parse_reply
from specrun_plugins.simulators.agent import AgentSimulator
from specrun_plugins.simulators.llm import LlmSimulator, chat
from specrun_plugins.simulators.scripted import ScriptedSimulator

from specrun import Response
from specrun._core.data import Case, Checkpoint, Context, Location, Message, Usage
from specrun._core.errors import EvaluationError, SuiteError
from specrun._core.kinds import SimulatorState
from specrun._core.services import Services
from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager


def state(turn: int = 1, services: Any = None, conversation: list[Message] | None = None) -> SimulatorState:
    case = Case(
        "c1",
        Location("s.yaml"),
        checkpoints=[
            Checkpoint("ask", None, "asks the type"),  # type: ignore[arg-type]
            Checkpoint("done", None, "says submitted", ["ask"]),  # type: ignore[arg-type]
        ],
    )
    return SimulatorState(
        case, conversation or [], turn, 10, ["ask"], ["done"], Context("c1", metadata={"case": 1}), services
    )


# -- the reply ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message", "goal"),
    [
        ({"message": "hi", "goal_achieved": False, "reasoning": "r"}, "hi", False),
        ('{"input": "hello there"}', "hello there", False),
        ('Sure!\n```json\n{"message": "fenced", "goal_achieved": "false"}\n```', "fenced", False),
        ('I think {"message": "in prose", "goal_achieved": false} works', "in prose", False),
        ('{"goal_achieved": true}', "", True),
        ('{"message": "thanks, bye", "goal_achieved": true}', "thanks, bye", True),
    ],
)
def test_reply_forms(reply, message, goal):
    turn = parse_reply(reply)
    assert (turn.message, turn.goal_achieved) == (message, goal)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Hello! How can I help?", "no JSON object found"),
        ("[1, 2]", "expected a JSON object, got a list"),
        ('{"message": "x", "goal_achieved": "maybe"}', "'goal_achieved' must be true or false, not 'maybe'"),
        ('{"message": 3}', "'message' must be a string, not int"),
        ('{"reasoning": "nothing to say"}', "'message' is missing or empty (and goal_achieved is false)"),
    ],
)
def test_unusable_replies(reply, problem):
    with pytest.raises(ValueError) as info:
        parse_reply(reply)
    assert str(info.value) == problem


# -- scripted -----------------------------------------------------------------------------------


async def test_scripted_says_its_turns_in_order_then_is_done():
    sim = ScriptedSimulator({"type": "scripted", "turns": ["one", "two"]}, Path())
    said = [await sim.next_turn(state(i)) for i in (1, 2, 3, 4)]
    assert [(t.message, t.goal_achieved) for t in said] == [("one", False), ("two", False), ("", True), ("", True)]


# -- agent --------------------------------------------------------------------------------------


class Caller:
    """A fake project-agent caller with scripted replies."""

    def __init__(self, *replies: Any):
        self.replies = list(replies)
        self.calls: list[tuple[str, list[Message], Context]] = []

    async def __call__(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        self.calls.append((agent_id, messages, context))
        return self.replies.pop(0)


AGENT_SIM = {"use": "agents:workers.sim", "options": {"metadata": {"persona": "new hire", "goal": "file it"}}}


async def test_agent_simulator_gets_the_state_as_json_and_in_its_context():
    caller = Caller(Response('{"message": "hello", "goal_achieved": false}', usage=Usage(2, 3, 5)))
    sim = AgentSimulator(AGENT_SIM, Path())
    history = [Message("user", "hi"), Message("assistant", "What type?")]
    turn = await sim.next_turn(state(2, Services(agent_caller=caller), history))
    assert turn.message == "hello" and turn.usage == Usage(2, 3, 5)
    agent_id, messages, ctx = caller.calls[0]
    assert agent_id == "workers.sim"
    shown = json.loads(messages[0].text)
    assert shown["test_mode"] == "simulator"
    assert (shown["persona"], shown["goal"], shown["turn_number"], shown["max_turns"]) == ("new hire", "file it", 2, 10)
    assert shown["conversation"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "What type?"}]
    assert shown["checkpoints_reached"] == [{"id": "ask", "description": "asks the type"}]
    assert shown["checkpoints_pending"] == [{"id": "done", "description": "says submitted"}]
    assert "goal_achieved" in shown["reply_format"]
    assert ctx.metadata["persona"] == "new hire" and ctx.metadata["turn_number"] == 2
    assert ctx.options["metadata"] == ctx.metadata
    assert ctx.case_id == "c1"


async def test_agent_simulator_structured_reply():
    caller = Caller(Response({"input": "structured", "goal_achieved": False}))
    turn = await AgentSimulator({"use": "sim"}, Path()).next_turn(state(services=Services(agent_caller=caller)))
    assert turn.message == "structured" and turn.usage is None


async def test_agent_simulator_prose_is_retried_once_with_a_reminder():
    caller = Caller(Response("Hi, I'm a user!"), Response('{"message": "now JSON"}'))
    turn = await AgentSimulator({"use": "sim"}, Path()).next_turn(state(services=Services(agent_caller=caller)))
    assert turn.message == "now JSON"
    retry = caller.calls[1][1]
    assert [m.role for m in retry] == ["user", "assistant", "user"]
    assert retry[2].text.startswith("Your reply could not be used: no JSON object found. Reply with a JSON object")


async def test_agent_simulator_prose_twice_is_an_error():
    caller = Caller(Response("Hi!"), Response("Still prose"))
    with pytest.raises(EvaluationError) as info:
        await AgentSimulator({"use": "sim"}, Path()).next_turn(state(services=Services(agent_caller=caller)))
    assert str(info.value) == (
        "simulator agent 'sim' replied unusably twice (no JSON object found); last reply: 'Still prose'"
    )


# -- llm ----------------------------------------------------------------------------------------


def test_llm_prompt_is_the_seed_prompt_filled_in_and_the_conversation_comes_as_messages():
    talk = [Message("user", "Hello there"), Message("assistant", "Which type?")]
    messages = chat(state(3, conversation=talk), "new hire", "file it")
    prompt = messages[0]["content"]
    assert prompt.startswith("You are simulating a user with the following characteristics:\nPersona: new hire\n")
    assert "Goal: file it" in prompt and "Hello there" not in prompt and "Which type?" not in prompt
    assert "turn 3 of at most 10" in prompt and "- says submitted" in prompt
    assert '"goal_achieved": true or false' in prompt
    # the simulated user speaks as the assistant; the agent under test's turns are user messages
    assert messages[1:] == [
        {"role": "user", "content": "(The conversation has not started: you speak first.)"},
        {"role": "assistant", "content": "Hello there"},
        {"role": "user", "content": "Which type?"},
    ]
    assert [m["role"] for m in chat(state(), "", "g")] == ["system", "user"]


async def test_llm_simulator_without_a_model_client():
    with pytest.raises(EvaluationError, match="needs a model client"):
        await LlmSimulator({"type": "llm", "goal": "g"}, Path()).next_turn(state(services=Services()))


# -- schema -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loader():
    return Loader(get_plugin_manager().registry)


def check(loader: Loader, simulator: Any) -> None:
    case = {
        "id": "d",
        "simulator": simulator,
        "checkpoints": [{"id": "a", "assertion": {"type": "contains", "value": "x"}}],
    }
    loader.load_data([case], "s.yaml", Path.cwd(), generated=False)


@pytest.mark.parametrize(
    "simulator",
    [
        {"use": "workers.sim"},
        {"use": "workers.sim", "options": {"metadata": {"persona": "p", "goal": "g"}}},
        {"type": "agent", "use": "workers.sim"},
        {"type": "scripted", "turns": ["a"]},
        {"type": "llm", "goal": "g", "persona": "p", "model": "openai/gpt-4o-mini"},
    ],
)
def test_simulator_forms_that_validate(loader, simulator):
    check(loader, simulator)


@pytest.mark.parametrize(
    ("simulator", "problem"),
    [
        ({"type": "agent"}, "missing required field 'use'"),
        ({"type": "scripted"}, "missing required field 'turns'"),
        ({"type": "llm", "persona": "p"}, "missing required field 'goal'"),
        ({"use": "x", "persona": "p"}, "unknown field 'persona'"),
        ({"type": "scriptd", "turns": ["a"]}, "unknown simulator type 'scriptd'; did you mean 'scripted'?"),
    ],
)
def test_simulator_mistakes(loader, simulator, problem):
    with pytest.raises(SuiteError) as info:
        check(loader, simulator)
    assert problem in str(info.value)


# -- through the CLI: a python simulator agent --------------------------------------------------


SIM_AGENT = """
import json
def respond(messages, ctx):
    state = json.loads(messages[0].text)
    if ctx.metadata.get("goal") == "prose":
        return "Hello, I am a friendly user!"
    lines = ["I want to order a coffee", "A large latte", "Yes"]
    n = state["turn_number"]
    if n > len(lines):
        return {"message": "", "goal_achieved": True}
    return "```json\\n" + json.dumps({"message": lines[n - 1], "goal_achieved": False}) + "\\n```"
"""

BARISTA = """
def respond(messages, ctx):
    last = messages[-1].text.lower()
    if "latte" in last:
        return "A large latte. Shall I place the order?"
    if last == "yes":
        return "Order placed!"
    return "What would you like to drink?"
"""


def project(tmp_path: Path, suite: str) -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 20s\n")
    for name, code in (("barista", BARISTA), ("sim", SIM_AGENT)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "agent.yaml").write_text(f"target: python:{name}_agent:respond\n")
        (tmp_path / name / f"{name}_agent.py").write_text(textwrap.dedent(code))
    (tmp_path / "barista" / "dynamic.yaml").write_text(textwrap.dedent(suite))
    return tmp_path


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return support.cli.run_cli(args, cwd, env)


SUITE = """
cases:
  - id: order
    simulator: {use: sim, options: {metadata: {persona: a regular, goal: order a latte}}}
    checkpoints:
      - {id: ask, assertion: {type: contains, value: What would you like}}
      - {id: confirm, after: [ask], assertion: {type: contains, value: Shall I}}
      - {id: placed, after: [confirm], assertion: {type: contains, value: placed}}
  - id: default-simulator
    checkpoints:
      - {id: ask, assertion: {type: contains, value: What would you like}}
"""


def results(path: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"]: r for r in records if r.get("type") == "result"}


def test_agent_simulator_end_to_end(tmp_path):
    root = project(tmp_path, SUITE)
    proc = run_cli(root, "barista/dynamic.yaml", "--simulator", "sim", "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = results(root / "out.jsonl")
    assert got["order"]["status"] == "passed"
    assert [t["input"] for t in got["order"]["turns"]] == ["I want to order a coffee", "A large latte", "Yes"]
    assert got["order"]["total_turns"] == 3
    assert got["default-simulator"]["status"] == "passed" and got["default-simulator"]["total_turns"] == 1
    assert 'Turn 2: "A large latte" → "A large latte. Shall I place the order?"' in proc.stdout
    assert "3 turns, 3/3 checkpoints" in proc.stdout


def test_agent_simulator_replying_prose_is_an_error_end_to_end(tmp_path):
    suite = SUITE.replace("goal: order a latte", "goal: prose")
    root = project(tmp_path, suite)
    proc = run_cli(root, "barista/dynamic.yaml", "--run", "^order$", "-o", "out.jsonl")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = results(root / "out.jsonl")["order"]
    assert result["status"] == "error"
    assert result["error"].startswith("simulator error: simulator agent 'sim' replied unusably twice")
    assert result["turns"] == [] and "Traceback" not in proc.stderr


def test_dynamic_case_without_any_simulator_is_a_usage_error(tmp_path):
    root = project(tmp_path, SUITE)
    proc = run_cli(root, "barista/dynamic.yaml", "--run", "default")
    assert proc.returncode == 2
    assert "dynamic case 'default-simulator' has no simulator" in proc.stderr
