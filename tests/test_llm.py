"""specrun._models.client against the loopback OpenAI-compatible server, through litellm for real."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.llm_server import LLMServer

from specrun._core.data import Message
from specrun._core.errors import EvaluationError
from specrun._core.redact import redact
from specrun._judges.judging import parse_verdict
from specrun._models.cache import DiskCache
from specrun._models.client import ModelClient, ModelError
from specrun._models.litellm_route import error_retry_after
from specrun._models.wire import openai_messages

# Its tests import litellm in the test process: tests/conftest.py starts that import early.
IMPORTS_LITELLM = True

MODEL = "openai/gpt-4o-mini"
USER = [{"role": "user", "content": "Is the sky blue?"}]
# gpt-4o-mini at the server's default usage (10 prompt, 5 completion tokens), offline cost map
COST = 10 * 0.15e-6 + 5 * 0.6e-6


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def client_for(server: LLMServer, tmp_path: Path | None = None, **kwargs) -> ModelClient:
    settings = {"params": {"api_base": server.base_url, "api_key": "test-key"}, "base_delay": 0.01}
    settings.update(kwargs)
    cache_dir = tmp_path / "cache" if tmp_path is not None else None
    return ModelClient(MODEL, cache_dir=cache_dir, **settings)


# -- import discipline ------------------------------------------------------------------------


def _python(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_specrun_and_its_plugins_import_without_litellm():
    code = (
        "import sys\n"
        "import specrun, specrun._models.client, specrun._judges.matching, specrun._core.services\n"
        "from specrun._project.plugin_manager import get_plugin_manager\n"
        "registry = get_plugin_manager().registry\n"
        "assert 'llm' in registry.classes('assertion') and 'litellm' in registry.classes('target')\n"
        "print('litellm' in sys.modules)\n"
    )
    assert _python(code) == "False"


def test_the_cli_exits_without_sweeping_what_it_loaded(capsys):
    """What a command leaves (litellm's modules, imported during the run) lives until exit;
    frozen out of the collector's sight, the exit does not sweep it: 1-2 s per run."""
    from specrun.cli.main import main

    left = [[] for _ in range(3)]  # tracked objects alive as main exits
    try:
        with pytest.raises(SystemExit):
            main(["--version"])
        assert gc.get_freeze_count() >= len(left)
        tracked = {id(o) for o in gc.get_objects()}  # the permanent (frozen) generation aside
        assert not any(id(o) in tracked for o in left)
    finally:
        gc.unfreeze()
    assert "specrun" in capsys.readouterr().out


def test_preload_imports_in_the_background_after_setting_safe_defaults(tmp_path):
    # A stand-in litellm records the import's thread and environment; a real import takes
    # seconds and is exercised by every other test here.
    stub = tmp_path / "litellm"
    stub.mkdir()
    (stub / "__init__.py").write_text(
        "import os, threading\n"
        "seen = (threading.current_thread().name, os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'),"
        " os.environ.get('LITELLM_MODE'))\n"
        "suppress_debug_info = False\n"
    )
    code = (
        "import asyncio, specrun._models.litellm_route as m\n"
        "m.preload(); m.preload()\n"
        "lib = asyncio.run(m.load_litellm())\n"
        "print(*lib.seen, lib.suppress_debug_info)\n"
    )
    env = {"PYTHONPATH": f"{stub.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    assert _python(code, **env) == "specrun-litellm-import True PRODUCTION True"
    assert _python(code, LITELLM_MODE="DEV", **env).endswith("True DEV True")


def test_a_litellm_that_fails_to_import_leaves_the_error_to_the_first_call(tmp_path):
    # ready() lets the case start; its first model call then is an error naming the cause
    stub = tmp_path / "litellm"
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('broken install')\n")
    code = (
        "import asyncio, specrun._models.client as m\n"
        "async def main():\n"
        "    client = m.ModelClient('openai/x')\n"
        "    await client.ready()\n"
        "    try:\n"
        "        await client.complete([{'role': 'user', 'content': 'hi'}])\n"
        "    except m.EvaluationError as exc:\n"
        "        print(exc)\n"
        "asyncio.run(main())\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    assert _python(code, **env) == "model calls need litellm, which failed to import: broken install"


# -- calls, usage, cost -----------------------------------------------------------------------


async def test_complete_returns_text_usage_and_cost_and_keeps_run_totals(server):
    client = client_for(server)
    first = await client.complete(USER)
    second = await client.complete(USER, purpose="simulator")
    assert first.text == "echo: Is the sky blue?" and not first.cached
    assert first.usage.prompt_tokens == 10 and first.usage.total_tokens == 15
    assert first.usage.cost == pytest.approx(COST)
    assert client.usage.total_tokens == 30 and client.usage.cost == pytest.approx(2 * COST)
    assert client.summary()["calls"] == 2
    assert second.attempts == 1
    # judges default to temperature 0, other purposes to the model's default
    assert server.requests[0]["temperature"] == 0 and "temperature" not in server.requests[1]
    await client.aclose()


async def test_unknown_model_has_no_cost_but_counts_tokens(server):
    client = client_for(server)
    completion = await client.complete(USER, model="openai/specrun-unpriced-model")
    assert completion.usage.total_tokens == 15 and completion.usage.cost is None
    assert client.usage.cost is None


async def test_json_mode_asks_for_a_json_object(server):
    server.script({"content": '{"ok": true}'})
    await client_for(server).complete(USER, json_mode=True)
    assert server.requests[0]["response_format"] == {"type": "json_object"}


async def test_a_backend_rejecting_json_mode_is_asked_again_without_it(server):
    server.script({"status": 400}, {"content": "{}"})
    completion = await client_for(server, retries=0).complete(USER, json_mode=True)
    assert completion.text == "{}"
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]


async def test_tool_calls_come_back_as_specrun_tool_calls(server):
    server.script({"tool_calls": [{"name": "lookup", "arguments": {"q": "sky"}}]})
    completion = await client_for(server).complete(USER, tools=[{"type": "function", "function": {"name": "lookup"}}])
    assert [(c.name, c.arguments, c.id) for c in completion.tool_calls] == [("lookup", {"q": "sky"}, "call_0")]
    message = completion.assistant_message()
    assert message["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"q": "sky"}'}


# -- retries ----------------------------------------------------------------------------------


async def test_429_waits_for_retry_after_then_succeeds(server):
    server.script({"status": 429, "headers": {"retry-after": "0.1"}}, {"content": "fine"})
    client = client_for(server)
    started = time.perf_counter()
    completion = await client.complete(USER)
    assert time.perf_counter() - started >= 0.1  # the header, not the 10 ms back-off
    assert completion.text == "fine" and completion.attempts == 2
    assert len(server.requests) == 2 and client.retried == 1


async def test_500_is_retried_then_succeeds(server):
    server.script({"status": 500}, {"status": 503}, {"content": "fine"})
    completion = await client_for(server).complete(USER)
    assert completion.text == "fine" and len(server.requests) == 3


async def test_a_hanging_model_times_out_after_the_retries(server):
    server.script({"hang": True}, {"hang": True})
    client = client_for(server, timeout=0.2, retries=1)
    with pytest.raises(EvaluationError, match=r"timed out after 0.2s") as info:
        await client.complete(USER)
    assert isinstance(info.value, ModelError) and info.value.attempts == 2
    assert "after 2 attempts" in str(info.value)
    assert len(server.requests) == 2


async def test_persistent_5xx_gives_up_after_max_retries(server):
    server.script(*[{"status": 500}] * 3)
    with pytest.raises(ModelError, match="after 3 attempts: HTTP 500"):
        await client_for(server, retries=2).complete(USER)
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried_and_never_show_the_key(server):
    server.script({"status": 401})
    secret = "sk-proj-abcdefghijklmnop1234"
    client = client_for(server, params={"api_base": server.base_url, "api_key": secret})
    with pytest.raises(ModelError, match="HTTP 401") as info:
        await client.complete(USER)
    assert len(server.requests) == 1 and info.value.status == 401
    assert secret not in str(info.value)


def test_redact_masks_keys_and_secret_environment_values(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-123456789")
    text = "key sk-abcdefgh12345 token tok-123456789 extra hunter22 Bearer abc.def-ghijkl"
    assert redact(text, ["hunter22"], keys=True) == (
        "key [REDACTED] token [REDACTED:MY_SERVICE_TOKEN] extra [REDACTED] Bearer [REDACTED]"
    )


def test_retry_after_reads_seconds_milliseconds_and_dates():
    class Exc(Exception):
        def __init__(self, headers):
            self.litellm_response_headers = headers

    assert error_retry_after(Exc({"retry-after": "2"})) == 2.0
    assert error_retry_after(Exc({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < error_retry_after(Exc({"retry-after": date})) <= 31
    assert error_retry_after(Exc({})) is None and error_retry_after(Exception()) is None


# -- the cache --------------------------------------------------------------------------------


async def test_the_cache_answers_a_rerun_without_a_request(server, tmp_path):
    client = client_for(server, tmp_path)
    first = await client.complete(USER, version="v1")
    again = await client_for(server, tmp_path).complete(USER, version="v1")
    assert len(server.requests) == 1
    assert again.cached and again.text == first.text and again.usage is None
    files = sorted(f.name for f in (tmp_path / "cache").rglob("*") if f.is_file())
    assert files == [".gitignore", f"{first.key}.json"]  # no temp files left behind


async def test_no_hit_with_the_cache_off_or_for_another_run_prompt_or_purpose(server, tmp_path):
    client = client_for(server, tmp_path)
    await client.complete(USER, run=1)
    await client.complete(USER, run=1, cache=False)
    await client_for(server, tmp_path, no_cache=True).complete(USER, run=1)
    await client.complete(USER, run=2)
    await client.complete(USER, run=1, version="v2")
    await client.complete(USER, run=1, purpose="generator")
    assert len(server.requests) == 6
    await client.complete(USER, run=2)
    assert len(server.requests) == 6 and client.cache_hits == 1


async def test_cache_entries_hold_no_secrets_and_are_readable_json(server, tmp_path):
    client = client_for(server, tmp_path)
    completion = await client.complete(USER)
    entry = (tmp_path / "cache" / completion.key[:2] / f"{completion.key}.json").read_text()
    assert json.loads(entry)["text"] == completion.text and "test-key" not in entry


def test_a_torn_cache_file_is_a_miss(tmp_path):
    cache = DiskCache(tmp_path)
    key = cache.key({"a": 1})
    cache.put(key, {"text": "x"})
    assert cache.get(key)["text"] == "x"
    (tmp_path / key[:2] / f"{key}.json").write_text("{not json")
    assert cache.get(key) is None


# -- JSON replies -----------------------------------------------------------------------------


async def test_complete_json_retries_an_unusable_reply_once(server, tmp_path):
    server.script({"content": "I think it passes."}, {"content": '{"passed": true, "score": 1, "reason": "ok"}'})
    client = client_for(server, tmp_path)
    parsed = await client.complete_json(USER, parse_verdict)
    assert parsed.get().passed and parsed.get().reason == "ok" and parsed.usage.total_tokens == 30
    assert len(server.requests) == 2
    assert "could not be used" in server.requests[1]["messages"][-1]["content"]


async def test_complete_json_gives_up_after_the_second_unusable_reply(server, tmp_path):
    server.script({"content": "prose"}, {"content": "more prose"})
    client = client_for(server, tmp_path)
    parsed = await client.complete_json(USER, parse_verdict)
    assert parsed.value is None and parsed.usage.total_tokens == 30  # what the unusable replies cost
    with pytest.raises(EvaluationError, match=r"unusable twice.*more prose"):
        parsed.get()
    assert len(server.requests) == 2
    assert not [f for f in (tmp_path / "cache").rglob("*.json")]  # garbage is not cached


# -- configuration ----------------------------------------------------------------------------


def test_model_choice_override_purpose_default_then_env(monkeypatch):
    monkeypatch.delenv("SPECRUN_MODEL", raising=False)
    with pytest.raises(EvaluationError, match="SPECRUN_MODEL"):
        ModelClient().model_for("judge")
    monkeypatch.setenv("SPECRUN_MODEL", "openai/env-model")
    assert ModelClient().model_for("judge") == "openai/env-model"
    client = ModelClient("openai/default", models={"judge": "openai/judge", "simulator": None})
    assert client.model_for("judge") == "openai/judge"
    assert client.model_for("simulator") == "openai/default"
    assert client.model_for("judge", "openai/override") == "openai/override"


def test_from_config(tmp_path):
    config = {
        "model": "openai/m",
        "judge_model": "openai/j",
        "cache_dir": "c",
        "retries": 1,
        "model_params": {"max_tokens": 50},
    }
    client = ModelClient.from_config(config, tmp_path)
    assert client.model_for("judge") == "openai/j" and client.retries == 1
    assert client.cache.root == tmp_path / "c" and client.params == {"max_tokens": 50}
    assert ModelClient.from_config({}, tmp_path, no_cache=True).cache is None


def test_attachments_become_openai_parts(tmp_path):
    image = tmp_path / "receipt.png"
    image.write_bytes(b"\x89PNG")
    message = Message(
        "user",
        [
            {"type": "text", "text": "What is it?"},
            {"type": "image", "source": "file://receipt.png", "path": str(image), "mime": "image/png"},
        ],
    )
    [converted] = openai_messages([message])
    assert converted["content"][0] == {"type": "text", "text": "What is it?"}
    assert converted["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
