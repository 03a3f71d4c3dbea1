"""specrun's OTLP/HTTP receiver and the limits on what it keeps: malformed bodies are a 400 (and
counted), never a crash; memory is bounded per case and per run; the record of a trace is
bounded; spans and reported calls merge without counting a call twice."""

from __future__ import annotations

import gzip
import json

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from specrun import Response, ToolCall
from specrun._traces import collector, evidence
from specrun._traces.collector import Router
from specrun._traces.receiver import Receiver
from specrun._traces.spans import Span
from specrun.viewer.transcript import repetition, trace_tree

TRACE = 0x0AF7651916CD43DD8448EB211C80319C


def otlp_json(trace_id: str, spans: int = 1) -> bytes:
    items = [
        {
            "traceId": trace_id,
            "spanId": f"{i + 1:016x}",
            "name": f"s{i}",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": 2,
        }
        for i in range(spans)
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": items}]}]}).encode()


@pytest.fixture
async def receiver():
    router = Router()
    receiver = Receiver("127.0.0.1", 0, router)
    await receiver.start()
    yield receiver
    await receiver.close()


async def post(receiver: Receiver, body: bytes, content_type: str, **headers: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{receiver.endpoint}/v1/traces", data=body, headers={"Content-Type": content_type, **headers}
        ) as r,
    ):
        return r.status, await r.read()


async def test_malformed_otlp_is_a_400_saying_where_and_is_counted(receiver: Receiver) -> None:
    case = receiver.router.open(TRACE, 1)
    status, body = await post(
        receiver, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}', "application/json"
    )
    assert status == 400
    assert "resourceSpans[0].scopeSpans[0].spans[0].traceId: expected 32 hex digits" in json.loads(body)["message"]
    status, body = await post(receiver, b"{not json", "application/json")
    assert status == 400
    status, body = await post(receiver, b"\x0a\xff\x01", "application/x-protobuf")  # a field longer than the body
    assert status == 400 and b"not an OTLP protobuf" in body  # a google.rpc.Status, as OTLP says
    status, _ = await post(receiver, b"{}", "text/plain")
    assert status == 415
    assert receiver.router.rejected == 4 and case.spans == []
    # The receiver still works, gzip bodies included, and keeps only the spans of open cases.
    status, body = await post(
        receiver, gzip.compress(otlp_json(f"{TRACE:032x}", 2)), "application/json", **{"Content-Encoding": "gzip"}
    )
    assert (status, json.loads(body)) == (200, {})
    status, _ = await post(receiver, otlp_json("1" * 32), "application/json")
    assert status == 200
    assert [s.name for s in case.spans] == ["s0", "s1"] and receiver.router.counts()["unmatched"] == 1


async def test_protobuf_bodies_and_a_partial_success_over_the_case_limit(receiver: Receiver, monkeypatch) -> None:
    monkeypatch.setattr(collector, "MAX_CASE_SPANS", 3)
    case = receiver.router.open(TRACE, 1)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for i in range(5):
        span = spans.add(trace_id=TRACE.to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), name=f"p{i}")
        span.attributes.add(key="n").value.int_value = i
    status, body = await post(receiver, request.SerializeToString(), "application/x-protobuf")
    assert status == 200
    assert ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 2
    assert [s.attributes["n"] for s in case.spans] == [0, 1, 2] and case.dropped == 2
    receiver.router.close(case)
    assert receiver.router.held == 0  # a finished case's memory leaves the run's budget


def test_the_run_wide_budget_bounds_every_open_case_together(monkeypatch) -> None:
    router = Router()
    one, two = router.open(1, 9), router.open(2, 9)
    monkeypatch.setattr(collector, "MAX_HELD_CHARS", 1000)
    big = {"text": "x" * 400}
    spans = [Span(trace, i + 1, 9, "s", 0, 1, 0, "", dict(big), 600) for trace in (1, 2) for i in range(2)]
    assert router.deliver(spans) == 3  # one span fits in the run's budget, the rest are dropped
    assert (len(one.spans), one.dropped, len(two.spans), two.dropped) == (1, 1, 0, 2)


def tool_span(span_id: int, name: str, start: int, **attributes: object) -> Span:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **attributes}
    return Span(1, span_id, 9, f"execute_tool {name}", start, start + 1, 0, "", attrs, 100)


