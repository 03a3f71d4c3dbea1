"""Several agents in one run (``-n a -n b``, ``targets:``): every case against each, an agent x
case matrix in the console and every report, per-agent pass rate, latency and cost."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.cli import run_cli

pytest_plugins = ["pytester"]

BOTS = """
import time

def good(messages, ctx):
    time.sleep(0.05)
    return "Paris is the capital of France"

def bad(messages, ctx):
    return "I think it is Lyon"
"""

CASES = """
cases:
  - id: capital
    input: What is the capital of France?
    assertions: [{type: contains, value: Paris}]
  - id: greeting
    input: Hi
    assertions: [{type: contains, value: "i"}]
"""


def make_project(tmp_path: Path, header: str = "") -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    for name in ("good", "bad"):
        folder = tmp_path / "agents" / name
        folder.mkdir(parents=True)
        (folder / f"{name}_bot.py").write_text(BOTS)
        (folder / "agent.yaml").write_text(f"id: {name}\ntarget: python:{name}_bot:{name}\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(header + CASES)
    return suite


def results(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in lines if r["type"] == "result"]


def check_reports(tmp_path: Path) -> None:
    stream = results(tmp_path / "out.jsonl")
    assert sorted((r["id"], r["agent"], r["status"]) for r in stream) == [
        ("capital", "bad", "failed"),
        ("capital", "good", "passed"),
        ("greeting", "bad", "passed"),
        ("greeting", "good", "passed"),
    ]
    report = json.loads((tmp_path / "out.json").read_text())
    agents = report["summary"]["agents"]
    assert agents["good"]["pass_rate"] == 100.0 and agents["bad"]["pass_rate"] == 50.0
    assert agents["good"]["pass_rate_ci"] == [34.2, 100.0] and agents["bad"]["pass_rate_ci"] == [9.5, 90.5]  # of 2
    assert agents["good"]["avg_duration_ms"] > agents["bad"]["avg_duration_ms"]  # the good bot sleeps 50 ms
    assert report["matrix"]["agents"] == ["bad", "good"]
    capital = next(c for c in report["matrix"]["cases"] if c["id"] == "capital")
    assert capital["agents"] == {"good": "passed", "bad": "failed"}
    md = (tmp_path / "out.md").read_text()
    assert "## Agents" in md and "| Case | bad | good |" in md and "| capital | ❌ 0.0% | ✅ 100.0% |" in md
    assert "| bad | 2 | 1 | 1 | 0 | 50.0% | 9.5–90.5% |" in md
    html = (tmp_path / "out.html").read_text()
    assert '<section id="matrix">' in html and "<th>bad</th><th>good</th>" in html
    names = [el.get("name") for el in ET.parse(tmp_path / "out.xml").iter("testcase")]
    assert sorted(names) == ["capital [bad]", "capital [good]", "greeting [bad]", "greeting [good]"]


OUTPUTS = ["-o", "out.jsonl", "-o", "out.json", "-o", "out.md", "-o", "out.html", "-o", "out.xml"]


def test_repeated_n_runs_every_case_against_each_agent(tmp_path):
    make_project(tmp_path)
    proc = run_cli(["suite.yaml", "-n", "good", "-n", "bad", *OUTPUTS], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # bad fails one case
    out = proc.stdout
    assert "[capital] @bad" in out and "[capital] @good" in out
    matrix = out[out.index(" Agents") :]
    assert "case" in matrix and "bad" in matrix and "good" in matrix
    assert [line.split()[-2:] for line in matrix.splitlines() if line.strip().startswith("capital")] == [["✗", "✓"]]
    assert "50.0%" in matrix and "100.0%" in matrix
    assert [line.split()[-2:] for line in matrix.splitlines() if "95% CI" in line] == [["9.5–90.5%", "34.2–100.0%"]]
    check_reports(tmp_path)


def test_targets_in_a_suite_run_every_case_against_each(tmp_path):
    make_project(tmp_path, "targets: [good, bad]\n")
    proc = run_cli(["suite.yaml", *OUTPUTS], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    check_reports(tmp_path)


def test_one_agent_has_no_matrix(tmp_path):
    make_project(tmp_path, "target: good\n")
    proc = run_cli(["suite.yaml", "-o", "out.jsonl", "-o", "out.json", "-o", "out.md"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " Agents" not in proc.stdout
    assert all(r["agent"] == "good" for r in results(tmp_path / "out.jsonl"))  # results still say which
    report = json.loads((tmp_path / "out.json").read_text())
    assert "agents" not in report["summary"] and "matrix" not in report
    assert "## Agents" not in (tmp_path / "out.md").read_text()


def test_target_and_targets_together_is_bad_input(tmp_path):
    make_project(tmp_path, "target: good\ntargets: [good, bad]\n")
    proc = run_cli(["suite.yaml"], tmp_path)
    assert proc.returncode == 2
    assert "suite.yaml:2:1: give 'target' or 'targets', not both" in proc.stderr


def test_unknown_agent_in_targets_points_at_it(tmp_path):
    make_project(tmp_path, "targets: [good, nobody]\n")
    proc = run_cli(["suite.yaml"], tmp_path)
    assert proc.returncode == 2
    assert "suite.yaml:1:" in proc.stderr and "unknown agent 'nobody'" in proc.stderr
    assert "targets.1" in proc.stderr


def test_history_records_each_agent_of_a_case(tmp_path):
    from specrun._history.store import History

    make_project(tmp_path, "targets: [good, bad]\n")
    assert run_cli(["suite.yaml", "-o", "out.jsonl"], tmp_path).returncode == 1
    history = History.open(tmp_path, {})
    try:
        rows = history.cases(history.runs(1)[0]["id"])
    finally:
        history.close()
    assert sorted((r["case_id"], r["agent"], r["status"]) for r in rows) == [
        ("capital", "bad", "failed"),
        ("capital", "good", "passed"),
        ("greeting", "bad", "passed"),
        ("greeting", "good", "passed"),
    ]


def test_cases_with_agents_of_their_own_make_no_matrix(tmp_path):
    make_project(tmp_path)
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - {id: capital, target: good, input: What is the capital?, assertions: [{type: contains, value: Paris}]}\n"
        "  - {id: greeting, target: bad, input: Hi, assertions: [{type: contains, value: i}]}\n"
    )
    proc = run_cli(["suite.yaml", "-o", "out.json", "-o", "out.xml"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " Agents" not in proc.stdout
    report = json.loads((tmp_path / "out.json").read_text())
    assert "agents" not in report["summary"] and "matrix" not in report
    assert sorted(el.get("name") for el in ET.parse(tmp_path / "out.xml").iter("testcase")) == ["capital", "greeting"]


def test_pytest_items_of_a_case_run_against_several_agents_name_the_agent(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    make_project(pytester.path, "targets: [good, bad]\n")
    result = pytester.runpytest("suite.yaml", "-q")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*FAILED suite.yaml::capital[[]bad[]]*"])
