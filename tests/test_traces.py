"""``traces: otel``: an instrumented agent's spans are its case's evidence, for a python function
(spans of this process), a process agent (OTLP JSON to the receiver it is told of) and an http
agent (traceparent honoured, OTLP protobuf to the receiver it is pointed at), with passing and
failing tool assertions and no glue in the agents beyond their instrumentation."""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from support.cli import run_cli

PYTHON_AGENT = """
import asyncio, json, os
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from specrun import Response, ToolCall

tracer = trace.get_tracer("shop")
arrived = set()
both = asyncio.Event()


async def agent(messages, ctx):
    item = messages[-1].text
    if item == "silent":  # not instrumented: no span at all
        return "nothing to say"
    with tracer.start_as_current_span("invoke_agent shop") as top:
        top.set_attribute("gen_ai.operation.name", "invoke_agent")
        top.set_attribute("shop.key", os.environ["SHOP_API_KEY"])
        if item == "none":
            return "no tool needed"
        arrived.add(item)
        if len(arrived) >= 2:
            both.set()
        await asyncio.wait_for(both.wait(), 10)  # lamp and ghost are both in flight: their spans interleave
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3}
        with tracer.start_as_current_span("chat shop-model", attributes=attrs):
            await asyncio.sleep(0)
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": "c-" + item, "gen_ai.tool.call.arguments": json.dumps({"item": item})}
        with tracer.start_as_current_span("execute_tool lookup", attributes=tool) as span:
            await asyncio.sleep(0)
            if item == "ghost":
                span.set_status(Status(StatusCode.ERROR, "no such item"))
            else:
                span.set_attribute("gen_ai.tool.call.result", json.dumps({"stock": 3}))
    if item == "both":  # the target reports the call the trace has too: it counts once
        return Response("3 in stock", tool_calls=[ToolCall("lookup", {"item": "both"}, id="c-both")])
    return f"{item}: looked up"
"""

PYTHON_SUITE = """
cases:
  - id: lamp
    input: lamp
    assertions:
      - {type: tool_called, name: lookup, arguments: {item: lamp}}
  - id: ghost
    input: ghost
    assertions:
      - {type: tool_called, name: lookup, arguments: {item: ghost}}
      - {type: tool_not_called, name: lookup}
  - id: both
    input: both
    assertions:
      - {type: tool_called, name: lookup, times: 1}
  - id: none
    input: none
    assertions:
      - {type: tool_not_called, name: lookup}
  - id: silent
    input: silent
    assertions:
      - {type: contains, value: nothing}
"""


