"""The pairwise judge of a matrix run, over real HTTP to the loopback judge: both orders, a win
only when they agree, wins/ties/losses with intervals in the summary, the console and the reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer, data_section

BOTS = """
def good(messages, ctx):
    return "Lyon" if "trick" in messages[-1].content else "Paris"

def bad(messages, ctx):
    return "Paris" if "trick" in messages[-1].content else "Lyon"
"""

SUITE = """
pairwise: {criteria: Names the capital of France}
cases:
  - {id: plain, input: Capital of France?, assertions: [{type: contains, value: a}]}
  - {id: trick, input: Capital of France (trick)?, assertions: [{type: contains, value: a}]}
  - {id: biased, input: Capital of France (biased)?, assertions: [{type: contains, value: a}]}
  - {id: garbled, input: Capital of France (garbled)?, assertions: [{type: contains, value: a}]}
"""


def judge(body: dict) -> dict:
    """Picks the response that names Paris; for `biased` always the first shown (a position bias),
    for `garbled` replies prose."""
    data, _ = data_section(body["messages"][1]["content"])
    question = data["conversation"][-1]["content"]
    if "garbled" in question:
        return {"content": "Both are fine, really."}
    if "biased" in question:
        return {"content": {"winner": "1", "reason": "the first one"}}
    winner = "1" if "Paris" in str(data["response_1"]) else "2"
    return {"content": {"winner": winner, "reason": f"response {winner} names Paris"}}


@pytest.fixture(scope="module")
def server():
    with LLMServer(responder=judge) as srv:
        yield srv


def make_project(tmp_path: Path, server: LLMServer, suite: str = SUITE) -> None:
    (tmp_path / "specrun.yaml").write_text(
        f"model: openai/gpt-4o-mini\nmodel_params: {{api_base: '{server.base_url}', api_key: k}}\n"
    )
    for name in ("good", "bad"):
        folder = tmp_path / "agents" / name
        folder.mkdir(parents=True)
        (folder / f"pw_{name}.py").write_text(BOTS)
        (folder / "agent.yaml").write_text(f"id: {name}\ntarget: python:pw_{name}:{name}\n")
    (tmp_path / "suite.yaml").write_text(suite)


def test_both_orders_a_win_only_when_they_agree_and_the_tally_everywhere(tmp_path, server):
    make_project(tmp_path, server)
    server.requests.clear()
    outputs = ["-o", "out.jsonl", "-o", "out.json", "-o", "out.md", "-o", "out.html"]
    proc = run_cli(["suite.yaml", "-n", "good", "-n", "bad", *outputs], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # Lyon has no "a": the pairwise judge changes no verdict
    assert len(server.requests) == 3 * 2 + 2 * 2  # two orders per case; garbled's asked once more in each
    shown = {}
    for body in server.requests:
        data, _ = data_section(body["messages"][1]["content"])
        shown.setdefault(data["conversation"][-1]["content"], set()).add((data["response_1"], data["response_2"]))
    assert shown["Capital of France?"] == {("Paris", "Lyon"), ("Lyon", "Paris")}  # each agent shown first once

    summary = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-1])
    (pair,) = summary["pairwise"]["pairs"]
    assert pair["agents"] == ["bad", "good"]
    assert (pair["wins"], pair["ties"], pair["losses"], pair["undecided"]) == (1, 1, 1, 1)
    assert pair["win_rate"] == 33.3 and pair["win_rate_ci"] == [6.1, 79.2] == pair["loss_rate_ci"]
    by_case = {c["id"]: c for c in pair["comparisons"]}
    assert by_case["plain"]["winner"] == "good" and by_case["trick"]["winner"] == "bad"
    assert by_case["biased"]["winner"] == "tie" and sorted(by_case["biased"]["orders"]) == ["bad", "good"]
    assert by_case["garbled"]["winner"] is None and "unusable twice" in by_case["garbled"]["reason"]

    line = (
        "bad vs good: bad won 1, tied 1, lost 1 of 3 compared (bad wins 33.3%, 95% CI 6.1–79.2%; "
        "good wins 33.3%, 95% CI 6.1–79.2%); 1 undecided: "
    )
    assert line in proc.stdout and " Pairwise (a win counts when both orders agree)" in proc.stdout
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["pairwise"] == summary["pairwise"]
    assert "## Pairwise" in (tmp_path / "out.md").read_text()
    assert '<section id="pairwise">' in (tmp_path / "out.html").read_text()


def test_one_agent_asks_no_pairwise_judge(tmp_path, server):
    make_project(tmp_path, server)
    server.requests.clear()
    proc = run_cli(["suite.yaml", "-n", "good", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # good says Lyon to the trick question
    assert not server.requests and "pairwise" not in json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-1])


def test_pairwise_needs_criteria(tmp_path, server):
    make_project(tmp_path, server, "pairwise: {model: m}\ncases: [{id: a, input: hi}]\n")
    proc = run_cli(["validate", "suite.yaml"], tmp_path)
    assert proc.returncode == 2 and "suite.yaml:1:" in proc.stderr and "criteria" in proc.stderr
