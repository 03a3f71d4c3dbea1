"""Trust, the CLI's front door: nothing runs by accident, every check comes before the first
case, outputs are locked, and no suite file disappears or is read twice.

Each test drives the real ``specrun`` (or ``pytest``) process. The agent under test stands for
a paid one: it records every call in ``calls.log``, and the tests assert it was not called.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import support.cli

SPECRUN = str(Path(sys.executable).with_name("specrun"))

AGENT = """
import os, time
from pathlib import Path

HERE = Path(__file__).parent

def respond(messages, ctx):
    with open(HERE / "calls.log", "a") as fh:
        fh.write(messages[-1].text + "\\n")
    return "hello there"

def first_waits(messages, ctx):
    # The first call anywhere holds its run until the test creates `go`; later calls answer.
    try:
        os.close(os.open(HERE / "first", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return respond(messages, ctx)
    deadline = time.monotonic() + 60
    while not (HERE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return respond(messages, ctx)
"""

GREETS = {"id": "greets", "input": "hi", "assertions": [{"type": "contains", "value": "hello"}]}
# The word that made discovery drop a whole file once.
QUOTES = {"id": "quotes", "input": "what do reports start with?", "expected": "specrun_report"}
CASES = [GREETS, QUOTES]


def project(root: Path, agent: str = "respond", cases: list[dict] = CASES) -> Path:
    """A project whose agent records its calls; ``suites/chat.jsonl`` holds ``cases``."""
    (root / "specrun.yaml").write_text("timeout: 90s\n")
    (root / "agent_mod.py").write_text(AGENT)
    (root / "agent.yaml").write_text(f"target: python:agent_mod:{agent}\n")
    (root / "suites").mkdir()
    (root / "suites" / "chat.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def specrun(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return support.cli.run_cli(args, root)


def collecting(root: Path, *args: str) -> subprocess.Popen[str]:
    """``pytest --collect-only -q ARGS`` in ``root``, started: it runs while the test goes on
    in process (on the other core), and its output is read when the test needs it."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, cwd=root, stdout=pipe, stderr=pipe, text=True, env=dict(os.environ))


def calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- 11.2: nothing runs by accident ---------------------------------------------------------------


def test_a_mistyped_command_runs_nothing_and_suggests_the_command(tmp_path: Path) -> None:
    root = project(tmp_path, cases=[GREETS])
    before = files(root)
    proc = specrun(root, "valdiate", "suites/chat.jsonl")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "No such command 'valdiate'. Did you mean 'validate'?" in proc.stderr
    assert calls(root) == [] and files(root) == before  # no case, no default output


@pytest.mark.parametrize(
    "args",
    [
        ["suites/chat.jsonl", "hello"],  # a stray word after a suite
        ["-n", "python:agent_mod:respond", "hello world"],  # a message without -i
    ],
)
def test_a_positional_word_that_is_no_path_or_source_runs_nothing(tmp_path: Path, args: list[str]) -> None:
    root = project(tmp_path, cases=[GREETS])
    before = files(root)
    proc = specrun(root, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"no such file, folder or source: {args[-1]}" in proc.stderr
    assert "to send a message, use -i" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert calls(root) == [] and files(root) == before


def test_paths_sources_and_messages_with_i_still_run(tmp_path: Path) -> None:
    root = project(tmp_path, cases=[GREETS])
    proc = specrun(root)
    assert proc.returncode == 2 and "nothing to run" in proc.stderr, proc.stdout + proc.stderr
    proc = specrun(root, "suites/", "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls(root) == ["hi"]
    proc = specrun(root, "-i", "hello", "-n", "python:agent_mod:respond")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("hello there"), proc.stderr
    long = "a" * 5000  # longer than a file name may be: a message, not an internal error
    proc = specrun(root, "-i", long, "-n", "python:agent_mod:respond")
    assert proc.returncode == 0, proc.stderr[:500]
    assert calls(root)[-2:] == ["hello", long]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-r", "agents:nope", "-o", "report.md"], "-r agents:nope: unknown agent 'nope'"),
        (["-o", "agent_mod.py/out.jsonl"], "-o agent_mod.py/out.jsonl: agent_mod.py is a file, not a folder"),
        (["-o", "reports.jsonl"], "-o reports.jsonl: is a folder"),
        # /sys takes no new file, even from root (the tests may run as root: chmod would not do)
        (["-o", "/sys/specrun-trust.jsonl"], "-o /sys/specrun-trust.jsonl: cannot write in /sys"),
        (["-o", "out.json", "-o", "./out.json"], "-o out.json: the same file as -o out.json"),
        (["-o", "suites/results.jsonl"], "-o suites/results.jsonl: inside the input folder suites"),
        (["-c", "gpt-4o-mini"], "-c gpt-4o-mini: no agent in this run has a model to replace"),
        # found before the report's folder and its temporary stream are made
        (["-o", "new/report.json", "--before", "nohooks.BeforeAll"], "--before: cannot find module 'nohooks'"),
        # the input is a symbolic link: the paths are compared resolved
        (["-o", "suites/chat.jsonl"], "-o suites/chat.jsonl: is an input of this run"),
    ],
)
def test_everything_a_run_needs_is_checked_before_the_first_case(tmp_path: Path, args: list[str], message: str) -> None:
    root = project(tmp_path, cases=[GREETS])
    (root / "reports.jsonl").mkdir()
    (root / "link.jsonl").symlink_to(root / "suites" / "chat.jsonl")
    before = {p: (root / p).read_bytes() for p in files(root) if (root / p).is_file()}
    proc = specrun(root, "link.jsonl" if "suites/chat.jsonl" in args else "suites/", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr, proc.stderr
    assert calls(root) == []
    after = {p: (root / p).read_bytes() for p in files(root) if (root / p).is_file()}
    assert after == before  # nothing written, the suite behind the link intact


def test_two_runs_on_the_same_output_never_interleave(tmp_path: Path) -> None:
    root = project(tmp_path, agent="first_waits", cases=[GREETS])
    (root / ".shared.jsonl.lock").touch()  # left by a killed run: it must block nothing
    args = [SPECRUN, "suites/chat.jsonl", "-o", "shared.jsonl"]
    first = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (root / "first").exists():  # the first run is inside its first case
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = specrun(root, *args[1:])
        assert second.returncode == 2, second.stdout + second.stderr
        assert "-o shared.jsonl: another specrun run is writing it" in second.stderr
    finally:
        (root / "go").touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    lines = records(root / "shared.jsonl")
    assert [r["type"] for r in lines] == ["start", "result", "summary"]
    assert calls(root) == ["hi"]  # the second run called nobody
    assert not (root / ".shared.jsonl.lock").exists()  # the lock file goes with the run


# -- 11.8: editor schema files are not suites -----------------------------------------------------


def test_the_documented_schema_recipe_breaks_neither_validate_nor_pytest(tmp_path: Path) -> None:
    root = project(tmp_path)
    for kind, name in (
        ("suite", "specrun.schema.json"),
        ("agent", "agent.schema.json"),
        ("config", "config.schema.json"),
    ):
        schema = specrun(root, "schema", "--kind", kind)
        assert schema.returncode == 0, schema.stderr
        (root / name).write_text(schema.stdout)
    collect = collecting(root, "-p", "no:randomly")
    proc = specrun(root, "validate", ".")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok: 2 cases in 1 suite files"
    listed = specrun(root, "validate", "-v", ".").stderr.splitlines()
    assert {
        f"skipped {n}: JSON Schema file (*.schema.json)" for n in ("agent.schema.json", "specrun.schema.json")
    } <= set(listed)
    out, err = collect.communicate(timeout=120)
    assert collect.returncode == 0, out + err
    collected = [line for line in out.splitlines() if "::" in line]
    assert collected == ["suites/chat.jsonl::greets", "suites/chat.jsonl::quotes"], out


# -- 18.8: no file or case disappears silently ----------------------------------------------------


def test_a_suite_that_mentions_specrun_report_is_validated_run_and_collected(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert b'"specrun_report"' in (root / "suites" / "chat.jsonl").read_bytes()[:512]
    collect = collecting(root, "suites")  # collection runs nothing: the calls below are the run's
    proc = specrun(root, "validate", "suites")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: 2 cases in 1 suite files", proc.stderr
    proc = specrun(root, "suites", "-o", "output-run.jsonl")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out, err = collect.communicate(timeout=120)
    assert sorted(calls(root)) == ["hi", "what do reports start with?"]
    assert "suites/chat.jsonl::quotes" in out, out + err


def test_v_lists_what_a_folder_search_passed_over_and_why(tmp_path: Path) -> None:
    root = project(tmp_path)
    suites = root / "suites"
    for rel in (".draft.jsonl", "fixtures/data.json", ".cache/old.jsonl", "output-1.jsonl", "x.schema.json"):
        (suites / rel).parent.mkdir(parents=True, exist_ok=True)
        (suites / rel).write_text("{}\n")
    (suites / "linked").symlink_to(root / "suites" / "fixtures")
    expected = [
        "skipped suites/.cache/: hidden folder",
        "skipped suites/fixtures/: fixtures/ folders hold data, not suites",
        "skipped suites/linked/: symbolic link to a folder: not followed",
        "skipped suites/.draft.jsonl: hidden file",
        "skipped suites/output-1.jsonl: specrun output (output-*.jsonl, output-*.json)",
        "skipped suites/x.schema.json: JSON Schema file (*.schema.json)",
    ]
    proc = specrun(root, "validate", "-v", "suites")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == expected
    proc = specrun(root, "-v", "suites", "-o", "output-run.jsonl")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == expected


@pytest.mark.parametrize(
    "inputs",
    [
        ["suites/chat.jsonl", "suites/chat.jsonl"],
        ["suites/", "suites/chat.jsonl"],
        ["suites/chat.jsonl", "-i", "suites/chat.jsonl"],
        ["suites/chat.jsonl", "alias.jsonl"],  # a symbolic link to it
    ],
)
def test_the_same_file_given_twice_is_read_once(tmp_path: Path, inputs: list[str]) -> None:
    root = project(tmp_path, cases=[GREETS, {**GREETS, "id": "again", "input": "hi again"}])
    (root / "alias.jsonl").symlink_to(root / "suites" / "chat.jsonl")
    proc = specrun(root, "validate", *[i for i in inputs if i != "-i"])
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: 2 cases in 1 suite files", proc.stderr
    proc = specrun(root, *inputs, "-o", "output-run.jsonl", "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(2 test cases)" in proc.stdout and "Total:     2" in proc.stdout
    assert "already loaded: a file is read once" in proc.stderr
    stream = records(root / "output-run.jsonl")
    assert stream[0]["total_cases"] == 2 and stream[-1]["total"] == 2
    assert sum(r["type"] == "result" for r in stream) == 2
    assert calls(root) == ["hi", "hi again"]


def test_a_report_found_by_a_folder_search_is_named_as_one(tmp_path: Path) -> None:
    """A report under a suite name (written before this rule, or copied in) is no silent skip:
    one clear problem instead of a screen of schema errors."""
    root = project(tmp_path)
    proc = specrun(root, "suites/chat.jsonl", "-o", "old.jsonl", "-o", "old.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (root / "old.jsonl").rename(root / "suites" / "old.jsonl")
    (root / "old.json").rename(root / "suites" / "old.json")
    proc = specrun(root, "validate", "suites")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"suites/{name}:1:1: a report specrun wrote, not a suite: rename it output-*.jsonl or output-*.json"
        " (folder searches skip those), or move it out of the suite folder"
        for name in ("old.json", "old.jsonl")
    ] + ["specrun: 2 problems in 2 files"]