def results(path: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    found = {r["id"]: r for r in lines if r["type"] == "result"}
    found["summary"] = next(r for r in lines if r["type"] == "summary")
    return found


def test_python_agent_spans_are_each_cases_own_tool_calls(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(PYTHON_AGENT)
    (tmp_path / "agent.yaml").write_text("target: python:shop:agent\ntraces: otel\n")
    (tmp_path / "suite.yaml").write_text(PYTHON_SUITE)
    env = {**__import__("os").environ, "SHOP_API_KEY": "shop-secret-0123456789"}
    done = run_cli(["suite.yaml", "-j", "2", "-o", "out.jsonl"], tmp_path, env)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    status = {case: got[case]["status"] for case in ("lamp", "ghost", "both", "none", "silent")}
    assert status == {"lamp": "passed", "ghost": "failed", "both": "passed", "none": "passed", "silent": "passed"}
    lamp, ghost = got["lamp"], got["ghost"]
    assert lamp["tool_calls"] == [
        {
            "name": "lookup",
            "arguments": {"item": "lamp"},
            "result": {"stock": 3},
            "id": "c-lamp",
            "status": "ok",
            "step": 1,
            "turn": 1,
        },
    ]
    assert [(c["arguments"], c["status"]) for c in ghost["tool_calls"]] == [({"item": "ghost"}, "error")]
    assert [a["status"] for a in ghost["assertions"]] == ["passed", "failed"]
    assert len(got["both"]["tool_calls"]) == 1 and got["both"]["tool_calls"][0]["result"] == {"stock": 3}
    # A trace with spans and no tool span reports that no tool was called; a case with no span at
    # all says nothing of tools, and warns.
    assert "warnings" not in got["none"] and [s["name"] for s in got["none"]["trace"]["spans"]] == ["invoke_agent shop"]
    assert "tool_calls" not in got["silent"] and "no span of this case's trace" in got["silent"]["warnings"][0]
    assert lamp["usage"]["total_tokens"] == 10  # from the model-call span
    # The span tree is kept with the result, secrets masked, and never another case's spans.
    spans = lamp["trace"]["spans"]
    assert [s["name"] for s in spans] == ["invoke_agent shop", "chat shop-model", "execute_tool lookup"]
    assert spans[0]["parent_id"] is None and {s["parent_id"] for s in spans[1:]} == {spans[0]["span_id"]}
    assert spans[0]["attributes"]["shop.key"] == "[REDACTED:SHOP_API_KEY]"
    assert lamp["trace"]["trace_id"] != ghost["trace"]["trace_id"]
    assert ghost["trace"]["spans"][2]["status"] == "error" and ghost["trace"]["spans"][2]["message"] == "no such item"
    assert "shop-secret-0123456789" not in (tmp_path / "out.jsonl").read_text()
    assert got["summary"]["traces"]["spans"] == 10 and "Traces:" in done.stdout


PROCESS_AGENT = r"""
import json, os, sys, time, urllib.request

_, trace_id, parent, _ = os.environ["TRACEPARENT"].split("-")
endpoint = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]


def span(span_id, parent_id, name, attributes, error=False):
    now = time.time_ns()
    return {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent_id, "name": name,
            "startTimeUnixNano": str(now), "endTimeUnixNano": now + 1000, "status": {"code": 2 if error else 1},
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}


def export(*spans):
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()
    urllib.request.urlopen(urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})).read()


print("(agent) >> ", end="", flush=True)
for turn, line in enumerate(sys.stdin, 1):
    city, top = line.strip(), f"{turn:016x}"
    if city == "tick":  # five tool calls, each exported as it ends
        for n in range(5):
            export(span(f"{n + 200:016x}", top, "tick", {"openinference.span.kind": "TOOL", "tool.name": "tick"}))
        print("ticked\n(agent) >> ", end="", flush=True)
        continue
    tool = {"openinference.span.kind": "TOOL", "tool.name": "weather", "input.value": json.dumps({"city": city}),
            "output.value": "sunny"}
    export(span(f"{turn + 100:016x}", top, "weather", tool, error=city == "Atlantis"))
    print(f"{city}: sunny\n(agent) >> ", end="", flush=True)
    export(span(top, parent, "agent turn", {"openinference.span.kind": "AGENT"}))  # after the reply: within the grace
"""

PROCESS_SUITE = """
cases:
  - id: paris
    input: Paris
    assertions:
      - {type: tool_called, name: weather, arguments: {city: Paris}}
  - id: atlantis
    input: Atlantis
    assertions:
      - {type: tool_called, name: weather, arguments: {city: Paris}}
  - {id: ticks, input: tick, limits: {tool_calls: 2}}
"""


def test_process_agent_exporting_otlp_json_to_the_receiver_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "weather.py").write_text(PROCESS_AGENT)
    (tmp_path / "agent.yaml").write_text(
        "target: {type: process, command: weather.py}\ntraces: {type: otel, grace: 5s}\n"
    )
    (tmp_path / "suite.yaml").write_text(PROCESS_SUITE)
    done = run_cli(["suite.yaml", "-j", "2", "-o", "out.jsonl"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    assert (got["paris"]["status"], got["atlantis"]["status"]) == ("passed", "failed")
    assert got["paris"]["tool_calls"] == [
        {"name": "weather", "arguments": {"city": "Paris"}, "result": "sunny", "status": "ok", "turn": 1}
    ]
    assert [(c["arguments"], c["status"]) for c in got["atlantis"]["tool_calls"]] == [({"city": "Atlantis"}, "error")]
    # The top span came after the reply, and is the case's: the case waited for it, not for the whole grace.
    assert [s["name"] for s in got["paris"]["trace"]["spans"]] == ["weather", "agent turn"]
    assert got["paris"]["duration_ms"] < 4000
    # Its tool spans came one by one during the reply: the third one over the limit stopped it.
    assert got["ticks"]["status"] == "failed"
    assert got["ticks"]["error"] == "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent)"


class HttpAgent:
    """An agent behind HTTP on 127.0.0.1, in a thread: it reads ``traceparent``, answers in the
    OpenAI shape (reporting its tool call too), and exports its spans as OTLP protobuf to
    ``receiver`` after replying; once, it also sends the receiver a body that is not OTLP."""

    def __init__(self, receiver: str):
        self.receiver = f"http://{receiver}/v1/traces"
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.url = ""
        self.sent_bad = False
        self.statuses: list[int] = []

    def __enter__(self) -> HttpAgent:
        threading.Thread(target=self._serve, daemon=True).start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1/chat/completions"  # type: ignore[union-attr]
        self.tasks: set[asyncio.Task[None]] = set()
        self.ready.set()
        self.loop.run_forever()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        city = body["messages"][-1]["content"]
        _, trace_id, parent, _ = request.headers["traceparent"].split("-")
        task = asyncio.ensure_future(self._export(bytes.fromhex(trace_id), bytes.fromhex(parent), city))
        self.tasks.add(task)
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "forecast", "arguments": json.dumps({"city": city})},
        }
        message = {"role": "assistant", "content": f"{city}: rain", "tool_calls": [call] if city == "Oslo" else []}
        return web.json_response({"choices": [{"message": message}]})

    async def _export(self, trace_id: bytes, parent: bytes, city: str) -> None:
        import aiohttp

        request = ExportTraceServiceRequest()
        spans = request.resource_spans.add().scope_spans.add().spans
        top = spans.add(trace_id=trace_id, span_id=b"\x01" * 8, parent_span_id=parent, name="POST /v1/chat/completions")
        tool = spans.add(
            trace_id=trace_id, span_id=b"\x02" * 8, parent_span_id=top.span_id, name="execute_tool forecast"
        )
        for key, value in {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "forecast",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"city": city}),
            "gen_ai.tool.call.result": "rain",
        }.items():
            tool.attributes.add(key=key).value.string_value = value
        top.start_time_unix_nano, top.end_time_unix_nano = 1_000_000, 9_000_000
        tool.start_time_unix_nano, tool.end_time_unix_nano = 2_000_000, 3_000_000
        headers = {"Content-Type": "application/x-protobuf"}
        async with aiohttp.ClientSession() as session:
            if not self.sent_bad:
                self.sent_bad = True
                async with session.post(self.receiver, data=b"\x0a\xff\x01", headers=headers) as reply:
                    self.statuses.append(reply.status)
            async with session.post(self.receiver, data=request.SerializeToString(), headers=headers) as reply:
                self.statuses.append(reply.status)


