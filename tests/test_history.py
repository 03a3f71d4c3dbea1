"""The run history end to end: every run recorded, read back, kept safe from concurrent runs and bad files."""

from __future__ import annotations

import contextlib
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

from specrun._history.store import History

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


def test_recording_a_run_reads_no_suite_file_again(tmp_path, monkeypatch):
    import specrun._load.loader
    from specrun._load.documents import parse

    root = project(tmp_path, CASES)
    reads: list[tuple] = []
    monkeypatch.setattr(specrun._load.loader, "parse", lambda *a: reads.append(a) or parse(*a))
    assert run_cli(["suite.jsonl", "--no-history"], root).returncode == 1
    unrecorded, reads[:] = len(reads), []
    assert run_cli(["suite.jsonl"], root).returncode == 1
    assert unrecorded and len(reads) == unrecorded, "suites_hash is summed up from the results"
    assert history(root).runs()[0]["suites_hash"]


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


def recorded_cases(root: Path) -> int:
    """How many case results the history of ``root`` holds so far (read as another process would)."""
    path = root / ".specrun" / "history.db"
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        try:
            return db.execute("SELECT count(*) FROM cases").fetchone()[0]
        except sqlite3.OperationalError:  # the run has not made its tables yet
            return 0


def test_a_killed_run_keeps_the_results_it_had(tmp_path):
    cases = [case("quick-1", "a 0", "a"), case("quick-2", "b 0", "b"), case("stuck", "c 60", "c")]
    root = project(tmp_path, cases, function="slow")
    proc = subprocess.Popen([SPECRUN, "suite.jsonl", "-o", "out.jsonl"], cwd=root, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and recorded_cases(root) < 2:  # both quick ones committed
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    store = history(root)
    [run] = store.runs()
    assert run["ended_at"] is None and run["total"] is None, "the run never got to its end"
    assert run["suites_hash"] is None, "summed up from the results and written with the totals"
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
    assert (flaky.key.id, flaky.passed, flaky.failed, flaky.flips, flaky.last) == ("coin", 2, 1, 2, "passed")
    reports = ["-o", "marked.jsonl", "-o", "marked.md", "-o", "marked.html", "-o", "marked.json", "-o", "marked.xml"]
    done = run_cli(["suite.jsonl", *reports], root)
    records = {r.get("id"): r for r in map(json.loads, (root / "marked.jsonl").read_text().splitlines())}
    assert records["coin"]["flaky"] is True and "flaky" not in records["steady"]
    assert "[flaky]" in done.stdout.split("[coin]")[1].splitlines()[0]
    assert "[flaky]" not in done.stdout.split("[steady]")[1].splitlines()[0]
    assert "Flaky:     coin" in done.stdout
    [title] = [
        line for line in (root / "marked.md").read_text().splitlines() if line.startswith("### ") and "coin" in line
    ]
    assert title.endswith("· flaky in the run history")
    assert (root / "marked.md").read_text().count("flaky in the run history") == 1
    assert (root / "marked.html").read_text().count('<span class="flaky"') == 1
    cases = {c["id"]: c for c in json.loads((root / "marked.json").read_text())["results"]}
    assert cases["coin"]["flaky"] is True and "flaky" not in cases["steady"]
    assert (root / "marked.xml").read_text().count('<property name="flaky" value="true"') == 1
    # Editing the case starts its record afresh: two runs of the new content, both failing, are not flaky.
    project(tmp_path, [case("coin", "toss again", "yes"), case("steady", "toss", "toss")], function="flip")
    for _ in range(2):
        (root / "coin.count").write_text("1")
        run_cli(["suite.jsonl"], root)
    assert history(root).flaky() == []


def test_an_edited_case_starts_afresh_in_the_marks_of_the_next_run_too(tmp_path):
    root = project(tmp_path, [case("coin", "toss", "yes")], function="flip")
    for _ in range(2):
        run_cli(["suite.jsonl"], root)
    assert [f.key.id for f in history(root).flaky()] == ["coin"]
    project(tmp_path, [case("coin", "toss again", "yes")], function="flip")
    done = run_cli(["suite.jsonl", "-o", "edited.jsonl"], root)
    assert "[flaky]" not in done.stdout and "Flaky:" not in done.stdout
    assert "flaky" not in (root / "edited.jsonl").read_text()


def git_repo(root: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=root, check=True)


@pytest.mark.parametrize("in_git", [False, True], ids=["files", "git"])
def test_a_fix_is_not_a_flip_but_data_the_agent_writes_changes_nothing(tmp_path, in_git):
    """The flip agent writes a counter file next to itself as it runs: the same code, so its
    pass then fail is flaky. Editing its code (uncommitted, in git) is a new revision: the fix's
    pass starts afresh, not flaky and not marked so."""
    root = project(tmp_path, [case("coin", "toss", "yes")], function="flip")
    if in_git:
        git_repo(root)
    assert [run_cli(["suite.jsonl"], root).returncode for _ in range(2)] == [0, 1]
    [flaky] = history(root).flaky()
    assert flaky.revision.startswith("git:" if in_git else "files:")
    # Editing the suite (tracked in git) is not a change of the agent: the other cases keep their marks.
    project(tmp_path, [case("coin", "toss", "yes"), case("other", "toss", "toss")], function="flip")
    assert "[flaky]" in run_cli(["suite.jsonl"], root).stdout.split("[coin]")[1].splitlines()[0]
    (root / "agent_mod.py").write_text(AGENT.replace('" yes" if count % 2 == 0 else " no"', '" yes"'))
    done = run_cli(["suite.jsonl", "-o", "fixed.jsonl"], root)
    assert done.returncode == 0 and "[flaky]" not in done.stdout
    assert "flaky" not in (root / "fixed.jsonl").read_text()
    assert "No flaky cases" in run_cli(["history", "--flaky"], root).stdout
    revisions = [t["revision"] for t in history(root).timeline("coin")]
    assert revisions[0] != revisions[1] == revisions[2] == revisions[3]
    assert "agent changed" in run_cli(["history", "coin"], root).stdout.splitlines()[1]


FORMAT_1 = """
CREATE TABLE runs(
    id TEXT PRIMARY KEY, started_at TEXT, ended_at TEXT, argv TEXT, agents TEXT, suites TEXT,
    suites_hash TEXT, git_commit TEXT, total INT, passed INT, failed INT, errors INT, skipped INT,
    not_run INT, duration_ms REAL, cost REAL, interrupted INT, stream TEXT, summary TEXT);
CREATE TABLE cases(
    run_id TEXT, case_id TEXT, run_index INT, agent TEXT, suite TEXT, line INT, status TEXT,
    duration_ms REAL, tokens INT, cost REAL, error TEXT, cached INT, fingerprint TEXT,
    content_hash TEXT, result TEXT);
CREATE TABLE case_state(
    suite TEXT, case_id TEXT, agent TEXT, content_hash TEXT, verdicts TEXT, last_run TEXT,
    last_failed INT, duration_ms REAL, PRIMARY KEY (suite, case_id, agent));
PRAGMA user_version = 1;
"""


def test_a_history_written_before_revisions_opens_and_its_old_results_are_kept(tmp_path):
    root = project(tmp_path, [case("coin", "toss", "yes")], function="flip")
    run_cli(["suite.jsonl"], root)  # for the case's content hash; then a format 1 file in its place
    content = history(root).timeline("coin")[0]["content_hash"]
    for path in (root / ".specrun").glob("history.db*"):
        path.unlink()
    (root / "coin.count").unlink()
    old = sqlite3.connect(root / ".specrun" / "history.db")
    old.executescript(FORMAT_1)
    old.execute("INSERT INTO runs(id, started_at, agents) VALUES ('20250101-000000-aaaaaa', '2025-01-01', '[]')")
    row = ["20250101-000000-aaaaaa", "coin", 1, root.name, "suite.jsonl", 1, "failed", 5.0, None, None, None, 0]
    old.execute("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'f', ?, '{}')", [*row, content])
    state = ["suite.jsonl", "coin", root.name, content, "FPF", "20250101-000000-aaaaaa", 1, 5.0]
    old.execute("INSERT INTO case_state VALUES (?, ?, ?, ?, ?, ?, ?, ?)", state)
    old.commit()
    old.close()
    done = run_cli(["suite.jsonl"], root)  # passes (count 0)
    assert done.returncode == 0, done.stderr
    assert "[flaky]" not in done.stdout, "the old results do not say which revision they were of"
    store = history(root)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == 4  # 1 -> 2 (revision) -> 3 (labels) -> 4 (rejudge)
    assert list(store.labels()) == []
    timeline = [(t["status"], t["revision"] is None) for t in store.timeline("coin")]
    assert timeline == [("passed", False), ("failed", True)]
    assert store.flaky() == [] and store.last_failed(["suite.jsonl"]) == set()
    run_cli(["suite.jsonl"], root)  # fails (count 1), at the revision of the run before
    assert [f.key.id for f in history(root).flaky()] == ["coin"]


def test_a_result_judged_from_the_model_cache_says_so(tmp_path):
    from support.llm_server import LLMServer

    verdict = {"content": json.dumps({"passed": True, "score": 1.0, "reason": "fine"})}
    judged = {"id": "judged", "input": "hello", "assertions": [{"type": "llm", "criteria": "Greets back"}]}
    plain = case("plain", "hello", "hello")
    root = project(tmp_path, [judged, plain], config="model: openai/gpt-4o-mini\n")
    with LLMServer(responder=lambda body: verdict) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
        runs = [
            run_cli(["suite.jsonl", "-o", f"out{n}.jsonl", *flags], root, env)
            for n, flags in enumerate([[], [], ["--no-cache"]])
        ]
        assert len(server.requests) == 2, "the second run's judge reply came from the cache"
    assert all(done.returncode == 0 for done in runs), runs[0].stdout + runs[0].stderr
    records = [
        {
            r["id"]: r
            for r in map(json.loads, (root / f"out{n}.jsonl").read_text().splitlines())
            if r["type"] == "result"
        }
        for n in range(3)
    ]
    assert [r["judged"].get("cached") for r in records] == [None, True, None]
    assert all("cached" not in r["plain"] for r in records), "a case that asked no model is not 'cached'"
    line = runs[1].stdout.split("[judged]")[1].splitlines()[0]
    assert "[cached]" in line and "[cached]" not in runs[0].stdout + runs[2].stdout
    assert "Cached:    1 result judged from the model cache" in runs[1].stdout
    store = history(root)
    assert [t["cached"] for t in store.timeline("judged")] == [0, 1, 0]


def test_history_command_lists_runs_a_timeline_and_flaky_cases(tmp_path):
    root = project(tmp_path, [case("coin", "toss", "yes"), case("steady", "toss", "toss")], function="flip")
    empty = run_cli(["history"], root)
    assert empty.returncode == 0 and "No runs recorded yet" in empty.stdout
    for _ in range(4):
        run_cli(["suite.jsonl"], root)
    done = run_cli(["history", "--limit", "3"], root)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["RUN", "STARTED", "AGENT", "PASS/FAIL/ERR/SKIP", "PASS", "RATE", "DURATION"]
    rows = [line.split() for line in lines[1:4]]
    assert [row[4] for row in rows] == ["1/1/0/0", "2/0/0/0", "1/1/0/0"] and [row[5] for row in rows] == [
        "50.0%",
        "100.0%",
        "50.0%",
    ]
    assert all(row[3] == root.name for row in rows) and "3 latest runs" in done.stdout
    timeline = run_cli(["history", "coin"], root)
    rows = [line.split() for line in timeline.stdout.splitlines()[1:5]]
    assert [row[4] for row in rows] == ["failed", "passed", "failed", "passed"]
    assert "contains:" in timeline.stdout.splitlines()[1] and "new output" in timeline.stdout.splitlines()[1]
    assert "case coin (suite.jsonl:1)" in timeline.stdout and "flaky against" in timeline.stdout
    flaky = run_cli(["history", "--flaky"], root)
    assert flaky.stdout.splitlines()[1].split() == ["coin", "suite.jsonl", root.name, "2", "2", "3", "failed"]
    assert "1 flaky case" in flaky.stdout and "steady" not in flaky.stdout
    elsewhere = run_cli(["history", "--flaky", "-C", str(root)], tmp_path.parent)
    assert elsewhere.stdout == flaky.stdout
    assert "No flaky cases" in run_cli(["history", "--flaky", "-n", "other"], root).stdout


def test_the_timeline_does_not_call_an_answer_new_across_the_change_of_fingerprint(tmp_path):
    root = project(tmp_path, [case("steady", "hello", "hello")])
    for _ in range(3):
        run_cli(["suite.jsonl"], root)
    fingerprints = [t["fingerprint"] for t in history(root).timeline("steady")]
    assert len(set(fingerprints)) == 1 and len(fingerprints[0]) == 32  # the reports' fingerprint, as hex
    db = sqlite3.connect(root / ".specrun" / "history.db")
    with contextlib.closing(db):  # the oldest as an older specrun wrote it: a hash of another kind
        db.execute("UPDATE cases SET fingerprint = '0123456789abcdef' WHERE rowid = (SELECT min(rowid) FROM cases)")
        db.commit()
    lines = run_cli(["history", "steady"], root).stdout.splitlines()
    assert [line.split()[4] for line in lines[1:4]] == ["passed"] * 3
    assert "new output" not in "\n".join(lines[1:4])


def test_history_command_on_a_bad_database_is_a_clear_error(tmp_path):
    root = project(tmp_path, CASES)
    (root / ".specrun").mkdir()
    (root / ".specrun" / "history.db").write_text("garbage" * 1000)
    done = run_cli(["history"], root)
    assert done.returncode == 2 and "is not a readable specrun history" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_interrupted_run_is_recorded_whole_and_its_cut_case_is_no_failure(tmp_path):
    cases = [case("quick", "a 0", "a"), case("cut", "b 60", "b"), case("wrong", "c 0", "nope")]
    root = project(tmp_path, cases, function="slow")
    assert run_cli(["suite.jsonl", "--dry-run"], root).returncode == 0
    assert not (root / ".specrun").exists(), "--dry-run records nothing"
    proc = subprocess.Popen(
        [SPECRUN, "suite.jsonl", "-o", "out.jsonl", "--parallel", "3"], cwd=root, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (root / "out.jsonl").exists() and (root / "out.jsonl").read_text().count('"type": "result"') >= 2:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    store = history(root)
    [run] = store.runs()
    assert run["interrupted"] == 1 and run["ended_at"] and run["total"] == 3
    cut = {c["case_id"]: (c["status"], c["error"]) for c in store.cases(run["id"])}
    assert cut == {"quick": ("passed", None), "cut": ("error", "interrupted"), "wrong": ("failed", None)}
    done = run_cli(["suite.jsonl", "--lf", "-o", "again.jsonl"], root)
    assert "rerunning the 1 case that failed last time" in done.stderr
    assert list(statuses(root / "again.jsonl")) == ["wrong"]


def test_the_git_commit_is_recorded_and_secrets_in_the_command_line_are_masked(tmp_path):
    root = project(tmp_path, CASES)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=root, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "SUPPORT_API_KEY": "hunter2-not-a-real-key"}
    run_cli(["suite.jsonl", "-u", "hunter2-not-a-real-key"], root, env)
    [run] = history(root).runs()
    assert run["git_commit"] == head
    assert run["argv"] == ["suite.jsonl", "-u", "[REDACTED:SUPPORT_API_KEY]"]
    stored = b"".join(p.read_bytes() for p in (root / ".specrun").glob("history.db*"))  # the WAL too
    assert b"[REDACTED:SUPPORT_API_KEY]" in stored and b"hunter2" not in stored


def test_a_history_that_cannot_be_written_fails_the_run_with_exit_3_and_keeps_every_result(tmp_path, monkeypatch):
    import specrun._history.store

    root = project(tmp_path, CASES)
    run_cli(["suite.jsonl"], root)
    monkeypatch.setattr(specrun._history.store, "BUSY_TIMEOUT_S", 0.05)  # not 30 s: another run holds the lock
    with sqlite3.connect(root / ".specrun" / "history.db", isolation_level=None) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        done = run_cli(["suite.jsonl", "-o", "out.jsonl"], root)
        holder.execute("ROLLBACK")
    assert done.returncode == 3, done.stderr
    assert "HistoryRecorder failed: HistoryError: cannot write the run history" in done.stderr
    assert "database is locked" in done.stderr and "Traceback" not in done.stderr
    assert len(statuses(root / "out.jsonl")) == 3, "the stream has every result"
    assert len(history(root).runs()) == 1
