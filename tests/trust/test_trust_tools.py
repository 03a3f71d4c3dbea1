"""Trust: a tool assertion is judged only on tool calls the target reported (issue 25.3).

- A reply that says nothing of tools (a bare string) makes every tool assertion an ``error``
  that says how to make the target report them, never a pass or a fail, negated or not; an
  explicit ``tool_calls=[]`` reports "none" and is judged.
- The result record keeps the difference: ``"tool_calls": []`` when none was called, no key when
  not known.
- ``status`` counts only calls that say it; calls of one model step (``step``) were made in
  parallel; calls know their user turn, in a history input and in dynamic mode, where the case's
  calls are the union of its turns' (known only when every turn reported its own).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import support.cli

from specrun._core.data import Case, Location
from specrun._core.results import Result

AGENT = """
from specrun import Response, ToolCall


def text(messages, ctx):
    return "I looked it up."  # says nothing of tools: what it called is not known


def shop(messages, ctx):
    said = messages[-1].text
    if said == "chat":
        return "Just chatting."
    if said == "hi":
        return Response("Hello!", tool_calls=[ToolCall("greet", step=1, status="ok")])
    if said == "refund":
        return Response("Refunded.", tool_calls=[
            ToolCall("lookup_order", {"id": "A1"}, status="ok", step=1),
            ToolCall("check_stock", status="ok", step=2),
            ToolCall("check_price", status="error", step=2),
            ToolCall("refund", {"id": "A1"}, step=3),
        ])
    return Response("Nothing to do.", tool_calls=[])  # no tool called, and it says so


def odd(messages, ctx):
    if messages[-1].text == "unknown":
        return Response("Done.", tool_calls=None)  # "unknown", said its own way
    return Response("Done.", tool_calls=[{"name": "lookup_order"}])
"""

ODD = """\
target: python:bot:odd
cases:
  - id: odd-unknown
    input: unknown
    assertions: [{type: tool_not_called}]
  - id: odd-dicts
    input: dicts
    assertions: [{type: tool_not_called}]
"""

TEXT = """\
target: python:bot:text
cases:
  - id: text
    input: Where is my order?
    assertions:
      - {type: tool_not_called, name: delete_account}
      - {type: tool_called, name: lookup_order, negate: true}
      - {type: tool_order, names: [lookup_order]}
"""

SHOP = """\
target: python:bot:shop
cases:
  - id: none
    input: thanks
    assertions:
      - {type: tool_not_called}
      - {type: tool_called, name: lookup_order}
  - id: refund
    input: refund
    assertions:
      - {type: tool_called, name: check_price, status: error}
      - {type: tool_called, name: check_price, status: ok}
      - {type: tool_called, name: refund, status: ok}
      - {type: tool_order, names: [lookup_order, [check_price, check_stock], refund]}
      - {type: tool_order, names: [check_stock, check_price]}
  - id: history
    input:
      - {role: user, content: hi}
      - {role: assistant, content: Hello!}
      - {role: user, content: refund}
    assertions:
      - {type: tool_called, name: refund, turn: 2}
      - {type: tool_called, name: refund, turn: 1}
"""

DYNAMIC = """\
target: python:bot:shop
cases:
  - id: dynamic
    simulator: {type: scripted, turns: [hi, refund, bye]}
    checkpoints:
      - {id: greeted, assertion: {type: tool_called, name: greet, turn: 1}}
      - {id: refunded, after: [greeted], assertion: {type: tool_order, names: [lookup_order, refund], turn: 2}}
  - id: dynamic-chatty
    simulator: {type: scripted, turns: [chat, refund]}
    checkpoints:
      - {id: refunded, assertion: {type: contains, value: Refunded}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict[str, dict[str, Any]]]:
    """One run of every case, as a user runs it: the exit code, stdout and the records by id."""
    root = tmp_path_factory.mktemp("tools")
    (root / "bot.py").write_text(AGENT)
    suites = {"text": TEXT, "shop": SHOP, "dynamic": DYNAMIC, "odd": ODD}
    for name, suite in suites.items():
        (root / f"{name}.yaml").write_text(suite)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = support.cli.run_cli([*(f"{name}.yaml" for name in suites), "-o", "out.jsonl"], root, env)
    assert (root / "out.jsonl").exists(), proc.stdout + proc.stderr
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    return proc.returncode, proc.stdout, {r["id"]: r for r in lines if r["type"] == "result"}


