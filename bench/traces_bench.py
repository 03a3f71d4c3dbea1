"""What ``traces: otel`` costs specrun: 1,000 cases, 10 spans each, with traces on and off.

Goal: a case with traces on adds at most 0.2 CPU-ms plus 0.02 ms per span (0.4 ms here); with
traces off, nothing (the default path imports nothing of it: tests/test_startup.py).

Two paths, each run with traces off and on, interleaved, the median of ``--repeat`` runs:

- ``python``: an async function that makes 10 spans per case (an agent span, a model call and
  8 ``execute_tool`` spans) through an SDK tracer provider it sets itself, in both runs, so
  the agent's own span cost is the same; the difference is specrun's (its context around the
  call, its span processor, the evidence and the recorded tree).
- ``http``: an OpenAI-format agent in its own process (its CPU is not specrun's) that, given a
  ``traceparent``, posts the case's 10 spans as OTLP protobuf to specrun's receiver before
  replying; the difference is specrun's (the header, the receiver, decoding, routing, the
  evidence and the record).

    python bench/traces_bench.py [--cases 1000] [--parallel 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import run_specrun, write_suite

SPANS = 10

PYTHON_AGENT = """
import asyncio, json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

trace.set_tracer_provider(TracerProvider())
tracer = trace.get_tracer("bench")


async def agent(messages, ctx):
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat",
                                                              "gen_ai.usage.input_tokens": 12}):
            await asyncio.sleep(0)
        for i in range(8):
            with tracer.start_as_current_span("execute_tool search", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": f"c{i}", "gen_ai.tool.call.arguments": json.dumps({"q": i})}):
                pass
    return "done"
"""

HTTP_AGENT = """
import asyncio, json, os, sys
import aiohttp
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

receiver = sys.argv[1]
session = None


def spans(trace_id, parent):
    request = ExportTraceServiceRequest()
    items = request.resource_spans.add().scope_spans.add().spans
    top = items.add(trace_id=trace_id, span_id=b"\\x01" * 8, parent_span_id=parent, name="POST /chat")
    top.start_time_unix_nano, top.end_time_unix_nano = 1, 9_000_000
    for i in range(9):
        span = items.add(trace_id=trace_id, span_id=bytes([2 + i]) * 8, parent_span_id=top.span_id, name="tool")
        span.start_time_unix_nano, span.end_time_unix_nano = 1_000 * i, 1_000 * i + 500
        for key, value in (("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "search"),
                           ("gen_ai.tool.call.arguments", json.dumps({"q": i}))):
            span.attributes.add(key=key).value.string_value = value
    return request.SerializeToString()


async def chat(request):
    global session
    await request.read()
    parent = request.headers.get("traceparent")
    if parent:
        session = session or aiohttp.ClientSession()
        _, trace_id, span_id, _ = parent.split("-")
        body = spans(bytes.fromhex(trace_id), bytes.fromhex(span_id))
        async with session.post(receiver, data=body, headers={"Content-Type": "application/x-protobuf"}) as reply:
            await reply.read()
    return web.json_response({"choices": [{"message": {"role": "assistant", "content": "done"}}]})


async def close(app):
    if session is not None:
        await session.close()


app = web.Application()
app.router.add_post("/chat", chat)
app.on_cleanup.append(close)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[2]), print=None)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure(folder: Path, target: str, traces: str, cases: int, parallel: int) -> dict[str, float]:
    (folder / "agent.yaml").write_text(f"target: {target}\n" + (f"traces: {traces}\n" if traces else ""))
    run = run_specrun(["suite.jsonl", "-j", str(parallel), "-o", "out.jsonl", "--no-history"], folder)
    assert run["code"] == 0, run["stderr"][-2000:]
    if traces:
        lines = (folder / "out.jsonl").read_text().splitlines()
        result = json.loads(lines[1])
        assert len(result["trace"]["spans"]) == SPANS and len(result["tool_calls"]) >= 8, result
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    goal = 0.2 + 0.02 * SPANS
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "specrun.yaml").write_text("timeout: 60s\n")
        (folder / "bench_agent.py").write_text(PYTHON_AGENT)
        cases = [
            {"id": f"c{i}", "input": f"question {i}", "assertions": [{"type": "contains", "value": "done"}]}
            for i in range(args.cases)
        ]
        write_suite(folder / "suite.jsonl", cases)
        receiver, port = f"127.0.0.1:{free_port()}", free_port()
        (folder / "http_agent.py").write_text(HTTP_AGENT)
        server = subprocess.Popen(
            [sys.executable, str(folder / "http_agent.py"), f"http://{receiver}/v1/traces", str(port)]
        )
        try:
            for _ in range(50):  # until the agent listens
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            paths = {
                "python": ("python:bench_agent:agent", "otel"),
                "http": (f"http://127.0.0.1:{port}/chat", f"{{type: otel, receiver: '{receiver}'}}"),
            }
            for name, (target, traces) in paths.items():
                off, on = [], []
                for _ in range(args.repeat):
                    off.append(measure(folder, target, "", args.cases, args.parallel)["cpu"])
                    on.append(measure(folder, target, traces, args.cases, args.parallel)["cpu"])
                added = (statistics.median(on) - statistics.median(off)) * 1000 / args.cases
                verdict = "ok" if added <= goal else "OVER"
                print(
                    f"{name:>6}: traces off {statistics.median(off):.2f} CPU-s, on {statistics.median(on):.2f} CPU-s:"
                    f" {added:.3f} CPU-ms per case with {SPANS} spans (goal {goal:.2f}) {verdict}"
                )
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
