"""The Python test API as the seeds use it: Agent Kernel's settings (``AK_TEST__*``), the judge
client's lifetime over a session's event loop, specrun.yaml's model settings, and V2's
validator call from code (``t.assert.Agent``).

Judged over HTTP by the loopback model server; validator agents are real project agents.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import pytest
from support.llm_server import LLMServer, data_section

from specrun._core.errors import EvaluationError, UsageError
from specrun.testing import Mode, Test, load_config
from specrun.testing.config import AliasWarning

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "pytest" / "demo.py"
QUESTION = "Who won the 1996 cricket world cup?"


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch, tmp_path):
    """No test-config.yaml, SPECRUN_TEST__*/AK_TEST__* or model variables leak in from outside."""
    for name in list(os.environ):
        if name.startswith(("SPECRUN_TEST", "AK_TEST", "OPENAI_")) or name == "SPECRUN_MODEL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def judge_rule(body):
    """Scores 0.9 when the judged answer names Sri Lanka or India, else 0.1."""
    material = data_section(body["messages"][-1]["content"])[0]
    actual = str(material.get("answer", material.get("response"))).lower()  # compare's, or a validator's
    score = 0.9 if "sri lanka" in actual or "india" in actual else 0.1
    return {"content": json.dumps({"score": score, "reason": f"judged {score}"})}


@pytest.fixture
def judge_server():
    with LLMServer(responder=judge_rule) as server:
        yield server


def use_server(monkeypatch, server):
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")


# -- the judge client lives as long as the event loop's users ---------------------------------


async def test_two_llm_expects_in_one_event_loop_both_reach_the_judge(judge_server, monkeypatch):
    """The seed's session fixture: the second expect() used to fail with "client has been closed"."""
    use_server(monkeypatch, judge_server)
    monkeypatch.setenv("SPECRUN_TEST__LLM__MODEL", "openai/gpt-4o-mini")
    test = Test(str(DEMO), mode=Mode.LLM)
    await test.start()
    try:
        await test.send(QUESTION)
        assert (await test.expect(["Sri Lanka won the 1996 cricket world cup."]))[1] == 0.9
        await test.send("Which country hosted the tournament?")
        assert (await test.expect(["Co-hosted by India, Pakistan and Sri Lanka."]))[1] == 0.9
        Test.compare(test.last_agent_response, ["India"], mode=Mode.LLM)  # a worker thread's own loop
        await test.send(QUESTION)
        assert (await test.expect("Sri Lanka"))[0]  # the session loop's client survived it
    finally:
        await test.stop()
    assert len(judge_server.requests) == 4
    # and after stop() the loop can still judge (new clients are opened)
    assert (await Test.acompare("Sri Lanka", "Sri Lanka won", mode=Mode.LLM))[0]


# -- Agent Kernel's settings names ------------------------------------------------------------


def test_ak_test_variables_are_aliases_said_once_and_specrun_names_win(judge_server, monkeypatch, recwarn):
    monkeypatch.setenv("AK_TEST__MODE", "score")
    assert load_config().mode == "score" and load_config().origin["mode"] == "env"
    with pytest.raises(AssertionError, match="mode score"):
        Test.compare("Sri Lanka took it", "Sri Lanka won")  # score mode: no judge, no match
    said = [str(w.message) for w in recwarn if issubclass(w.category, AliasWarning)]
    assert said == ["AK_TEST__MODE is read as SPECRUN_TEST__MODE (Agent Kernel's name for the setting)"]
    monkeypatch.setenv("SPECRUN_TEST__MODE", "llm")
    assert load_config().mode == "llm"
    monkeypatch.setenv("AK_TEST__LLM__MODEL", "gpt-4o-mini")
    monkeypatch.setenv("AK_TEST__LLM__PROVIDER", "openai")
    monkeypatch.setenv("AK_TEST__LLM__API_BASE", judge_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    assert Test.compare("Sri Lanka", "Sri Lanka won")[1] == 0.9  # judged at the aliased api_base
    assert judge_server.requests[-1]["model"] == "gpt-4o-mini"
    monkeypatch.setenv("AK_TEST__MODEE", "llm")
    with pytest.raises(UsageError, match="AK_TEST__MODEE: unknown test setting"):
        load_config()


def test_the_ak_config_path_override_names_the_file_and_env_beats_file(tmp_path, monkeypatch):
    other = tmp_path / "conf" / "ak.yaml"
    other.parent.mkdir()
    other.write_text("mode: llm\nthreshold: 0.3\n")
    monkeypatch.setenv("AK_TEST_CONFIG_PATH_OVERRIDE", str(other))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AliasWarning)
        config = load_config()
        assert (config.path, config.mode, config.threshold) == (other, "llm", 0.3)
        monkeypatch.setenv("AK_TEST__MODE", "score")  # the seed's precedence: environment over file
        assert load_config().mode == "score"
        monkeypatch.setenv("AK_TEST_CONFIG_PATH_OVERRIDE", str(tmp_path / "missing.yaml"))
        with pytest.raises(UsageError, match=r"AK_TEST_CONFIG_PATH_OVERRIDE=.*no such file"):
            load_config()