def test_merging_matches_on_call_id_else_name_arguments_and_order() -> None:
    model = Span(1, 50, 9, "chat", 0, 10, 0, "", {"gen_ai.operation.name": "chat"}, 100)
    spans = [
        model,
        tool_span(1, "search", 20, **{"gen_ai.tool.call.id": "a", "gen_ai.tool.call.arguments": '{"q": "x"}'}),
        tool_span(2, "search", 21, **{"gen_ai.tool.call.arguments": '{"q": "y"}', "gen_ai.tool.call.result": "r2"}),
        tool_span(3, "search", 22, **{"gen_ai.tool.call.arguments": '{"q": "y"}', "gen_ai.tool.call.result": "r3"}),
        tool_span(4, "fetch", 23),
    ]
    reported = [
        ToolCall("search", {"q": "different"}, id="a"),  # the same id: the same call, whatever its arguments say
        ToolCall("search", {"q": "y"}),
        ToolCall("search", {"q": "y"}),
        ToolCall("search", {"q": "z"}, id="b"),  # reported only
    ]
    response = evidence.apply(Response("ok", tool_calls=reported), spans, turn=2)
    calls = [(c.name, c.arguments, c.result, c.id, c.step) for c in response.tool_calls]
    assert calls == [
        ("search", {"q": "different"}, None, "a", 1),
        ("search", {"q": "y"}, "r2", None, 1),  # the n-th such reported call is the n-th such traced one
        ("search", {"q": "y"}, "r3", None, 1),
        ("search", {"q": "z"}, None, "b", None),
        ("fetch", {}, None, None, 1),  # traced only
    ]
    assert all(c.turn == 2 for c in response.tool_calls if c.id != "b")
    quiet = evidence.apply(Response("ok"), [model], turn=1)  # spans, none a tool: no tool was called
    assert quiet.tools_reported and quiet.tool_calls == []


def test_openinference_tool_spans_and_model_usage() -> None:
    tool = Span(
        1,
        2,
        9,
        "lookup",
        5,
        6,
        2,
        "boom",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            # the tool's JSON Schema, not the call's arguments
            "tool.parameters": '{"type": "object", "properties": {"id": {"type": "string"}}}',
            "output.value": "nothing",
        },
        100,
    )
    llm = Span(
        1,
        3,
        9,
        "llm",
        0,
        4,
        0,
        "",
        {
            "openinference.span.kind": "LLM",
            "llm.token_count.prompt": 4,
            "llm.token_count.completion": 2,
            "llm.token_count.total": 6,
        },
        100,
    )
    agent = Span(
        1, 4, 9, "agent", 0, 9, 0, "", {"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 4}, 100
    )
    [call] = evidence.tool_calls([tool, llm, agent])
    assert (call.name, call.arguments, call.result, call.status, call.step) == ("lookup", {}, "nothing", "error", 1)
    usage = evidence.usage([tool, llm, agent])  # the agent span repeats the totals: not counted again
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (4, 2, 6)


def test_the_recorded_trace_is_bounded_and_the_viewer_shows_its_tree(monkeypatch) -> None:
    spans = [
        Span(
            1, i + 1, 9 if i == 0 else 1, f"s{i}", i * 1_000_000, i * 1_000_000 + 500_000, 0, "", {"v": "x" * 999}, 1100
        )
        for i in range(evidence.MAX_RECORD_SPANS + 7)
    ]
    recorded, left = evidence.record(spans, 9)
    assert len(recorded) == evidence.MAX_RECORD_SPANS and left == 7
    assert len(recorded[0]["attributes"]["v"]) == evidence.MAX_SHOWN_VALUE + 1
    assert len(json.dumps(recorded)) < 200 * 1024
    html = trace_tree({"trace_id": "t", "spans": [*recorded[:3], {**recorded[0], "name": "again<b>"}], "dropped": left})
    assert html.startswith('<h4>Trace (4 spans)</h4><ul class="spans"><li><code>s0</code>')
    assert "0.50ms" in html and '<ul class="spans"><li><code>s1</code>' in html and "7 more spans not kept" in html
    assert "again&lt;b&gt;" in html and "<b>" not in html  # a reused span id: each span once, escaped
    shown = repetition({"status": "passed", "output": "ok", "trace": {"trace_id": "t", "spans": recorded[:2]}})
    assert "<h4>Trace (2 spans)</h4>" in shown  # a case's transcript in the viewer
