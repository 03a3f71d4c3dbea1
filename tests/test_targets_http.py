"""The http target against real loopback servers: LLMServer (openai) and a small aiohttp app."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support.llm_server import LLMServer
from support.waiting import until

from specrun import Context, Message, TargetError
from specrun._models.targets.http import HttpTarget, compile_template

CTX = Context(case_id="case-7", user="ann", team="t1")


@pytest.fixture(scope="module")
def llm():
    with LLMServer() as server:
        yield server


@pytest.fixture
async def openai_target(llm):
    target = HttpTarget({"type": "http", "url": f"{llm.base_url}/chat/completions", "model": "m1"}, Path("."))
    yield target
    await target.aclose()


def user(text: str) -> list[Message]:
    return [Message("user", text)]


# -- openai format ----------------------------------------------------------------------------


async def test_openai_text_reply_usage_and_request(llm, openai_target):
    history = [Message("system", "be brief"), Message("user", "a"), Message("assistant", "b"), Message("user", "hello")]
    response = await openai_target.respond(history, CTX)
    assert response.content == "echo: hello"
    assert response.usage.total_tokens == 15 and response.usage.prompt_tokens == 10
    assert response.latency_ms > 0
    body = llm.requests[-1]
    assert body["model"] == "m1"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "hello"},
    ]


async def test_openai_tool_calls(llm, openai_target):
    llm.script({"content": None, "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})
    response = await openai_target.respond(user("weather?"), CTX)
    assert response.content is None
    [call] = response.tool_calls
    assert (call.name, call.arguments, call.id) == ("get_weather", {"city": "Oslo"}, "call_0")


async def test_json_looking_content_stays_text(llm, openai_target):
    llm.script({"content": '{"answer": 42}'})
    response = await openai_target.respond(user("q"), CTX)
    assert response.content == '{"answer": 42}'
    assert response.json == {"answer": 42}


async def test_image_parts_become_data_urls(llm, openai_target, tmp_path):
    image = tmp_path / "dot.png"
    image.write_bytes(b"\x89PNG fake")
    parts = [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": "file://dot.png", "path": str(image), "mime": "image/png"},
        {"type": "image", "url": "https://example.com/cat.jpg"},
    ]
    await openai_target.respond([Message("user", parts)], CTX)
    content = llm.requests[-1]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    expected = "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
    assert content[1] == {"type": "image_url", "image_url": {"url": expected}}
    assert content[2] == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ({"status": 500}, r"HTTP 500 from http://127\.0\.0\.1:\d+/v1/chat/completions: .*scripted 500"),
        ({"body": "not json"}, "invalid JSON from agent: not json"),
        ({"body": '{"choices": []}'}, r"reply has no choices\[0\]\.message"),
        ({"drop": True}, "connection to .* failed: ServerDisconnectedError"),
    ],
)
async def test_openai_failures_are_target_errors(llm, openai_target, behaviour, message):
    llm.script(behaviour)
    with pytest.raises(TargetError, match=message):
        await openai_target.respond(user("x"), CTX)


async def test_no_retry_by_default_then_retries_honour_retry_after(llm):
    url = f"{llm.base_url}/chat/completions"
    plain = HttpTarget({"type": "http", "url": url}, Path("."))
    llm.script({"status": 429, "headers": {"retry-after": "0"}})
    with pytest.raises(TargetError, match="HTTP 429"):
        await plain.respond(user("x"), CTX)
    await plain.aclose()
    retrying = HttpTarget({"type": "http", "url": url, "retries": 2}, Path("."))
    llm.script({"status": 429, "headers": {"retry-after": "0"}}, {"status": 503, "headers": {"retry-after": "0"}})
    assert (await retrying.respond(user("again"), CTX)).content == "echo: again"
    await retrying.aclose()


async def test_per_request_timeout(llm):
    target = HttpTarget({"type": "http", "url": f"{llm.base_url}/chat/completions", "timeout": "100ms"}, Path("."))
    llm.script({"delay": 0.3})
    with pytest.raises(TargetError, match=r"no reply from .* within 0\.1s"):
        await target.respond(user("x"), CTX)
    await target.aclose()
    await until(lambda: llm.in_flight == 0, what="the abandoned reply")  # sent before the server stops


async def test_a_reply_past_the_bound_is_an_error_and_the_next_call_is_answered(llm, openai_target):
    """65 MiB of chunked body (as an endless one is sent) is read only to the 64 MiB bound, and
    never held twice; a Content-Length over it fails before reading; the next call is answered."""
    llm.script({"flood": 65 << 20})
    tracemalloc.start()
    try:
        with pytest.raises(TargetError) as info:
            await openai_target.respond(user("x"), CTX)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert re.fullmatch(r"a reply over the 64 MiB bound \(67,\d{3},\d{3} bytes read\) from http://\S+", str(info.value))
    assert peak < 100 << 20
    llm.script({"flood": 65 << 20, "declared": True})
    with pytest.raises(TargetError, match=r"^a reply over the 64 MiB bound \(68,157,440 bytes declared by its"):
        await openai_target.respond(user("x"), CTX)
    assert (await openai_target.respond(user("again"), CTX)).content == "echo: again"


def test_aiohttp_is_loaded_with_the_session_before_the_case_clock_starts(monkeypatch):
    """The runner opens a case's session, then starts its timeout: importing aiohttp (0.1-0.4 s)
    must happen by then, not inside the first call (it timed out 500 ms cases under load)."""
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # any import of it now fails: shows who imports it
    target = HttpTarget({"type": "http", "url": "http://127.0.0.1:9/x"}, Path("."))  # not when loading
    with pytest.raises(ImportError, match="aiohttp"):
        target.session(CTX)


async def test_one_shared_unlimited_session_closed_by_aclose(llm, openai_target):
    replies = await asyncio.gather(*(openai_target.respond(user(str(i)), CTX) for i in range(30)))
    assert [r.content for r in replies] == [f"echo: {i}" for i in range(30)]
    session = openai_target._session
    assert session is not None and session.connector.limit == 0
    await openai_target.respond(user("again"), CTX)
    assert openai_target._session is session
    await openai_target.aclose()
    assert session.closed


# -- template format --------------------------------------------------------------------------


@pytest.fixture
async def app_server():
    """A custom agent API: records each request, replies with ``reply`` (a dict)."""
    state: dict[str, Any] = {"requests": [], "reply": {"data": {"answer": "ok"}}}

    async def chat(request: web.Request) -> web.Response:
        state["requests"].append({"json": await request.json(), "headers": dict(request.headers)})
        return web.json_response(state["reply"])

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/chat"
    yield state
    await runner.cleanup()


def template_target(url: str, **config: Any) -> HttpTarget:
    return HttpTarget({"type": "http", "url": url, "format": "template", **config}, Path("."))


async def test_template_substitutes_placeholders_keeping_types(app_server, monkeypatch):
    monkeypatch.setenv("AGENT_TOKEN", "s3cret")
    body = {
        "query": "{{input}}",
        "history": "{{ messages }}",
        "meta": {"user": "{{user}}", "case": "{{case_id}}", "run": "{{run}}", "greeting": "hi {{user}}!"},
        "fixed": [1, True, None],
    }
    target = template_target(
        app_server["url"], body=body, output="data.answer", headers={"Authorization": "Bearer ${AGENT_TOKEN}"}
    )
    assert list(target.problems()) == []
    history = [Message("user", "first"), Message("assistant", "r"), Message("user", "second")]
    response = await target.respond(history, CTX)
    await target.aclose()
    assert response.content == "ok"
    request = app_server["requests"][-1]
    assert request["json"] == {
        "query": "second",
        "history": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "r"},
            {"role": "user", "content": "second"},
        ],
        "meta": {"user": "ann", "case": "case-7", "run": 1, "greeting": "hi ann!"},
        "fixed": [1, True, None],
    }
    assert request["headers"]["Authorization"] == "Bearer s3cret"


async def test_template_tool_calls_and_structured_output(app_server):
    app_server["reply"] = {
        "result": {"text": {"a": 1}},
        "steps": [
            {"tool": "search", "args": '{"q": "x"}'},
            {"tool": "lookup", "args": {"id": 3}},
        ],
    }
    target = template_target(
        app_server["url"],
        body={"q": "{{input}}"},
        output="result.text",
        tool_calls="steps[].{name: tool, arguments: args}",
    )
    response = await target.respond(user("go"), CTX)
    await target.aclose()
    assert response.content == {"a": 1}
    assert [(t.name, t.arguments) for t in response.tool_calls] == [("search", {"q": "x"}), ("lookup", {"id": 3})]


async def test_template_reports_tools_only_with_a_tool_calls_path(app_server):
    """Without a path the reply's calls are unknown (a tool assertion is an error); with one that
    finds nothing, none was called; a call's status and step are read when the reply has them."""
    app_server["reply"] = {"data": {"answer": "ok"}, "steps": [{"tool": "pay", "ok": "error", "n": 2}]}
    plain = template_target(app_server["url"], body={"q": "{{input}}"}, output="data.answer")
    assert not (await plain.respond(user("go"), CTX)).tools_reported
    await plain.aclose()
    empty = template_target(app_server["url"], body={"q": "{{input}}"}, output="data.answer", tool_calls="nothing[]")
    response = await empty.respond(user("go"), CTX)
    await empty.aclose()
    assert response.tools_reported and response.tool_calls == []
    path = "steps[].{name: tool, status: ok, step: n}"
    target = template_target(app_server["url"], body={"q": "{{input}}"}, output="data.answer", tool_calls=path)
    [call] = (await target.respond(user("go"), CTX)).tool_calls
    assert (call.name, call.status, call.step) == ("pay", "error", 2)
    app_server["reply"]["steps"][0]["ok"] = "failed"
    with pytest.raises(TargetError, match="tool call 'pay' has status 'failed': a status is 'ok' or 'error'"):
        await target.respond(user("go"), CTX)
    await target.aclose()