def test_llm_api_base_in_test_config_reaches_the_judge(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    (tmp_path / "test-config.yaml").write_text(
        f"mode: llm\nllm:\n  model: gpt-4o-mini\n  provider: openai\n  api_base: {judge_server.base_url}\n"
    )
    assert Test.compare("Sri Lanka", "Sri Lanka won")[1] == 0.9
    assert len(judge_server.requests) == 1


# -- inside a specrun project -----------------------------------------------------------------


def test_inside_a_project_the_judge_is_specrun_yamls_unless_test_config_says_otherwise(
    judge_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    (tmp_path / "specrun.yaml").write_text(
        f"model: openai/project-default\njudge_model: openai/project-judge\n"
        f"model_params: {{api_base: '{judge_server.base_url}'}}\ncompare_mode: llm\n"
    )
    tests = tmp_path / "tests"
    tests.mkdir()
    monkeypatch.chdir(tests)  # pytest runs from a folder below the project root
    assert Test.compare("Sri Lanka", "Sri Lanka won")[1] == 0.9  # llm mode and judge from specrun.yaml
    assert judge_server.requests[-1]["model"] == "project-judge"
    (tests / "test-config.yaml").write_text("llm: {model: gpt-4o-mini, provider: openai}\nmode: fallback\n")
    assert Test.compare("Sri Lanka won it", "Sri Lanka won")[0]
    assert judge_server.requests[-1]["model"] == "gpt-4o-mini"  # test-config.yaml overrides the model
    assert load_config().origin["mode"] == "file"


# -- V2's t.assert.Agent from Python ----------------------------------------------------------

VALIDATOR = """
SEEN = []


def respond(messages, ctx):
    meta = ctx.options["metadata"]
    SEEN.append(meta)
    asks = "confirm" in str(meta["output"]).lower()
    return {"passed": asks, "score": 0.9 if asks else 0.2, "reason": "asks to confirm" if asks else "no confirmation"}
"""


@pytest.fixture
def validator_project(tmp_path):
    folder = tmp_path / "workers" / "test" / "validator"
    folder.mkdir(parents=True)
    (tmp_path / "specrun.yaml").write_text("timeout: 30s\n")
    (folder / "agent.yaml").write_text("target: python:seed_validator:respond\n")
    (folder / "seed_validator.py").write_text(VALIDATOR)
    yield tmp_path
    sys.modules.pop("seed_validator", None)


async def test_a_validator_agent_judges_a_response_from_python_as_v2s_assert_agent(validator_project):
    messages = [
        {"role": "user", "content": "I want to submit an expense"},
        {"role": "assistant", "content": "What type of expense?"},
        {"role": "user", "content": "Travel, $500"},
    ]
    options = {
        "metadata": {
            "criteria": "Response should ask for confirmation before creating expense",
            "conversation": messages,
        }
    }
    passed, score, reason = Test.assert_agent(
        "I'll file $500 travel. Please confirm.", "workers.test.validator", options
    )
    assert (passed, score, reason) == (True, 0.9, "asks to confirm")
    seen = sys.modules["seed_validator"].SEEN[-1]
    assert seen["test_mode"] == "validator" and seen["criteria"].startswith("Response should ask")
    assert seen["input"][-1] == {"role": "user", "content": "Travel, $500"}  # the conversation judged
    with pytest.raises(AssertionError, match=r"rejected the response: no confirmation\n  received: 'Filed.'"):
        await Test.aassert_agent("Filed.", "agents:workers.test.validator", options)
    with pytest.raises(UsageError, match=r"unknown agent 'workers.test.nope'.*workers.test.validator"):
        Test.assert_agent("Filed.", "workers.test.nope", options)


def test_the_built_in_validator_judges_criteria_with_the_configured_model(judge_server, tmp_path, monkeypatch):
    use_server(monkeypatch, judge_server)
    options = {"metadata": {"criteria": "Names the 1996 winner"}}
    with pytest.raises(EvaluationError, match="needs a judge model"):
        Test.assert_agent("Sri Lanka", None, options)
    monkeypatch.setenv("SPECRUN_TEST__LLM__MODEL", "openai/gpt-4o-mini")
    assert Test.assert_agent("Sri Lanka", None, options, user_input=QUESTION)[1] == 0.9
    with pytest.raises(AssertionError, match="the built-in validator rejected the response"):
        Test.assert_agent("Australia", None, options)
    with pytest.raises(UsageError, match=r"needs options\.metadata\.criteria"):
        Test.assert_agent("Sri Lanka", None, {})