HTTP_SUITE = """
cases:
  - id: oslo
    input: Oslo
    assertions:
      - {type: tool_called, name: forecast, arguments: {city: Oslo}, times: 1}
  - id: bergen
    input: Bergen
    assertions:
      - {type: tool_called, name: forecast, arguments: {city: Oslo}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_http_agent_honouring_traceparent_exports_to_the_receiver(tmp_path: Path) -> None:
    receiver = f"127.0.0.1:{free_port()}"
    with HttpAgent(receiver) as agent:
        (tmp_path / "agent.yaml").write_text(
            f"target: {{type: http, url: '{agent.url}'}}\ntraces: {{type: otel, receiver: '{receiver}', grace: 5s}}\n"
        )
        (tmp_path / "suite.yaml").write_text(HTTP_SUITE)
        done = run_cli(["suite.yaml", "-j", "2", "-o", "out.jsonl"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    assert (got["oslo"]["status"], got["bergen"]["status"]) == ("passed", "failed")
    # Oslo's call is in the reply and in the trace: one call, the reply's fields and the trace's result.
    assert got["oslo"]["tool_calls"] == [
        {"name": "forecast", "arguments": {"city": "Oslo"}, "result": "rain", "id": "call_1", "status": "ok", "turn": 1}
    ]
    assert [c["arguments"] for c in got["bergen"]["tool_calls"]] == [{"city": "Bergen"}]
    assert got["oslo"]["trace"]["spans"][1] == {
        "name": "execute_tool forecast",
        "span_id": "0202020202020202",
        "parent_id": "0101010101010101",
        "start_ms": 1.0,
        "duration_ms": 1.0,
        "attributes": got["oslo"]["trace"]["spans"][1]["attributes"],
    }
    assert sorted(agent.statuses) == [200, 200, 400]  # the body that is not OTLP: refused, and counted
    assert got["summary"]["traces"] == {"spans": 4, "unmatched": 0, "dropped": 0, "rejected": 1}
    assert "1 OTLP requests rejected" in done.stdout


def test_a_receiver_port_in_use_stops_the_run_before_any_case(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (tmp_path / "agent.yaml").write_text(
            f"target: http://127.0.0.1:9/chat\ntraces: {{type: otel, receiver: '127.0.0.1:{port}'}}\n"
        )
        (tmp_path / "suite.yaml").write_text("cases:\n  - {id: a, input: hi}\n")
        done = run_cli(["suite.yaml", "-o", "out.jsonl"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot listen for OTLP spans on 127.0.0.1:{port}: the port is in use" in done.stderr
    assert "receiver: 127.0.0.1:4319" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists() or "result" not in (tmp_path / "out.jsonl").read_text()


@pytest.mark.parametrize(
    ("traces", "message"),
    [("jaeger", "traces"), ("{type: otel, receiver: 'localhost'}", "traces.receiver")],
)
def test_a_bad_traces_setting_is_bad_input_with_its_line(tmp_path: Path, traces: str, message: str) -> None:
    (tmp_path / "agent.yaml").write_text(f"target: python:bot:answer\ntraces: {traces}\n")
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'hi'\n")
    (tmp_path / "suite.yaml").write_text("cases:\n  - {id: a, input: hi}\n")
    done = run_cli(["validate", "suite.yaml"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agent.yaml:2:" in done.stderr and message in done.stderr


def test_without_the_otel_extra_traces_are_bad_input_naming_the_install(tmp_path: Path, monkeypatch) -> None:
    import specrun._traces

    monkeypatch.setattr(specrun._traces, "PACKAGES", ("opentelemetry.not_installed_here",))
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\ntraces: otel\n")
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'hi'\n")
    (tmp_path / "suite.yaml").write_text("cases:\n  - {id: a, input: hi}\n")
    done = run_cli(["suite.yaml"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agent.yaml:2:" in done.stderr and "pip install 'specrun[otel]'" in done.stderr


def test_the_python_example_passes_but_for_the_case_failing_on_purpose(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "traces" / "python"
    done = run_cli(["suite.yaml", "-o", str(tmp_path / "out.jsonl")], example)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    statuses = {case: got[case]["status"] for case in ("lamp", "greeting", "unicorn", "fails-on-purpose")}
    assert statuses == {"lamp": "passed", "greeting": "passed", "unicorn": "passed", "fails-on-purpose": "failed"}
    assert got["unicorn"]["tool_calls"][0]["status"] == "error"  # a sync agent: its thread has the case's context
    assert got["fails-on-purpose"]["tool_calls"][0]["arguments"] == {"item": "chair"}


TICKING_AGENT = """
import asyncio
from opentelemetry import trace