async def test_openai_reply_without_tool_calls_reports_none(llm, openai_target):
    llm.script({"content": "hi"})
    response = await openai_target.respond(user("q"), CTX)
    assert response.tools_reported and response.tool_calls == []


async def test_template_output_that_finds_nothing_is_an_error(app_server):
    target = template_target(app_server["url"], body={"q": "{{input}}"}, output="data.missing")
    with pytest.raises(TargetError, match=r"output expression 'data\.missing' found nothing"):
        await target.respond(user("go"), CTX)
    await target.aclose()


async def test_template_without_output_returns_the_whole_reply(app_server):
    target = template_target(app_server["url"], body={"q": "{{input}}"})
    assert (await target.respond(user("go"), CTX)).content == {"data": {"answer": "ok"}}
    await target.aclose()


def test_compile_template_shares_constants_and_fills_placeholders():
    fill = compile_template({"a": "{{input}}", "b": ["x", "{{messages}}"], "c": "n={{run}}"})
    values = {"input": "hi", "messages": [{"role": "user"}], "run": 2}
    assert fill(values.__getitem__) == {"a": "hi", "b": ["x", [{"role": "user"}]], "c": "n=2"}


# -- problems ---------------------------------------------------------------------------------


def test_missing_env_var_is_a_problem_that_names_it(monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    config = {"url": "http://127.0.0.1:9/${NO_SUCH_TOKEN}", "headers": {"X-Key": "${NO_SUCH_TOKEN}"}}
    target = HttpTarget({"type": "http", **config}, Path("."))
    problem = "environment variable NO_SUCH_TOKEN is not set"
    assert list(target.problems()) == [("url", problem), ("headers.X-Key", problem)]


def test_problems_in_config():
    target = template_target("ftp://x", output="a[", body={"q": "{{inptu}}"})
    problems = dict(target.problems())
    assert "url must start with http://" in problems["url"]
    assert problems["body"].startswith("unknown placeholder {{inptu}} (known: input, messages")
    assert "invalid JMESPath 'a['" in problems["output"]
    assert dict(template_target("http://x").problems()) == {"body": "format: template needs a body"}
    openai = HttpTarget({"type": "http", "url": "http://x", "output": "a"}, Path("."))
    assert dict(openai.problems()) == {"output": "output applies to format: template only"}


def test_request_body_is_plain_json():
    target = HttpTarget({"type": "http", "url": "http://x", "body": {"temperature": 0}}, Path("."))
    body = target.request_body(user("hi"), CTX)
    assert json.loads(json.dumps(body)) == {"temperature": 0, "messages": [{"role": "user", "content": "hi"}]}


def test_a_malformed_url_is_a_problem_not_a_crash():
    target = HttpTarget({"type": "http", "url": "http://[::1/x"}, Path("."))
    assert ("url", "invalid url 'http://[::1/x': Invalid IPv6 URL") in list(target.problems())
