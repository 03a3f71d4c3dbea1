"""Mocked tools (``tools:``): a python agent uses them through the mcp client at ctx.mcp_url;
its calls are the case's tool calls; a call no mock answers fails the case; two cases in flight
at once each see their own mocks; bad declarations are exit 2 with file:line. Through the CLI,
in process: one run of one suite serves the run-level tests."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli

# Imported in the background from the start (tests/conftest.py): the mcp SDK, 0.5 s.
PRELOADS = ("mcp",)

AGENT = Path(__file__).parent / "agents" / "mcp_mocked_agent.py"


def plan(*calls: Any, **flags: bool) -> str:
    return json.dumps({"calls": [list(c) for c in calls], **flags})


ORDER_1, REFUND = ("lookup_order", {"id": 1}), ("refund", {"id": 1, "why": "late"})
SUITE = {
    "defaults": {
        "tools": [
            {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                "when": [
                    {"arguments": {"id": 1}, "returns": {"status": "shipped"}},
                    {"arguments": {"id": 2}, "error": "order 2 is archived"},
                ],
            },
            {"name": "refund", "returns": "refunded"},
        ]
    },
    "cases": [
        {
            "id": "uses-tools",
            "input": plan(ORDER_1, REFUND),
            "assert": [
                {"type": "tool_called", "name": "lookup_order", "arguments": {"id": 1}, "status": "ok", "times": 1},
                {"type": "tool_order", "names": ["lookup_order", "refund"]},
                {"type": "contains", "value": 'lookup_order,refund | {"status": "shipped"} | refunded'},
            ],
        },
        {
            "id": "wrong-order",
            "input": plan(ORDER_1, REFUND),
            "assert": {"type": "tool_order", "names": ["refund", "lookup_order"]},
        },
        {
            "id": "mocked-errors",  # one declared with error:, one whose arguments its input_schema rejects
            "input": plan(("lookup_order", {"id": 2}), ("lookup_order", {"id": "one"})),
            "assert": [
                {"type": "tool_called", "name": "lookup_order", "status": "error", "times": 2},
                {"type": "contains", "value": "error: order 2 is archived | error: arguments do not match"},
            ],
        },
        {
            "id": "unmocked-raised",
            "input": plan(("delete_account", {"user": "ann"})),
            "assert": {"type": "contains", "value": "never"},
        },
        {
            "id": "unmatched-caught",
            "input": plan(("lookup_order", {"id": 3}), catch=True),
            "assert": {"type": "contains", "value": "MCP error"},
        },
        {
            "id": "dynamic-unmocked",
            "input": plan(("refund", {})),
            "simulator": {"type": "scripted", "turns": [plan(("wipe", {}), catch=True)]},
            "checkpoints": [{"id": "never", "assertion": {"type": "contains", "value": "never"}}],
        },
        *(
            {  # each its own whoami; pair-a's refund replaces the defaults' (tools merge by name)
                "id": f"pair-{who}",
                "tools": [
                    {"name": "whoami", "returns": who},
                    *([{"name": "refund", "returns": "denied"}] * (who == "a")),
                ],
                "input": plan(("whoami", {}), ("refund", {}), meet=True),
                "assert": [
                    {"type": "equals", "value": f"lookup_order,refund,whoami | {who} | {refund}"},
                    {"type": "tool_called", "name": "whoami", "times": 1},
                ],
            }
            for who, refund in (("a", "denied"), ("b", "refunded"))
        ),
    ],
}


def project(root: Path, suite: Any) -> Path:
    (root / "specrun.yaml").write_text("")
    (root / "agent.yaml").write_text(json.dumps({"target": "python:mcp_mocked_agent:agent"}))
    shutil.copy(AGENT, root / "mcp_mocked_agent.py")
    (root / "suite.yaml").write_text(suite if isinstance(suite, str) else json.dumps(suite))
    return root


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, dict[str, Any]]]:
    root = project(tmp_path_factory.mktemp("mocks"), SUITE)
    done = run_cli(["run", "suite.yaml", "--parallel", "8", "-o", "out.jsonl"], root)
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    return done, {r["id"]: r for r in lines if r.get("type") == "result"}


def test_an_agent_uses_the_mocks_and_its_calls_are_the_cases_evidence(run):
    done, results = run
    assert results["uses-tools"]["status"] == "passed", results["uses-tools"]
    calls = results["uses-tools"]["tool_calls"]
    assert [(c["name"], c["arguments"], c["result"], c["status"]) for c in calls] == [
        ("lookup_order", {"id": 1}, {"status": "shipped"}, "ok"),
        ("refund", {"id": 1, "why": "late"}, "refunded", "ok"),
    ]
    assert results["wrong-order"]["status"] == "failed"
    assert done.returncode == 1


def test_a_mock_fails_a_call_by_error_or_by_its_input_schema(run):
    _, results = run
    assert results["mocked-errors"]["status"] == "passed", results["mocked-errors"]
    declared, rejected = results["mocked-errors"]["tool_calls"]
    assert (declared["result"], declared["status"]) == ("order 2 is archived", "error")
    assert rejected["result"].startswith("arguments do not match the input_schema of lookup_order: ")


@pytest.mark.parametrize(
    ("case", "named"),
    [
        ("unmocked-raised", 'delete_account {"user": "ann"} is not mocked (no tool of that name is mocked)'),
        ("unmatched-caught", 'lookup_order {"id": 3} is not mocked (no `when` of its mock matches the arguments)'),
    ],
)
def test_a_call_no_mock_answers_fails_the_case_naming_it(run, case, named):
    done, results = run
    result = results[case]
    assert result["status"] == "failed", result
    failing = [a for a in result["assertions"] if a["status"] == "failed" and a["type"] == "tools"]
    assert len(failing) == 1 and named in failing[0]["message"], result["assertions"]
    assert named in done.stdout


def test_a_call_no_mock_answers_fails_a_dynamic_case_in_its_turn(run):
    _, results = run
    result = results["dynamic-unmocked"]
    assert result["status"] == "failed", result
    assert result["error"].startswith("specrun: tool call wipe {} is not mocked (no tool of that name is mocked)")
    assert result["error"].endswith("(in turn 2)")
    assert [c["name"] for c in result["tool_calls"]] == ["refund", "wipe"]


def test_two_cases_in_flight_keep_their_own_mocks(run):
    _, results = run
    for who in ("a", "b"):
        assert results[f"pair-{who}"]["status"] == "passed", results[f"pair-{who}"]
        assert [c["result"] for c in results[f"pair-{who}"]["tool_calls"]][:1] == [who]


BAD = """\
defaults:
  tools:
    - name: lookup
      returns: 1
    - name: lookup
      returns: 2
