"""Model-backed runs end to end through the CLI, over real HTTP to the loopback model server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer


def judge(body: dict) -> dict:
    """Pass when the judged output mentions Paris; a target call is answered plainly."""
    prompt = json.dumps(body["messages"])
    if "criteria" in prompt.lower() or "judge" in prompt.lower():
        passed = "Paris" in prompt
        return {"content": json.dumps({"passed": passed, "score": 1.0 if passed else 0.0, "reason": "checked"})}
    return {"content": "The capital of France is Paris."}


@pytest.fixture(scope="module")
def server():
    with LLMServer(responder=judge) as running:
        yield running


def run(tmp_path: Path, server: LLMServer, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
    return run_cli(["suite.yaml", "-o", "out.jsonl", *args], tmp_path, env)


def project(tmp_path: Path) -> None:
    (tmp_path / "specrun.yaml").write_text("model: openai/gpt-4o-mini\n")
    (tmp_path / "agent.yaml").write_text(
        "target:\n  type: litellm\n  model: openai/gpt-4o-mini\n  system: You answer geography questions.\n"
    )
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - id: capital\n"
        "    input: What is the capital of France?\n"
        "    assertions:\n"
        "      - {type: contains, value: Paris}\n"
        "      - {type: llm, criteria: Names the capital of France correctly}\n"
        "      - {type: match, expected: Paris, mode: score, contains: true}\n"
    )


def summary(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-1])


def test_tokens_and_cost_reach_the_summary_and_the_console(tmp_path, server):
    project(tmp_path)
    proc = run(tmp_path, server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    usage = summary(tmp_path)["usage"]
    assert usage["total_tokens"] == 30  # the target's call and the judge's, 15 each
    assert usage["cost"] > 0  # litellm prices gpt-4o-mini offline
    assert "Tokens:" in proc.stdout and "Cost:" in proc.stdout
    assert "test-key-not-secret-123" not in proc.stdout + (tmp_path / "out.jsonl").read_text()


def test_judge_calls_are_cached_per_run_index_and_no_cache_bypasses(tmp_path, server):
    project(tmp_path)
    assert run(tmp_path, server).returncode == 0
    first = len(server.requests)
    assert run(tmp_path, server).returncode == 0
    assert len(server.requests) - first == 1  # the target is called again; the judge is a cache hit
    assert run(tmp_path, server, "--no-cache").returncode == 0
    assert len(server.requests) - first == 3
    assert run(tmp_path, server, "--runs", "2").returncode == 0
    assert len(server.requests) - first == 6  # run 1 judge cached; run 2 is its own namespace
