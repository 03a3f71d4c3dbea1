"""The mcp target against real MCP servers (mcp's MCPServer): over stdio, started by the run,
and over streamable HTTP, served here on loopback; run through the CLI, in process."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.asgi import flooding, serving
from support.cli import run_cli
from support.modules import agent_module

# Imported in the background from the start (tests/conftest.py): the mcp SDK, 0.5 s.
PRELOADS = ("mcp",)

AGENTS = Path(__file__).parent / "agents"
TOOLS = str(AGENTS / "mcp_tools.py")
FLOOD = str(AGENTS / "mcp_flood.py")
TOKEN = "mcp-test-token-4711"


@pytest.fixture(scope="module")
def http_url():
    http_app = agent_module("mcp_tools").http_app

    # the tool huge's calls of 65 and 66 MiB are answered with 65 MiB of JSON and of SSE
    floods = {b'"megabytes":65': b"application/json", b'"megabytes":66': b"text/event-stream"}
    with serving(lambda port: flooding(http_app(TOKEN), floods)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def project(tmp_path: Path, target: dict, suite: str) -> Path:
    (tmp_path / "specrun.yaml").write_text("")
    (tmp_path / "agent.yaml").write_text(json.dumps({"name": "calc", "target": target}))
    (tmp_path / "suite.yaml").write_text(suite)
    return tmp_path


def results(path: Path) -> dict[str, dict]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"]: r for r in records if r.get("type") == "result"}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


STDIO_SUITE = """
cases:
  - id: structured
    input: {tool: add, arguments: {a: 2, b: 3}}
    assert: [{type: equals, value: {result: 5}}, {type: tool_called, name: add, arguments: {a: 2}}]
  - id: text
    input: {tool: greet, arguments: {name: Ann}}
    assert: [{type: equals, value: "Hello, Ann!"}]
  - id: wrong-answer
    input: {tool: add, arguments: {a: 2, b: 2}}
    assert: [{type: equals, value: {result: 5}}]
  - id: error-unexpected
    input: {tool: divide, arguments: {a: 1, b: 0}}
  - id: error-expected
    input: {tool: divide, arguments: {a: 1, b: 0}}
    assert: [{type: state, equals: error}, {type: contains, value: division by zero}]
  - id: environment
    input: {tool: whoami}
    assert: [{type: equals, value: {result: hello}}]
  - id: server-pid
    input: {tool: pid}
  - id: hangs
    timeout: 200ms
    input: {tool: stall, arguments: {seconds: 30}}
"""


def test_a_stdio_server_answers_each_case_with_its_tool_result(tmp_path):
    target = {"type": "mcp", "command": [TOOLS], "env": {"GREETING": "hello"}, "grace": "200ms"}
    root = project(tmp_path, target, STDIO_SUITE)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "-j", "4"], root)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(root / "out.jsonl")
    status = {case: r["status"] for case, r in got.items()}
    assert status == {
        "structured": "passed",
        "text": "passed",
        "wrong-answer": "failed",
        "error-unexpected": "failed",  # isError fails a case that does not check the state
        "error-expected": "passed",
        "environment": "passed",
        "server-pid": "passed",
        "hangs": "error",  # the case timeout, never the run's
    }
    assert got["structured"]["output"] == {"result": 5} and got["structured"]["state"] == "ok"
    call = got["structured"]["tool_calls"]
    assert call == [{"name": "add", "arguments": {"a": 2, "b": 3}, "result": {"result": 5}, "status": "ok"} | call[0]]
    assert call[0]["status"] == "ok"
    unexpected = got["error-unexpected"]
    assert unexpected["state"] == "error" and "division by zero" in unexpected["output"]
    assert unexpected["tool_calls"][0]["status"] == "error"
    assert "state 'error', expected 'ok'" in unexpected["assertion_errors"][0]
    assert got["hangs"]["error"] == "timeout after 200ms"
    # one server served the run, and is gone with it (its whole process tree)
    assert not alive(got["server-pid"]["output"]["result"])


def test_a_stdio_line_past_the_bound_fails_its_case_and_the_next_case_runs(tmp_path):
    suite = """
cases:
  - {id: huge, input: {tool: huge}}
  - {id: next, input: {tool: add, arguments: {a: 2, b: 3}}, assert: [{type: equals, value: "5"}]}
