"""The ``snapshot`` assertion and ``--update-snapshots``: golden outputs beside the suite or
inline in a YAML suite, rewritten with the suite's comments and layout kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.cli import run_cli

BOT = """
import os

def answer(messages, ctx):
    version = os.environ.get("BOT_VERSION", "1")
    if messages[-1].text == "json":
        return {"version": version, "items": [1, 2]}
    return f"Hello from v{version}\\nYou said: {messages[-1].text}"
"""

SUITE = """\
# Greetings: this comment stays
cases:
  - id: hello   # the first case
    input: "hi"
    assertions:
      - {type: contains, value: Hello}
      - type: snapshot
        value:
  - id: file-snap
    input: there
    assertions: [{type: snapshot}]
  - id: data
    input: json
    assertions:
      - {type: snapshot, name: api}
"""


def make_project(tmp_path: Path, suite: str = SUITE, name: str = "suite.yaml") -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "snap_bot.py").write_text(BOT)
    (tmp_path / "agent.yaml").write_text("target: python:snap_bot:answer\n")
    (tmp_path / name).write_text(suite)
    return tmp_path / name


def run(tmp_path: Path, *args: str, version: str = "1"):
    return run_cli([*args, "-o", "output-run.jsonl"], tmp_path, {**os.environ, "BOT_VERSION": version})


def results(tmp_path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (tmp_path / "output-run.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in lines if r["type"] == "result"}


def snapshot_of(record: dict) -> dict:
    return next(a for a in record["assertions"] if a["type"] == "snapshot")


def test_missing_snapshot_is_an_error_not_a_pass(tmp_path):
    make_project(tmp_path)
    proc = run(tmp_path, "suite.yaml")
    assert proc.returncode == 1
    found = results(tmp_path)
    assert {k: r["status"] for k, r in found.items()} == {"hello": "error", "file-snap": "error", "data": "error"}
    message = snapshot_of(found["file-snap"])["message"]
    assert "no approved snapshot yet" in message and "--update-snapshots" in message
    assert snapshot_of(found["file-snap"])["details"]["snapshot"]["case_id"] == "file-snap"  # approvable later
    assert not (tmp_path / "__snapshots__").exists()


def test_update_writes_files_and_inline_values_then_changes_fail(tmp_path):
    suite = make_project(tmp_path)
    proc = run(tmp_path, "suite.yaml", "--update-snapshots")
    assert proc.returncode == 0, proc.stdout
    folder = tmp_path / "__snapshots__" / "suite.yaml"
    assert (folder / "file-snap.txt").read_text() == "Hello from v1\nYou said: there"
    assert json.loads((folder / "data.api.json").read_text()) == {"version": "1", "items": [1, 2]}
    assert suite.read_text() == SUITE.replace(
        "        value:\n", "        value: |-\n          Hello from v1\n          You said: hi\n"
    )  # only the value changed: comments, quotes, flow style and indentation are as written

    proc = run(tmp_path, "suite.yaml")
    assert proc.returncode == 0, proc.stdout
    assert all(r["status"] == "passed" for r in results(tmp_path).values())

    proc = run(tmp_path, "suite.yaml", version="2")
    assert proc.returncode == 1
    found = results(tmp_path)
    assert {k: r["status"] for k, r in found.items()} == {"hello": "failed", "file-snap": "failed", "data": "failed"}
    failed = snapshot_of(found["file-snap"])
    assert failed["expected"] == "Hello from v1\nYou said: there"
    assert failed["actual"] == "Hello from v2\nYou said: there"
    assert "differs from the approved snapshot" in failed["message"]
    assert snapshot_of(found["data"])["expected"] == {"version": "1", "items": [1, 2]}


def test_update_rewrites_only_the_changed_inline_value(tmp_path):
    suite = make_project(tmp_path)
    run(tmp_path, "suite.yaml", "--update-snapshots")
    approved = suite.read_text()
    proc = run(tmp_path, "suite.yaml", "--update-snapshots", version="2")
    assert proc.returncode == 0, proc.stdout
    assert suite.read_text() == approved.replace("Hello from v1", "Hello from v2")
    assert "snapshot updated" in snapshot_of(results(tmp_path)["hello"])["message"]


def test_structured_output_compares_as_json_whatever_the_key_order(tmp_path):
    make_project(tmp_path)
    folder = tmp_path / "__snapshots__" / "suite.yaml"
    folder.mkdir(parents=True)
    (folder / "data.api.json").write_text('{"items": [1, 2], "version": "1"}')
    proc = run(tmp_path, "suite.yaml", "--run", "^data$")
    assert proc.returncode == 0, proc.stdout
    assert results(tmp_path)["data"]["status"] == "passed"


def test_inline_snapshot_in_a_json_suite_cannot_be_rewritten(tmp_path):
    cases = {"cases": [{"id": "j", "input": "hi", "assertions": [{"type": "snapshot", "value": None}]}]}
    make_project(tmp_path, json.dumps(cases), "suite.json")
    proc = run(tmp_path, "suite.json", "--update-snapshots")
    assert proc.returncode == 1
    assert "an inline snapshot needs a YAML suite" in snapshot_of(results(tmp_path)["j"])["message"]


def test_folder_search_skips_snapshots(tmp_path):
    make_project(tmp_path)
    run(tmp_path, "suite.yaml", "--update-snapshots")
    proc = run(tmp_path, ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # data.api.json is no suite
    assert len(results(tmp_path)) == 3
