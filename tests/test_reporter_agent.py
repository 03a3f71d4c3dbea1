"""`-r agents:ID`: a project agent writes the report; a failing one keeps every result."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import support.cli

AGENTS = """
import json

def answer(messages, ctx):
    return "fine"

def report(messages, ctx):
    payload = json.loads(messages[-1].text)
    summary = payload["report"]["summary"]
    ids = ",".join(r["id"] for r in payload["report"]["results"])
    return f"<h1>{payload['format']}: {summary['passed']}/{summary['total']} passed ({ids})</h1>"

def broken(messages, ctx):
    raise RuntimeError("template missing")
"""


def project(tmp_path: Path) -> None:
    (tmp_path / "specrun.yaml").write_text("")  # an empty config only marks the project root
    for name, module, func in [
        ("app", "app_agent", "answer"),
        ("reporters/pretty", "pretty_reporter", "report"),
        ("reporters/broken", "broken_reporter", "broken"),
    ]:
        folder = tmp_path / name
        folder.mkdir(parents=True)
        (folder / f"{module}.py").write_text(AGENTS)
        (folder / "agent.yaml").write_text(f"target: python:{module}:{func}\n")
    cases = [
        {"id": "one", "input": "a"},
        {"id": "two", "input": "b", "assertions": [{"type": "contains", "value": "fine"}]},
    ]
    (tmp_path / "app" / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return support.cli.run_cli(["app/suite.jsonl", *args], tmp_path)


def test_reporter_agent_writes_the_output_file(tmp_path):
    project(tmp_path)
    proc = run(tmp_path, "-r", "agents:reporters.pretty", "-o", "report.html", "-o", "results.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.html").read_text() == "<h1>html: 2/2 passed (one,two)</h1>"
    assert sum('"type": "result"' in line for line in (tmp_path / "results.jsonl").read_text().splitlines()) == 2


def test_failing_reporter_agent_keeps_the_results(tmp_path):
    project(tmp_path)
    proc = run(tmp_path, "-r", "reporters.broken", "-o", "report.md")
    assert proc.returncode == 3
    assert "RuntimeError: template missing" in proc.stderr and "every result is in" in proc.stderr
    kept = proc.stderr.rsplit("every result is in ", 1)[1].split()[0]
    assert Path(kept).exists() and '"id": "two"' in Path(kept).read_text()
    assert not (tmp_path / "report.md").exists()


def test_reporter_needs_an_output(tmp_path):
    project(tmp_path)
    proc = run(tmp_path, "-r", "reporters.pretty")
    assert proc.returncode == 2 and "-r needs -o" in proc.stderr
