"""The a2a target against a real a2a-sdk agent (tests/agents/a2a_agent.py) on loopback: one
whose card says it streams, one whose card says it does not, and one whose card says it speaks
A2A 0.3 (``message/stream``); run through the CLI, in process."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from support.asgi import flooding, serving
from support.cli import run_cli
from support.modules import agent_module

FLOODS = {b"flood json": b"application/json", b"flood sse": b"text/event-stream"}  # answered with 65 MiB


@pytest.fixture(scope="module")
def agents():
    server = agent_module("a2a_agent")
    RELEASE, app = server.RELEASE, server.app

    with (
        serving(lambda port: app(f"http://127.0.0.1:{port}/", streaming=False)) as plain,
        serving(lambda port: flooding(app(f"http://127.0.0.1:{port}/", streaming=True), FLOODS)) as streaming,
        serving(lambda port: app(f"http://127.0.0.1:{port}/", streaming=True, version="0.3")) as legacy,
    ):
        urls = {"plain": plain, "streaming": streaming, "legacy": legacy}
        yield {name: f"http://127.0.0.1:{port}/" for name, port in urls.items()}
        RELEASE.set()  # the agent's hanging answers end, so that its servers can stop


def results(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == "result"]


SUITE = """
cases:
  - id: reply
    input: hello
    assert: [{type: equals, value: "echo: hello (turn 1)"}]
  - id: history-in-one-context
    input: [{role: user, content: one}, {role: assistant, content: "echo: one (turn 1)"}, {role: user, content: two}]
    assert: [{type: equals, value: "echo: two (turn 2)"}]
  - id: task-text
    input: report sales
    assert: [{type: equals, value: "Done.\\nreport on sales"}, {type: state, equals: completed}]
  - id: task-data
    input: task sales
    assert: [{type: json_path, path: $.items, value: 3}]
  - id: failed-unexpected
    input: fail
  - id: failed-expected
    input: fail
    assert: [{type: state, equals: [failed, rejected]}, {type: contains, value: the tool broke}]
  - id: rejected
    input: reject
  - id: asks-for-input
    input: ask
    assert: [{type: state, equals: input-required}, {type: contains, value: Which city?}]
  - id: input-given
    input: [{role: user, content: ask}, {role: user, content: Oslo}]
    assert: [{type: equals, value: "Weather in Oslo: sunny"}]
  - id: simulated
    simulator: {type: scripted, turns: [ask, Paris]}
    checkpoints:
      - {id: asked, assertion: {type: state, equals: input-required}}
      - {id: same-context-and-task, after: [asked], assertion: {type: contains, value: "Weather in Paris"}}
  - id: hangs
    timeout: 200ms
    input: hang
"""


def test_an_a2a_agent_answers_each_conversation_in_its_own_context(tmp_path, agents):
    (tmp_path / "specrun.yaml").write_text("")
    for name, url in agents.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "agent.yaml").write_text(json.dumps({"target": {"type": "a2a", "url": url}}))
    (tmp_path / "suite.yaml").write_text(f"targets: {json.dumps(list(agents))}\n" + SUITE)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "--runs", "2", "-j", "8"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    assert len(got) == 11 * 3 * 2  # every case against each agent, twice: a fresh context each time
    expected = {
        "failed-unexpected": "failed",  # a failed task fails a case that does not check the state
        "rejected": "failed",
        "hangs": "error",
    }
    for record in got:
        assert record["status"] == expected.get(record["id"], "passed"), record
    by_id = {r["id"]: r for r in got}
    assert by_id["failed-unexpected"]["state"] == "failed"
    assert "state 'failed', expected 'completed': the tool broke" in by_id["failed-unexpected"]["assertion_errors"][0]
    assert by_id["task-data"]["output"] == {"items": 3} and "state" not in by_id["reply"]
    assert by_id["hangs"]["error"] == "timeout after 200ms"
    assert [t.get("state") for t in by_id["simulated"]["turns"]] == ["input-required", "completed"]
    assert "tool_calls" not in by_id["reply"]  # an A2A agent does not report its tools: unknown, not none


def test_an_agent_that_is_not_there_makes_each_case_an_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free, and nobody listens once closed
    (tmp_path / "specrun.yaml").write_text("")
    suite = {"target": {"type": "a2a", "url": f"http://127.0.0.1:{port}/"}, "cases": [{"id": "one", "input": "hi"}]}
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    [record] = results(tmp_path / "out.jsonl")
    assert record["status"] == "error"
    assert record["error"].startswith(f"cannot use the agent card of http://127.0.0.1:{port}/: ")


def test_a_reply_past_the_bound_fails_its_case_and_the_next_case_runs(tmp_path, agents):
    url = agents["streaming"]
    (tmp_path / "specrun.yaml").write_text("")
    suite = {
        "target": {"type": "a2a", "url": url},
        "cases": [
            {"id": "json", "input": "flood json"},
            {"id": "sse", "input": "flood sse"},  # one endless data: line
            {"id": "next", "input": "hi", "assert": [{"type": "equals", "value": "echo: hi (turn 1)"}]},
        ],
    }
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "-j", "1"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = {r["id"]: r for r in results(tmp_path / "out.jsonl")}
    assert {case: r["status"] for case, r in got.items()} == {"json": "error", "sse": "error", "next": "passed"}
    for case in ("json", "sse"):
        assert got[case]["error"].startswith(f"A2A agent {url}: ")
        assert "a reply over the 64 MiB bound (67,1" in got[case]["error"]