def _verdicts(record: dict[str, Any]) -> list[str]:
    return [a["status"] for a in record["assertions"]]


def test_a_target_that_reports_no_tool_calls_makes_every_tool_assertion_an_error(run):
    code, stdout, records = run
    text = records["text"]
    assert text["status"] == "error" and code == 1
    assert _verdicts(text) == ["error", "error", "error"]  # negate turns no error into a pass
    message = text["assertions"][0]["message"]
    assert message.startswith(
        "tool_not_called cannot be judged: target python reports no tool calls (it returned text only):"
        " return specrun.Response(..., tool_calls=[...]) (tool_calls=[] when it called none),"
    )
    assert "traces: otel" in message and "docs/targets.md#frameworks" in message
    assert "tool_calls" not in text  # not known: the record says nothing rather than "none"
    assert "tool_not_called cannot be judged: target python reports no tool calls" in stdout


def test_tool_calls_none_is_not_known_and_a_call_that_is_no_toolcall_is_the_agent_s_error(run):
    records = run[2]
    unknown, dicts = records["odd-unknown"], records["odd-dicts"]
    assert _verdicts(unknown) == ["error"] and "tool_calls" not in unknown
    assert dicts["status"] == "error" and dicts["assertions"] == []
    assert dicts["error"] == "the agent's tool_calls hold a dict, not a specrun.ToolCall: {'name': 'lookup_order'}"


def test_an_explicit_empty_list_reports_that_no_tool_was_called(run):
    none = run[2]["none"]
    assert _verdicts(none) == ["passed", "failed"]
    assert none["assertions"][1]["message"].endswith("matched 0; no tools were called")
    assert none["tool_calls"] == []


def test_status_and_parallel_calls_are_judged_from_what_the_calls_say(run):
    refund = run[2]["refund"]
    assert _verdicts(refund) == ["passed", "failed", "error", "passed", "failed"]
    assert "1 matching call does not say whether it succeeded (ToolCall.status)" in refund["assertions"][2]["message"]
    assert "check_price was called in the same step as check_stock, in parallel" in refund["assertions"][4]["message"]
    steps = [(c["name"], c.get("step"), c.get("status"), c["turn"]) for c in refund["tool_calls"]]
    assert steps == [
        ("lookup_order", 1, "ok", 1),
        ("check_stock", 2, "ok", 1),
        ("check_price", 2, "error", 1),
        ("refund", 3, None, 1),
    ]


def test_a_history_input_is_answered_in_its_last_user_turn(run):
    history = run[2]["history"]
    assert _verdicts(history) == ["passed", "failed"]
    assert {c["turn"] for c in history["tool_calls"]} == {2}


def test_a_conversation_s_tool_calls_are_the_union_of_its_turns(run):
    records = run[2]
    dynamic = records["dynamic"]
    assert dynamic["status"] == "passed", dynamic["error"]
    assert [(c["name"], c["turn"]) for c in dynamic["tool_calls"]] == [
        ("greet", 1),
        ("lookup_order", 2),
        ("check_stock", 2),
        ("check_price", 2),
        ("refund", 2),
    ]
    assert [c["name"] for c in dynamic["turns"][0]["tool_calls"]] == ["greet"]
    chatty = records["dynamic-chatty"]  # turn 1 said nothing of tools: the case's calls are not known
    assert chatty["status"] == "passed" and "tool_calls" not in chatty
    assert "tool_calls" not in chatty["turns"][0] and len(chatty["turns"][1]["tool_calls"]) == 4


def test_a_stored_result_keeps_none_apart_from_not_known():
    case = Case(id="c", location=Location("s.yaml", 3))
    for record, reported in (({"output": "x", "tool_calls": []}, True), ({"output": "x"}, False)):
        result = Result.received(case, {"status": "passed", **record}, "")
        assert result.response is not None and result.response.tools_reported is reported
