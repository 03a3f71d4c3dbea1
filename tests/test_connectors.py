"""Connectors (V1's ``-c openai.gpt4`` and a case's ``options.connector``): mapped to litellm models
by specrun.yaml, honoured per case wherever ``-c`` applies, and rejected when nothing would use them.

End to end through the CLI, against the loopback model server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer

from specrun._run.session import RunRequest, RunSession
from specrun._run.settings import RunOptions

CASES = [
    {"id": "T1", "input": "hello"},
    {"id": "T2", "input": "hi", "options": {"connector": "deepseek.v3"}},
    {"id": "T3", "input": "yo", "options": {"connector": "openai/raw-name"}},
]


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def make_project(root: Path, server: LLMServer, cases: list[dict]) -> Path:
    (root / "specrun.yaml").write_text(
        "connectors:\n  deepseek.v3: openai/deepseek-chat\n  openai.gpt4: openai/gpt-4\n"
    )
    agent = root / "chat"
    (agent / "tests").mkdir(parents=True)
    (agent / "agent.yaml").write_text(
        "target:\n  type: litellm\n  model: openai/default-model\n"
        f"  params: {{api_base: '{server.base_url}', api_key: test}}\n"
    )
    (agent / "tests" / "inputs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def models_asked(server: LLMServer) -> dict[str, str]:
    """The model each case's message was sent to, by the message."""
    return {body["messages"][-1]["content"]: body["model"] for body in server.requests}


def test_a_cases_connector_picks_its_model_through_the_projects_map(server, tmp_path):
    root = make_project(tmp_path, server, CASES)
    done = run_cli(["-i", "chat/tests/inputs.jsonl", "-o", "out.jsonl"], root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert models_asked(server) == {"hello": "default-model", "hi": "deepseek-chat", "yo": "raw-name"}


def test_dash_c_takes_a_v1_connector_id_and_wins_over_the_cases(server, tmp_path):
    root = make_project(tmp_path, server, CASES)
    done = run_cli(["-i", "chat/tests/inputs.jsonl", "-c", "openai.gpt4", "-o", "out.jsonl"], root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(models_asked(server).values()) == {"gpt-4"}
    assert "openai.gpt4" in done.stdout  # the header names the connector as given


def test_a_connector_nothing_would_use_is_rejected_at_its_line(server, tmp_path):
    root = make_project(tmp_path, server, [{"id": "P1", "input": "hi"}])
    (root / "py").mkdir()
    (root / "py" / "agent.yaml").write_text("target: python:py_agent:respond\n")
    (root / "py" / "py_agent.py").write_text("def respond(messages, ctx):\n    return 'ok'\n")
    lines = [{"id": "P1", "input": "hi"}, {"id": "P2", "input": "hi", "options": {"connector": "deepseek.v3"}}]
    (root / "py" / "inputs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    done = run_cli(["-i", "py/inputs.jsonl", "-o", "out.jsonl"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "py/inputs.jsonl:2" in done.stderr and "connector 'deepseek.v3' would not be used" in done.stderr
    assert "Traceback" not in done.stderr and server.requests == []
    done = run_cli(["-i", "py/inputs.jsonl", "-c", "deepseek.v3", "-o", "out.jsonl"], root)
    assert done.returncode == 2 and "no agent in this run has a model to replace" in done.stderr


def test_the_connectors_map_is_checked_by_the_config_schema(server, tmp_path):
    root = make_project(tmp_path, server, CASES)
    (root / "specrun.yaml").write_text("connectors:\n  deepseek.v3: 3\n")
    done = run_cli(["-i", "chat/tests/inputs.jsonl", "-o", "out.jsonl"], root)
    assert done.returncode == 2 and "specrun.yaml:2" in done.stderr and "connectors" in done.stderr


@pytest.mark.parametrize(("connector", "imports_litellm"), [("openai.gpt4", False), ("deepseek.v3", True)])
def test_dash_c_preloads_litellm_only_when_its_mapped_model_needs_it(
    server, tmp_path, monkeypatch, connector, imports_litellm
):
    """-c's model is the one its connector maps to, sent with the target's params (its api_base
    and key): openai/gpt-4 on the loopback server takes the direct route, deepseek-chat (priced
    by litellm as DeepSeek's) goes through litellm."""
    root = make_project(tmp_path, server, CASES[:1])
    monkeypatch.chdir(root)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = RunSession(RunRequest(inputs=["chat/tests/inputs.jsonl"], options=RunOptions(connector=connector)))
    asyncio.run(session.load())
    session.plan()
    assert session.models is not None
    assert session.models.needs_litellm(session.model_uses()) is imports_litellm