"""
    root = project(tmp_path, {"type": "mcp", "command": [FLOOD]}, suite)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "-j", "1"], root)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(root / "out.jsonl")
    assert {case: r["status"] for case, r in got.items()} == {"huge": "error", "next": "passed"}
    assert "failed (MCPError: a reply over the 64 MiB bound (67,1" in got["huge"]["error"]
    assert got["huge"]["error"].endswith(" bytes read without a newline)) on tools/call huge")


BAD_SUITE = """
cases:
  - id: typo
    input: {tool: ad, arguments: {a: 1, b: 2}}
  - id: bad-arguments
    input: {tool: add, arguments: {a: two}}
  - id: a-message
    input: hello
  - id: no-tools-here
    target: {type: python, function: plain_echo:echo}
    input: {tool: add, arguments: {a: 1, b: 2}}
  - id: a-conversation
    simulator: {type: scripted, turns: [hi]}
    checkpoints: [{id: said, assertion: {type: contains, value: hi}}]
"""


def test_an_unknown_tool_or_bad_arguments_stop_the_run_at_the_case(tmp_path, http_url, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    target = {"type": "mcp", "url": http_url, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}
    root = project(tmp_path, target, BAD_SUITE)
    (root / "plain_echo.py").write_text("def echo(messages, ctx):\n    return messages[-1].text\n")
    done = run_cli(["suite.yaml", "--no-history"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("suite.yaml:3:5: unknown tool 'ad' (did you mean 'add'?); the tools of MCP server")
    assert lines[0].endswith("(at cases[0].input.tool)")
    assert "suite.yaml:5:5: tool 'add': \"b\" is a required property (at cases[1].input.arguments)" in lines
    assert 'suite.yaml:5:5: tool \'add\': "two" is not of type "integer" (at cases[1].input.arguments.a)' in lines
    assert any(line.startswith("suite.yaml:7:5: an mcp target takes one tool call as input") for line in lines)
    assert any("suite.yaml:9:5: the python target cannot call a tool directly" in line for line in lines)
    assert any(line.startswith("suite.yaml:12:5: an mcp target answers one tool call per case") for line in lines)
    assert TOKEN not in done.stdout + done.stderr


def test_an_http_reply_past_the_bound_fails_its_case_and_the_next_case_runs(tmp_path, http_url, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    target = {"type": "mcp", "url": http_url, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}
    suite = """
cases:
  - {id: json, input: {tool: huge, arguments: {megabytes: 65}}}
  - {id: sse, input: {tool: huge, arguments: {megabytes: 66}}}
  - {id: next, input: {tool: add, arguments: {a: 2, b: 3}}, assert: [{type: equals, value: {result: 5}}]}
"""
    root = project(tmp_path, target, suite)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "-j", "1"], root)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(root / "out.jsonl")
    assert {case: r["status"] for case, r in got.items()} == {"json": "error", "sse": "error", "next": "passed"}
    assert "a reply over the 64 MiB bound (67,1" in got["json"]["error"]
    assert "67108864 byte limit" in got["sse"]["error"] or "64 MiB bound" in got["sse"]["error"]


def test_validate_lists_the_servers_tools_over_http(tmp_path, http_url, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    target = {"type": "mcp", "url": http_url, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}
    root = project(tmp_path, target, "cases: [{id: one, input: {tool: add, arguments: {a: 1, b: 2}}}]")
    done = run_cli(["validate", "suite.yaml", "--tools"], root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"agent {root.name}: MCP server {http_url}: 8 tools" in done.stdout
    assert "  add(a: integer, b: integer)\n      Add two integers." in done.stdout
    assert "  lookup(city: string)" in done.stdout and "ok: 1 cases in 1 suite files" in done.stdout
    # without the token the server refuses: validate cannot check the case, and says why
    monkeypatch.setenv("MCP_TOKEN", "wrong")
    refused = run_cli(["validate", "suite.yaml"], root)
    assert refused.returncode == 2
    assert f"agent {root.name!r}: cannot check cases: MCP server {http_url}" in refused.stderr


def test_a_server_that_exits_or_hangs_at_start_makes_each_case_an_error(tmp_path):
    crash = [sys.executable, "-c", "import sys; print('no config', file=sys.stderr); sys.exit(3)"]
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    suite = f"""
cases:
  - id: crashes
    target: {{type: mcp, command: {json.dumps(crash)}}}
    input: {{tool: add, arguments: {{a: 1, b: 2}}}}
  - id: hangs
    target: {{type: mcp, command: {json.dumps(hang)}, start_timeout: 200ms, grace: 100ms}}
    input: {{tool: add, arguments: {{a: 1, b: 2}}}}
"""
    (tmp_path / "specrun.yaml").write_text("")
    (tmp_path / "suite.yaml").write_text(suite)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    assert got["crashes"]["status"] == "error"
    assert "exited with code 3 at start; stderr: 'no config'" in got["crashes"]["error"]
    assert got["hangs"]["status"] == "error"
    assert "did not answer within 0.2s (start_timeout) at start" in got["hangs"]["error"]
