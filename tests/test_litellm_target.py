"""The litellm target over HTTP against the loopback model server: tool loop, images, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.llm_server import LLMServer

from specrun._core.data import Context, Message
from specrun._core.errors import TargetError
from specrun._models.targets.litellm import LitellmTarget

# Its tests import litellm in the test process: tests/conftest.py starts that import early.
IMPORTS_LITELLM = True

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

TOOL_MODULE = """
calls = []

def get_weather(city):
    calls.append(city)
    return {"city": city, "sky": "sunny"}

async def get_time(zone):
    return "12:00 " + zone

def broken(**kwargs):
    raise RuntimeError("database down")
"""


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def target_for(server: LLMServer, base_dir: Path, **config) -> LitellmTarget:
    settings = {
        "type": "litellm",
        "model": "openai/gpt-4o-mini",
        "params": {"api_base": server.base_url, "api_key": "test-key"},
        **config,
    }
    return LitellmTarget(settings, base_dir)


def ask(text: str) -> list[Message]:
    return [Message("user", text)]


@pytest.fixture
def tools(tmp_path: Path) -> tuple[Path, str]:
    """A tools module next to the agent, named uniquely (modules import under their own name)."""
    name = f"weather_tools_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(TOOL_MODULE)
    return tmp_path, name


async def test_plain_answer_with_system_prompt_usage_and_latency(server, tmp_path):
    target = target_for(server, tmp_path, system="You are terse.")
    response = await target.respond(ask("Hi"), Context("c1"))
    assert response.content == "echo: Hi" and response.tool_calls == []
    assert response.usage.total_tokens == 15 and response.usage.cost > 0 and response.latency_ms > 0
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "You are terse."}
    assert "temperature" not in server.requests[0]  # the agent's own default, not the judges' 0
    await target.aclose()


async def test_the_tool_loop_runs_tools_and_returns_the_final_text(server, tools):
    tools_dir, module = tools
    server.script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"content": "It is sunny in Paris."},
    )
    target = target_for(server, tools_dir, tools=TOOLS, tool_impls={"get_weather": f"{module}:get_weather"})
    response = await target.respond(ask("Weather in Paris?"), Context("c1"))
    assert response.content == "It is sunny in Paris."
    [call] = response.tool_calls
    assert (call.name, call.arguments, call.result) == (
        "get_weather",
        {"city": "Paris"},
        {"city": "Paris", "sky": "sunny"},
    )
    assert response.usage.total_tokens == 30
    assert server.requests[0]["tools"] == TOOLS
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["id"] == "call_0"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(call.result)}


async def test_async_tools_and_tool_errors_are_answered_to_the_model(server, tools):
    tools_dir, module = tools
    server.script(
        {
            "tool_calls": [
                {"name": "get_time", "arguments": {"zone": "CET"}},
                {"name": "broken", "arguments": {}},
                {"name": "teleport", "arguments": {}},
            ]
        },
        {"content": "done"},
    )
    impls = {"get_time": f"{module}:get_time", "broken": f"{module}.broken"}
    target = target_for(server, tools_dir, tool_impls=impls)
    response = await target.respond(ask("go"), Context("c1"))
    results = [c.result for c in response.tool_calls]
    assert results[0] == "12:00 CET"
    assert results[1] == {"error": "RuntimeError: database down"}
    assert "unknown tool 'teleport'" in results[2]["error"]
    assert [m["role"] for m in server.requests[1]["messages"][-3:]] == ["tool", "tool", "tool"]
    # One model response: its three calls were made in parallel (step 1); failures say so.
    assert [(c.step, c.status) for c in response.tool_calls] == [(1, "ok"), (1, "error"), (1, "error")]


async def test_the_tool_loop_numbers_its_model_steps(server, tools):
    tools_dir, module = tools
    weather = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    server.script({"tool_calls": [weather]}, {"tool_calls": [weather, weather]}, {"content": "sunny"})
    target = target_for(server, tools_dir, tool_impls={"get_weather": f"{module}:get_weather"})
    response = await target.respond(ask("go"), Context("c1"))
    assert [(c.step, c.status) for c in response.tool_calls] == [(1, "ok"), (2, "ok"), (2, "ok")]


async def test_without_tool_impls_the_requested_calls_are_the_answer(server, tmp_path):
    server.script({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})
    response = await target_for(server, tmp_path, tools=TOOLS).respond(ask("Oslo?"), Context("c1"))
    assert [(c.name, c.arguments, c.result) for c in response.tool_calls] == [("get_weather", {"city": "Oslo"}, None)]
    assert len(server.requests) == 1


async def test_a_model_that_never_stops_calling_tools_is_a_target_error(server, tools):
    tools_dir, module = tools
    server.script(*[{"tool_calls": [{"name": "get_weather", "arguments": {"city": "X"}}]}] * 2)
    target = target_for(server, tools_dir, tool_impls={"get_weather": f"{module}:get_weather"}, max_steps=2)
    with pytest.raises(TargetError, match=r"max_steps \(2\)"):
        await target.respond(ask("loop"), Context("c1"))
    assert len(server.requests) == 2


async def test_images_are_sent_as_data_urls(server, tmp_path):
    image = tmp_path / "receipt.jpg"
    image.write_bytes(b"\xff\xd8\xff")
    parts = [
        {"type": "text", "text": "What's in this receipt?"},
        {"type": "image", "source": "file://receipt.jpg", "path": str(image), "mime": "image/jpeg"},
    ]
    await target_for(server, tmp_path).respond([Message("user", parts)], Context("c1"))
    content = server.requests[0]["messages"][0]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}


async def test_model_failures_are_target_errors_after_retries(server, tmp_path):
    server.script({"status": 429, "headers": {"retry-after": "0"}}, {"status": 500})
    target = target_for(server, tmp_path, retries=1)
    with pytest.raises(TargetError, match="after 2 attempts: HTTP 500"):
        await target.respond(ask("Hi"), Context("c1"))
    assert len(server.requests) == 2


async def test_a_timeout_is_a_target_error(server, tmp_path):
    server.script({"hang": True})
    target = target_for(server, tmp_path, timeout="100ms", retries=0)
    with pytest.raises(TargetError, match=r"timed out after 0.1s"):
        await target.respond(ask("Hi"), Context("c1"))


async def test_targets_never_use_the_cache(server, tmp_path):
    target = target_for(server, tmp_path)
    await target.respond(ask("Hi"), Context("c1"))
    await target.respond(ask("Hi"), Context("c1"))
    assert len(server.requests) == 2


def test_problems_name_a_missing_model_and_missing_tool_modules(tmp_path):
    target = LitellmTarget({"type": "litellm", "tool_impls": {"t": "nowhere:func"}, "timeout": "soon"}, tmp_path)
    fields = dict(target.problems())
    assert "-c MODEL" in fields["model"] and "invalid duration" in fields["timeout"]
    assert "cannot find module 'nowhere'" in fields["tool_impls"]