cases:
  - id: schema-errors
    input: hi
    tools:
      - name: typo
        return: 1
      - name: has space
        returns: 1
  - id: rule-errors
    input: hi
    tools:
      - name: nothing
      - name: both
        returns: 1
        error: no
      - name: branches
        when:
          - arguments: {a: 1}
      - name: schema
        input_schema: {type: nope}
        returns: 1
      - name: nan
        returns: {eta: .nan}
      - name: inf
        when: [{returns: [1, -.inf]}]
"""


def test_bad_tool_declarations_are_exit_2_with_file_and_line(tmp_path):
    done = run_cli(["validate", "suite.yaml"], project(tmp_path, BAD))
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout + done.stderr
    for line, words in [
        (5, "tool 'lookup' is declared twice"),
        (12, "return"),
        (13, "has space"),
        (18, "tool 'nothing' needs one of returns, error or when (it has none of them)"),
        (19, "tool 'both' needs one of returns, error or when (it has returns and error)"),
        (24, "a when: entry needs returns or error, one of them"),
        (26, "not a valid JSON Schema"),
        (29, "nan is not a JSON number: a tool cannot return it"),  # the server crashed on it
        (31, "-inf is not a JSON number"),
    ]:
        assert f"suite.yaml:{line}:" in out and words in out, (line, words, out)
    assert "Traceback" not in out


class HttpAgent:
    """An agent behind HTTP, in a thread of its own: it calls the tool its message names on the
    server of the header X-Specrun-MCP-URL, in plain JSON-RPC (no MCP SDK), and answers its text."""

    def __enter__(self) -> HttpAgent:
        self.loop, ready = asyncio.new_event_loop(), threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        assert ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)

    def _serve(self, ready: threading.Event) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/chat", self._chat)
        runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}/chat"
        ready.set()
        self.loop.run_forever()

    async def _chat(self, request: Any) -> Any:
        import aiohttp
        from aiohttp import web

        tool = (await request.json())["messages"][-1]["content"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {"q": 1}}}
        async with aiohttp.ClientSession() as http, http.post(request.headers["X-Specrun-MCP-URL"], json=call) as reply:
            answer = await reply.json()
        text = answer["result"]["content"][0]["text"] if "result" in answer else answer["error"]["message"]
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": text}}]})


def test_an_http_agent_finds_its_mocks_in_a_header(tmp_path):
    suite = {
        "defaults": {"tools": [{"name": "stock", "returns": "12 left"}]},
        "cases": [
            {
                "id": "in-stock",
                "input": "stock",
                "assert": [
                    {"type": "equals", "value": "12 left"},
                    {"type": "tool_called", "name": "stock", "arguments": {"q": 1}},
                ],
            },
            {"id": "unmocked", "input": "price", "assert": {"type": "contains", "value": "price"}},
        ],
    }
    with HttpAgent() as agent:
        root = project(tmp_path, suite)
        (root / "agent.yaml").write_text(json.dumps({"target": {"type": "http", "url": agent.url}}))
        done = run_cli(["run", "suite.yaml", "-o", "out.jsonl"], root)
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    results = {r["id"]: r for r in lines if r.get("type") == "result"}
    assert results["in-stock"]["status"] == "passed", results["in-stock"]
    assert results["unmocked"]["status"] == "failed", results["unmocked"]
    assert 'specrun: tool call price {"q": 1} is not mocked' in done.stdout


def test_a_process_agent_finds_its_mocks_in_its_environment(tmp_path):
    from specrun_plugins.targets.process import ProcessTarget

    from specrun import Context

    target = ProcessTarget({"type": "process", "command": [sys.executable, "-c", "pass"]}, tmp_path)
    mocked = Context(case_id="c", mcp_url="http://127.0.0.1:1/mcp/t")
    assert target.process(mocked).env["SPECRUN_MCP_URL"] == "http://127.0.0.1:1/mcp/t"
    assert "SPECRUN_MCP_URL" not in target.process(Context(case_id="c")).env


async def test_a_case_reaches_only_its_own_mocks_and_only_while_it_runs():
    import aiohttp

    from specrun._mocks.server import MockServer

    server = MockServer()
    await server.start()
    try:
        one, two = (server.open([{"name": "t", "returns": who}]) for who in ("one", "two"))
        assert one.url != two.url and one.url.rsplit("/", 1)[0] == two.url.rsplit("/", 1)[0]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
        async with aiohttp.ClientSession() as http:
            async with http.post(two.url, json=call) as reply:
                assert (await reply.json())["result"]["content"][0]["text"] == "two"
            async with http.post(one.url.rsplit("/", 1)[0] + "/guess", json=call) as reply:
                assert reply.status == 404
            server.close_case(two)
            async with http.post(two.url, json=call) as reply:
                assert reply.status == 404
        assert [c.result for c in two.calls] == ["two"] and one.calls == []
    finally:
        await server.close()


def test_the_example_passes_four_cases_and_fails_the_unmocked_one(tmp_path):
    example = Path(__file__).parents[1] / "examples" / "mocks"
    shutil.copytree(example, tmp_path / "mocks", ignore=shutil.ignore_patterns(".specrun", "__pycache__"))
    done = run_cli(["run", "suite.yaml", "-o", "out.jsonl"], tmp_path / "mocks")
    lines = [json.loads(line) for line in (tmp_path / "mocks" / "out.jsonl").read_text().splitlines()]
    statuses = {r["id"]: r["status"] for r in lines if r.get("type") == "result"}
    assert statuses.pop("unknown-order") == "failed" and set(statuses.values()) == {"passed"}, done.stdout
    assert 'lookup_order {"id": 9} is not mocked' in done.stdout


def test_mocked_tools_for_a_target_whose_agent_cannot_reach_them_are_refused(tmp_path):
    suite = "cases:\n  - id: model\n    input: hi\n    tools: [{name: lookup, returns: 1}]\n"
    root = project(tmp_path, suite)
    (root / "agent.yaml").write_text(json.dumps({"target": {"type": "litellm", "model": "openai/gpt-4o-mini"}}))
    done = run_cli(["suite.yaml"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "suite.yaml:2:" in done.stderr and "the litellm target does not give its agent mocked tools" in done.stderr


def test_an_agent_calling_in_a_loop_is_cut_at_the_bound_and_fails():
    from specrun import Response
    from specrun._mocks.server import MAX_CALLS, CaseMocks
    from specrun._mocks.session import verdicts

    mocks = CaseMocks({"ping": {"name": "ping", "returns": "pong"}})
    answers = [mocks.call("ping", {"n": i}) for i in range(MAX_CALLS + 50)]
    assert all(error is None for _, error in answers[:MAX_CALLS])  # every call up to the bound is answered
    assert all(result is None and "the rest are refused" in error["message"] for result, error in answers[MAX_CALLS:])
    assert len(mocks.calls) == MAX_CALLS + 1  # what the case keeps stays bounded too
    [verdict] = verdicts(Response("done", tool_calls=mocks.calls))
    assert verdict.status == "failed"
    assert verdict.message == f"specrun: the case made more than {MAX_CALLS:,} tool calls; the rest are refused"


async def test_the_sdks_client_of_either_protocol_era_is_served_by_the_sdk():
    import aiohttp
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

    from specrun._mocks.server import MockServer

    server = MockServer()
    await server.start()
    try:
        mocks = server.open([{"name": "t", "returns": {"n": 1}}])
        # auto: server/discover, then per-request envelopes; legacy: initialize and its notification
        for mode, version in (("auto", LATEST_MODERN_VERSION), ("legacy", LATEST_HANDSHAKE_VERSION)):
            async with Client(mocks.url, mode=mode) as client:
                assert client.protocol_version == version
                assert (await client.call_tool("t", {"mode": mode})).structured_content == {"n": 1}
                with pytest.raises(MCPError, match=r"tool call u \{\} is not mocked"):
                    await client.call_tool("u", {})
        old = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "0"}}
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": old}
        accept = {"Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession(headers=accept) as http:
            async with http.post(mocks.url, json=hello) as reply:  # an older client is answered in its version
                assert (await reply.json())["result"]["protocolVersion"] == "2024-11-05"
            async with http.post(mocks.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}) as reply:
                assert reply.status == 202
            async with http.post(mocks.url, data=b"x" * (5 * 1024 * 1024)) as reply:  # over the body bound
                assert reply.status == 413
        assert [(c.arguments, c.status) for c in mocks.calls] == [
            ({"mode": "auto"}, "ok"),
            ({}, "error"),
            ({"mode": "legacy"}, "ok"),
            ({}, "error"),
        ]
    finally:
        await server.close()


def test_without_the_mcp_extra_mocked_tools_are_refused_before_the_run(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # what finding an uninstalled package finds
    root = project(tmp_path, "cases:\n  - id: a\n    input: hi\n    tools: [{name: lookup, returns: 1}]\n")
    (root / "agent.yaml").write_text(json.dumps({"target": {"type": "process", "command": ["false"]}}))
    done = run_cli(["suite.yaml"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "suite.yaml:2:" in done.stderr and "pip install 'specrun[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr
