"""The run history end to end: every run recorded, read back, kept safe from concurrent runs and bad files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import run_cli

from specrun.history import History

SPECRUN = str(Path(sys.executable).with_name("specrun"))

# ``flip`` alternates: for each case, passes on its 1st, 3rd, ... call in a project, fails on the others.
AGENT = """
import time
from pathlib import Path

def echo(messages, ctx):
    return "echo: " + messages[-1].text

def flip(messages, ctx):
    counter = Path(ctx.case_id + ".count")
    count = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(count + 1))
    return "echo: " + messages[-1].text + (" yes" if count % 2 == 0 else " no")

def boom(messages, ctx):
    raise RuntimeError("boom")

def slow(messages, ctx):
    time.sleep(float(messages[-1].text.split()[-1]))
    return "echo: " + messages[-1].text
"""


def project(root: Path, cases: list[dict], function: str = "echo", config: str = "timeout: 60s\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "specrun.yaml").write_text(config)
    (root / "agent_mod.py").write_text(AGENT)
    (root / "agent.yaml").write_text(f"target: python:agent_mod:{function}\n")
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def case(case_id: str, text: str, expect: str) -> dict:
    return {"id": case_id, "input": text, "assertions": [{"type": "contains", "value": expect}]}


CASES = [case("greets", "hello", "hello"), case("refuses", "hello", "goodbye"), case("counts", "one two", "two")]


def history(root: Path) -> History:
    return History.open(root, {})


def test_every_run_is_recorded_with_its_cases(tmp_path):
    root = project(tmp_path, CASES)
    for _ in range(3):
        done = run_cli(["suite.jsonl", "-o", "out.jsonl", "--parallel", "2"], root)
        assert done.returncode == 1, done.stderr
    store = history(root)
    runs = store.runs()
    assert len(runs) == 3
    latest = runs[0]
    assert latest["started_at"] > runs[1]["started_at"] > runs[2]["started_at"]
    assert latest["argv"] == ["suite.jsonl", "-o", "out.jsonl", "--parallel", "2"]
    assert latest["agents"] == [root.name] and latest["suites"] == ["suite.jsonl"]
    assert (latest["total"], latest["passed"], latest["failed"], latest["errors"], latest["interrupted"]) == (
        3,
        2,
        1,
        0,
        0,
    )
    assert latest["ended_at"] >= latest["started_at"] and latest["duration_ms"] > 0
    assert latest["stream"] == str((root / "out.jsonl").resolve())
    assert latest["summary"]["failed"] == 1
    assert len({r["suites_hash"] for r in runs}) == 1, "the same cases hash the same"
    cases = {c["case_id"]: c for c in store.cases(latest["id"])}
    assert {k: c["status"] for k, c in cases.items()} == {"greets": "passed", "refuses": "failed", "counts": "passed"}
    refused = cases["refuses"]
    assert refused["suite"] == "suite.jsonl" and refused["line"] == 2 and refused["run_index"] == 1
    assert refused["agent"] == root.name and refused["duration_ms"] >= 0 and refused["cached"] == 0
    assert refused["result"]["output"] == "echo: hello" and refused["result"]["status"] == "failed"
    assert cases["greets"]["fingerprint"] == refused["fingerprint"] != cases["counts"]["fingerprint"]
    assert len({c["content_hash"] for c in cases.values()}) == 3
    timeline = store.timeline("refuses")
    assert [t["run_id"] for t in timeline] == [r["id"] for r in runs]
    assert store.run(latest["id"][:-2])["id"] == latest["id"], "a unique prefix names a run"
    assert set(store.durations(["greets", "nope"])) == {"greets"}
    assert not store.flaky(), "the same verdict every time is not flaky"


def test_an_edited_case_has_a_new_content_hash_and_a_new_suites_hash(tmp_path):
    root = project(tmp_path, CASES)
    run_cli(["suite.jsonl"], root)
    project(tmp_path, [case("greets", "hello", "hell"), *CASES[1:]])
    run_cli(["suite.jsonl"], root)
    store = history(root)
    new, old = store.runs()
    assert new["suites_hash"] != old["suites_hash"]
    hashes = [t["content_hash"] for t in store.timeline("greets")]
    assert hashes[0] != hashes[1]
    assert len({t["content_hash"] for t in store.timeline("refuses")}) == 1


def test_no_history_flag_and_setting(tmp_path):
    root = project(tmp_path / "flag", CASES)
    assert run_cli(["suite.jsonl", "--no-history"], root).returncode == 1
    assert not (root / ".specrun" / "history.db").exists()  # (.specrun/runs/ has the result stream)
    root = project(tmp_path / "off", CASES, config="history: false\n")
    assert run_cli(["suite.jsonl"], root).returncode == 1
    assert not (root / ".specrun" / "history.db").exists()
    root = project(tmp_path / "moved", CASES, config="history: {path: runs/h.sqlite, keep: 2}\n")
    for _ in range(3):
        run_cli(["suite.jsonl"], root)
    assert not (root / ".specrun" / "history.db").exists()
    store = History.open(root, {"history": {"path": "runs/h.sqlite"}})
    assert len(store.runs()) == 2, "keep: the oldest run was dropped"
    kept = {r["id"] for r in store.runs()}
    assert {row[0] for row in store.db.execute("SELECT DISTINCT run_id FROM cases")} == kept


def test_a_bad_history_setting_is_bad_input(tmp_path):
    root = project(tmp_path, CASES, config="history: {path: h.db, windw: 3}\n")
    done = run_cli(["suite.jsonl"], root)
    assert done.returncode == 2 and "specrun.yaml" in done.stderr and "history" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_history_folder_is_ignored_by_git(tmp_path):
    root = project(tmp_path, CASES)
    run_cli(["suite.jsonl"], root)
    assert (root / ".specrun" / ".gitignore").read_text().splitlines()[-1] == "*"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"this is not a database at all" * 100, "is not a readable specrun history"),
        (None, "written by a newer specrun (history format 99"),
        ("foreign", "not a specrun history (tables: notes)"),
    ],
)
def test_a_corrupt_foreign_or_newer_database_is_a_clear_error(tmp_path, content, said):
    root = project(tmp_path, CASES)
    path = root / ".specrun" / "history.db"
    path.parent.mkdir()
    if content is None:
        run_cli(["suite.jsonl"], root)
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA user_version = 99")
    elif content == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes(x)")
    else:
        path.write_bytes(content)
    done = run_cli(["suite.jsonl", "-o", "out.jsonl"], root)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and str(path) in done.stderr
    assert "--no-history" in done.stderr or "upgrade specrun" in done.stderr
    assert "Traceback" not in done.stderr and not (root / "out.jsonl").exists(), "nothing ran"
    assert run_cli(["suite.jsonl", "--no-history"], root).returncode == 1, "--no-history runs anyway"


def test_two_runs_at_once_on_one_history(tmp_path):
    cases = [case(f"c{i:03d}", f"question {i} 0.01", f"question {i}") for i in range(60)]
    root = project(tmp_path, cases, function="slow")
    procs = [
        subprocess.Popen(
            [SPECRUN, "suite.jsonl", "-o", f"out{n}.jsonl", "--parallel", "8"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = history(root)
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    runs = store.runs()
    assert len(runs) == 2 and all(r["passed"] == 60 and r["ended_at"] for r in runs)
    for run in runs:
        assert sorted(c["case_id"] for c in store.cases(run["id"])) == [c["id"] for c in cases]


def test_a_killed_run_keeps_the_results_it_had(tmp_path):
    cases = [case("quick-1", "a 0", "a"), case("quick-2", "b 0", "b"), case("stuck", "c 60", "c")]
    root = project(tmp_path, cases, function="slow")
    proc = subprocess.Popen([SPECRUN, "suite.jsonl", "-o", "out.jsonl"], cwd=root, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (root / "out.jsonl").exists() and (root / "out.jsonl").read_text().count('"type": "result"') >= 2:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    store = history(root)
    [run] = store.runs()
    assert run["ended_at"] is None and run["total"] is None, "the run never got to its end"
    assert sorted(c["case_id"] for c in store.cases(run["id"])) == ["quick-1", "quick-2"]


def statuses(stream: Path) -> dict[str, str]:
    return {r["id"]: r["status"] for r in map(json.loads, stream.read_text().splitlines()) if r["type"] == "result"}


def order(stream: Path) -> list[str]:
    return [r["id"] for r in map(json.loads, stream.read_text().splitlines()) if r["type"] == "result"]


def test_last_failed_reruns_only_what_failed_or_errored(tmp_path):
    cases = [*CASES, {**case("crashes", "x", "x"), "target": "python:agent_mod:boom"}]
    root = project(tmp_path, cases)
    first = run_cli(["suite.jsonl", "--lf", "-o", "first.jsonl"], root)
    assert "--lf: no case here failed in its last recorded run; running all 4" in first.stderr
    assert statuses(root / "first.jsonl") == {
        "greets": "passed",
        "refuses": "failed",
        "counts": "passed",
        "crashes": "error",
    }
    again = run_cli(["suite.jsonl", "--last-failed", "-o", "again.jsonl"], root)
    assert again.returncode == 1
    assert "--lf: rerunning the 2 cases that failed last time (2 deselected)" in again.stderr
    assert statuses(root / "again.jsonl") == {"refuses": "failed", "crashes": "error"}
    # The failures are fixed: --lf runs them, they pass; then there is nothing failed to rerun (pytest's way).
    project(tmp_path, [*CASES[:1], case("refuses", "hello", "hello"), *cases[2:]])
    (root / "agent_mod.py").write_text(AGENT.replace('raise RuntimeError("boom")', 'return "x"'))
    fixed = run_cli(["suite.jsonl", "--lf", "-o", "fixed.jsonl"], root)
    assert fixed.returncode == 0 and statuses(root / "fixed.jsonl") == {"refuses": "passed", "crashes": "passed"}
    after = run_cli(["suite.jsonl", "--lf", "-o", "after.jsonl"], root)
    assert "running all 4" in after.stderr and len(statuses(root / "after.jsonl")) == 4


def test_last_failed_is_per_suite_and_combines_with_run(tmp_path):
    root = project(tmp_path, CASES)
    (root / "other.jsonl").write_text(json.dumps(case("refuses", "hello", "hello")) + "\n")
    run_cli(["suite.jsonl", "other.jsonl"], root)
    done = run_cli(["other.jsonl", "--lf", "-o", "out.jsonl"], root)
    assert "no case here failed" in done.stderr, "other.jsonl's 'refuses' passed; suite.jsonl's is not here"
    done = run_cli(["suite.jsonl", "--lf", "--run", "greets|counts", "-o", "out.jsonl"], root)
    assert "running all 2" in done.stderr and set(statuses(root / "out.jsonl")) == {"greets", "counts"}


def test_failed_first_runs_every_case_failures_first(tmp_path):
    root = project(tmp_path, CASES)
    run_cli(["suite.jsonl"], root)
    done = run_cli(["suite.jsonl", "--ff", "-o", "out.jsonl"], root)
    assert "--ff: running the 1 case that failed last time first, then the other 2" in done.stderr
    assert order(root / "out.jsonl") == ["refuses", "greets", "counts"]


def test_last_failed_with_history_off_is_a_usage_error(tmp_path):
    root = project(tmp_path, CASES, config="history: false\n")
    done = run_cli(["suite.jsonl", "--lf"], root)
    assert done.returncode == 2 and "--lf reads the run history, which is off" in done.stderr


def test_an_alternating_agent_is_flaky_and_the_next_run_says_so(tmp_path):
    root = project(tmp_path, [case("coin", "toss", "yes"), case("steady", "toss", "toss")], function="flip")
    for n in range(3):
        run_cli(["suite.jsonl", "-o", f"run{n}.jsonl"], root)
    assert [statuses(root / f"run{n}.jsonl")["coin"] for n in range(3)] == ["passed", "failed", "passed"]
    [flaky] = history(root).flaky()
    assert (flaky.key.case_id, flaky.passed, flaky.failed, flaky.flips, flaky.last) == ("coin", 2, 1, 2, "passed")
    done = run_cli(["suite.jsonl", "-o", "marked.jsonl"], root)
    records = {r.get("id"): r for r in map(json.loads, (root / "marked.jsonl").read_text().splitlines())}
    assert records["coin"]["flaky"] is True and "flaky" not in records["steady"]
    assert "flaky" in done.stdout.split("[coin]")[1].splitlines()[0]
    # Editing the case starts its record afresh: two runs of the new content, both failing, are not flaky.
    project(tmp_path, [case("coin", "toss again", "yes"), case("steady", "toss", "toss")], function="flip")
    for _ in range(2):
        (root / "coin.count").write_text("1")
        run_cli(["suite.jsonl"], root)
    assert history(root).flaky() == []