tracer = trace.get_tracer("ticker")


async def agent(messages, ctx):
    count, path = messages[-1].text.split()
    with tracer.start_as_current_span("invoke_agent ticker"):
        for n in range(int(count)):
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "tick", "gen_ai.tool.call.id": f"t{n}"}
            with tracer.start_as_current_span("execute_tool tick", attributes=tool):
                with open(path, "a") as out:  # the tool's side effect
                    out.write("tick\\n")
            await asyncio.sleep(0)  # as an agent waits for its model between calls
    return "ticked"
"""


def test_a_traced_agent_over_its_tool_call_limit_is_stopped_as_its_spans_arrive(tmp_path: Path) -> None:
    (tmp_path / "ticker.py").write_text(TICKING_AGENT)
    (tmp_path / "agent.yaml").write_text("target: python:ticker:agent\ntraces: otel\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - {id: over, input: 5 over.txt, limits: {tool_calls: 2}}\n"
        "  - {id: within, input: 5 within.txt, limits: {tool_calls: 5},\n"
        "    assertions: [{type: tool_called, name: tick, times: 5}]}\n"
    )
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(tmp_path / "out.jsonl")
    assert got["over"]["status"] == "failed"
    assert got["over"]["error"] == "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent)"
    assert (tmp_path / "over.txt").read_text().splitlines() == ["tick"] * 3  # not the five it would have made
    assert [c["id"] for c in got["over"]["tool_calls"]] == ["t0", "t1", "t2"]
    assert got["within"]["status"] == "passed", got["within"]
    assert len((tmp_path / "within.txt").read_text().splitlines()) == 5


def test_waiting_for_late_spans_never_times_a_case_out(tmp_path: Path) -> None:
    """The agent replied in time; the grace for its spans is specrun's wait, not the agent's."""
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'hi'\n")
    receiver = f"127.0.0.1:{free_port()}"
    (tmp_path / "agent.yaml").write_text(
        f"target: python:bot:answer\ntraces: {{type: otel, receiver: '{receiver}', grace: 200ms}}\n"
    )
    (tmp_path / "suite.yaml").write_text("defaults: {timeout: 100ms}\ncases:\n  - {id: a, input: hi}\n")
    done = run_cli(["suite.yaml", "-o", "out.jsonl"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = results(tmp_path / "out.jsonl")["a"]
    # The loop's timers are millisecond-grained (libuv's, under uvloop): 199.9 ms is the grace.
    assert result["duration_ms"] >= 199 and "within 0.2s of the reply" in result["warnings"][0]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"


def run_example(name: str, tmp_path: Path, **replace: str) -> dict[str, dict[str, Any]]:
    """Run a copy of ``examples/traces/NAME`` (its agent.yaml edited by ``replace``) as a user
    would, from its folder: it fails only its case failing on purpose. Its results."""
    shutil.copytree(EXAMPLES / name, tmp_path / name)
    agent = tmp_path / name / "agent.yaml"
    text = agent.read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    agent.write_text(text)
    done = run_cli([".", "-o", str(tmp_path / "out.jsonl")], tmp_path / name)
    assert done.returncode == 1, done.stdout + done.stderr
    return results(tmp_path / "out.jsonl")


def test_the_process_example_reads_its_tool_calls_from_the_spans_it_exports(tmp_path: Path) -> None:
    got = run_example("process", tmp_path)
    statuses = {case: got[case]["status"] for case in ("paris", "small-talk", "fails-on-purpose")}
    assert statuses == {"paris": "passed", "small-talk": "passed", "fails-on-purpose": "failed"}
    # the agent prints text only: its calls are those of its OpenInference TOOL spans, over OTLP
    assert [(c["name"], c["arguments"], c["result"]) for c in got["paris"]["tool_calls"]] == [
        ("get_weather", {"city": "paris"}, "sunny")
    ]
    assert got["small-talk"]["trace"]["spans"] and not got["small-talk"].get("tool_calls")
    (failed,) = [a for a in got["fails-on-purpose"]["assertions"] if a["status"] == "failed"]
    assert 'calls: get_weather({"city": "oslo"})' in failed["message"]


def test_the_http_example_reads_its_tool_calls_from_the_spans_it_exports(tmp_path: Path) -> None:
    port, receiver = free_port(), free_port()  # not the example's fixed ports: others may hold them
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver}"}
    server = subprocess.Popen(
        [sys.executable, "-u", str(EXAMPLES / "http" / "server.py"), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None and select.select([server.stdout], [], [], 15)[0], "the server said nothing"
        assert f":{port}" in server.stdout.readline()  # aiohttp's "Running on http://127.0.0.1:PORT"
        got = run_example(
            "http",
            tmp_path,
            **{"8765": str(port), "traces: otel": f"traces: {{type: otel, receiver: '127.0.0.1:{receiver}'}}"},
        )
    finally:
        server.terminate()
        server.communicate(timeout=10)
    statuses = {case: got[case]["status"] for case in ("oslo", "small-talk", "fails-on-purpose")}
    assert statuses == {"oslo": "passed", "small-talk": "passed", "fails-on-purpose": "failed"}
    # the server answers with text only: its calls are those of its GenAI execute_tool spans
    assert [(c["name"], c["arguments"]) for c in got["oslo"]["tool_calls"]] == [("search_flights", {"to": "oslo"})]
    assert got["small-talk"]["trace"]["spans"] and not got["small-talk"].get("tool_calls")
    (failed,) = [a for a in got["fails-on-purpose"]["assertions"] if a["status"] == "failed"]
    assert 'calls: search_flights({"to": "rome"})' in failed["message"]
