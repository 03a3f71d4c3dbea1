"""Trust: no check, hook or agent process outlives its case, and signals are always answered.

Issue 11 (3: nothing hangs; 7: hooks import the same way whatever is selected) and issue 18
(6: no process outlives its case). Each test runs the real CLI (as a process wherever signals,
hung threads or process trees are involved; else in process, ``run_cli``) or a real process
agent, and checks by pid, by file and by exit code, with generous time bounds: the machine is
loaded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from specrun_plugins.targets.process import GRACE_SECONDS
from support.cli import run_cli

from specrun.testing import Test

SPECRUN = str(Path(sys.executable).with_name("specrun"))

CHECKS = """
import os, time

def _mark(name):
    open(os.path.join(os.environ["MARKS"], name), "w").close()

def sleeps(output, input, expected):
    _mark("check-started")
    time.sleep(3600)

def spins(output, input, expected):
    _mark("check-started")
    n = 0
    while True:
        n += 1

def ok(output, input, expected):
    return True
"""

HOOKS = """
import os, time

def _mark(name):
    open(os.path.join(os.environ["MARKS"], name), "w").close()

def Hang(ctx, case, *rest):
    _mark(f"hook-{case.id}")
    time.sleep(3600)

def HangAll(ctx, *rest):
    time.sleep(3600)

def SpinAll(ctx, cases):
    _mark("before-all-started")
    while True:
        pass

def SlowAfter(ctx, case, result, data):
    _mark(f"after-started-{case.id}")
    time.sleep(float(os.environ.get("AFTER_SECONDS", "3600")))
    _mark(f"after-done-{case.id}")
"""

AGENT = """
def reply(messages, ctx):
    return "done"
"""

# Writing its report, the reporter waits for the test to have sent its signal (a mark), then a
# little longer, so that the signal is handled on the run's event loop while the report is still
# being written. A test that sends a second signal, which exits at once, never sends the mark.
REPORTER = """
import os, time

def write(messages, ctx):
    marks = os.environ["MARKS"]
    open(os.path.join(marks, "reporter-started"), "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(marks, "signal-sent")) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    return "# the report"
"""


def alive(pid: int) -> bool:
    """Running: not gone and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def gone(pids: list[int], limit: float = 5) -> list[int]:
    """The pids still running after ``limit`` seconds (orphans are reaped asynchronously)."""
    deadline = time.monotonic() + limit
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [p for p in pids if alive(p)]
    for pid in survivors:  # never leak them from the test itself
        os.kill(pid, signal.SIGKILL)
    return survivors


def make_project(tmp_path: Path, cases: list[dict], agent: str = "python:agent_mod:reply") -> Path:
    (tmp_path / "marks").mkdir()
    (tmp_path / "specrun.yaml").write_text("timeout: 60s\n")
    (tmp_path / "agent_mod.py").write_text(AGENT)
    (tmp_path / "checks_mod.py").write_text(CHECKS)
    (tmp_path / "hooks_mod.py").write_text(HOOKS)
    (tmp_path / "agent.yaml").write_text(f"target: {agent}\n")
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return tmp_path / "marks"


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_run_left_behind():
    """A run that hangs (the fault these tests look for) is killed when its test ends."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def start(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [SPECRUN, *args],
        cwd=tmp_path,
        env={**os.environ, "MARKS": str(tmp_path / "marks"), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    STARTED.append(proc)
    return proc


def wait_for(path: Path, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def results(path: Path) -> dict[str, dict]:
    found = [r for r in lines(path) if r["type"] == "result"]
    assert len({r["id"] for r in found}) == len(found), "a case has more than one result"
    return {r["id"]: r for r in found}


# -- 11.3: checks and hooks are bounded ---------------------------------------------------------


@pytest.mark.parametrize("check", ["sleeps", "spins"])
def test_a_hanging_script_check_ends_at_the_case_timeout(tmp_path, check):
    cases = [
        {
            "id": "stuck",
            "input": "x",
            "timeout": "300ms",
            "assertions": [{"type": "script", "script": f"checks_mod.{check}"}],
        },
        {"id": "fine", "input": "x", "assertions": [{"type": "script", "script": "checks_mod.ok"}]},
    ]
    make_project(tmp_path, cases)
    started = time.monotonic()
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl")
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1, err
    found = results(tmp_path / "out.jsonl")
    assert found["stuck"]["status"] == "error"
    [verdict] = found["stuck"]["assertions"]
    assert verdict["status"] == "error"
    assert f"script checks_mod.{check} did not finish within the case timeout (300ms)" in verdict["message"]
    assert found["fine"]["status"] == "passed"
    assert lines(tmp_path / "out.jsonl")[-1]["type"] == "summary"


def test_hanging_before_and_after_hooks_end_at_the_case_timeout(tmp_path):
    cases = [
        {"id": "b", "input": "x", "timeout": "300ms", "before": "hooks_mod.Hang"},
        {"id": "a", "input": "x", "timeout": "300ms", "after": "hooks_mod.Hang"},
        {"id": "fine", "input": "x"},
    ]
    make_project(tmp_path, cases)
    started = time.monotonic()
    # Both hooks hang at once; "fine" runs when a worker is let go by its hook's timeout.
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "--parallel", "2")
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1, err
    found = results(tmp_path / "out.jsonl")
    assert found["b"]["status"] == found["a"]["status"] == "error"
    assert found["b"]["error"] == "before hook hooks_mod.Hang did not finish within 300ms"
    assert found["a"]["error"] == "after hook hooks_mod.Hang did not finish within 300ms"
    assert found["fine"]["status"] == "passed"


def test_a_hanging_before_all_hook_ends_at_the_run_timeout(tmp_path):
    make_project(tmp_path, [{"id": "fine", "input": "x"}])
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "--timeout", "300ms", "--before", "hooks_mod.HangAll")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert "BeforeAll hook hooks_mod.HangAll did not finish within 300ms" in err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_cpu_bound_check_is_answered_at_once(tmp_path, sig, code):
    cases = [{"id": "busy", "input": "x", "assertions": [{"type": "script", "script": "checks_mod.spins"}]}]
    marks = make_project(tmp_path, cases)
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "-o", "out.json")
    wait_for(marks / "check-started")
    time.sleep(0.1)  # the check is spinning
    sent = time.monotonic()
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 5  # measured: ~0.1 s
    assert proc.returncode == code, err
    assert results(tmp_path / "out.jsonl")["busy"]["error"] == "interrupted"
    assert lines(tmp_path / "out.jsonl")[-1]["interrupted"] is True
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["interrupted"] is True


def test_a_signal_during_a_cpu_bound_before_all_hook_is_answered_at_once(tmp_path):
    marks = make_project(tmp_path, [{"id": "fine", "input": "x"}])
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "--before", "hooks_mod.SpinAll")
    wait_for(marks / "before-all-started")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 5
    assert proc.returncode == 143, err
    summary = lines(tmp_path / "out.jsonl")[-1]
    assert summary["interrupted"] is True and summary["not_run"] == 1


@pytest.mark.parametrize(
    ("seconds", "grace", "status"),
    [
        ("0.3", None, "passed"),  # the default grace (5 s) lets a short hook finish
        ("3600", "300ms", "error"),  # interrupt_grace cuts a hook that would run on
    ],
)
def test_a_case_interrupted_in_its_after_hook_gets_one_result(tmp_path, seconds, grace, status):
    marks = make_project(tmp_path, [{"id": "c", "input": "x", "after": "hooks_mod.SlowAfter"}])
    if grace:
        (tmp_path / "specrun.yaml").write_text(f"timeout: 60s\ninterrupt_grace: {grace}\n")
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", AFTER_SECONDS=seconds)
    wait_for(marks / "after-started-c")
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    if grace:  # interrupt_grace is honoured: the hook got its 0.3 s, not the default 5 s
        assert 0.3 <= took < 4.5, took
    else:
        assert took < 15  # a cleanup hook gets 5 s once interrupted
    assert proc.returncode == 130, err
    [result] = results(tmp_path / "out.jsonl").values()
    assert result["status"] == status
    if status == "error":
        assert result["error"] == "interrupted during after hook hooks_mod.SlowAfter"
    else:
        assert (marks / "after-done-c").exists()  # the hook was let finish
    assert lines(tmp_path / "out.jsonl")[-1]["interrupted"] is True


# -- 11.3: signals while reports are written; a second Ctrl-C ----------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_reports_are_written_lets_them_finish(tmp_path, sig):
    marks = make_project(tmp_path, [{"id": "fine", "input": "x"}])
    (tmp_path / "reporter").mkdir()
    (tmp_path / "reporter" / "rep_mod.py").write_text(REPORTER)
    (tmp_path / "reporter" / "agent.yaml").write_text("target: python:rep_mod:write\n")
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "-o", "report.md", "-r", "agents:reporter")
    wait_for(marks / "reporter-started")
    proc.send_signal(sig)
    (marks / "signal-sent").touch()
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err  # every case ran: the run is complete, and says so
    assert (tmp_path / "report.md").read_text() == "# the report"
    summary = lines(tmp_path / "out.jsonl")[-1]
    assert summary["type"] == "summary" and summary["interrupted"] is False
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_second_signal_while_reports_are_written_leaves_no_summary_and_no_temp_file(tmp_path):
    marks = make_project(tmp_path, [{"id": "fine", "input": "x"}])
    (tmp_path / "reporter").mkdir()
    (tmp_path / "reporter" / "rep_mod.py").write_text(REPORTER)
    (tmp_path / "reporter" / "agent.yaml").write_text("target: python:rep_mod:write\n")
    (tmp_path / "report.md").write_text("the old report")
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "-o", "report.md", "-r", "agents:reporter")
    wait_for(marks / "reporter-started")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert time.monotonic() - sent < 2
    assert proc.returncode == 143
    assert (tmp_path / "report.md").read_text() == "the old report"
    # The stream's summary line is written last: a stream without one says the run is incomplete.
    assert [r["type"] for r in lines(tmp_path / "out.jsonl")] == ["start", "result"]
    assert not list(tmp_path.glob(".*.tmp"))


STUBBORN_AGENT = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
mark = os.path.join(os.environ["MARKS"], "agent-" + os.environ["SPECRUN_CASE_ID"])
with open(mark + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(mark + ".tmp", mark)
print("(agent) >> ", end="", flush=True)
for line in sys.stdin:
    time.sleep(3600)
"""


def test_a_second_ctrl_c_kills_agents_that_ignore_sigterm(tmp_path):
    # A long grace: without the second Ctrl-C, ending the agents would take 10 s (the cap on
    # closing a case's session), so a quick exit shows that it was the second Ctrl-C.
    cases = [{"id": f"c{i}", "input": "x"} for i in range(2)]
    marks = make_project(tmp_path, cases, "{type: process, command: agent.py, grace: 60s}")
    (tmp_path / "agent.py").write_text(STUBBORN_AGENT)
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "--parallel", "2")
    for i in range(2):
        wait_for(marks / f"agent-c{i}")
    pids = [int((marks / f"agent-c{i}").read_text()) for i in range(2)]
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # the agents get SIGTERM, which they ignore, and the grace
    time.sleep(0.3)  # handled: two signals sent together may arrive as one
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert proc.returncode == 130
    assert gone(pids, limit=2) == []


# -- 18.6: no process outlives its case ---------------------------------------------------------

TREE_AGENT = """
import os, subprocess, sys
SLEEP = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"]
stubborn = subprocess.Popen(SLEEP)  # in the agent's group, ignores SIGTERM
own_session = subprocess.Popen(SLEEP, start_new_session=True)  # outside the group, still our child
# A setsid grandchild whose parent exits at once: orphaned, outside the group and the session.
middle = subprocess.Popen(
    [sys.executable, "-c", "import subprocess, sys; print(subprocess.Popen(sys.argv[1:], start_new_session=True,"
     " stdout=subprocess.DEVNULL).pid)", *SLEEP],
    stdout=subprocess.PIPE, text=True,
)
escaped = int(middle.stdout.readline())
middle.wait()
with open(os.path.join(os.environ["PIDS"], os.environ["SPECRUN_CASE_ID"]), "w") as f:
    f.write(" ".join(str(p) for p in (os.getpid(), stubborn.pid, own_session.pid, escaped)))
print("(agent) >> ", end="", flush=True)
for line in sys.stdin:
    print(f"echo {line.strip()}\\n(agent) >> ", end="", flush=True)
"""


def tree_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def test_no_process_an_agent_started_outlives_its_case(tmp_path):
    (tmp_path / "tree.py").write_text(TREE_AGENT)
    cases = [{"id": f"c{i}", "input": "hi", "expected": "echo hi"} for i in range(2)]
    # A short grace: the stubborn processes ignore SIGTERM and are SIGKILLed when it is over.
    make_project(tmp_path, cases, "{type: process, command: tree.py, grace: 300ms}")
    # Both cases at once, each tree ended at its own case's end; each writes its tree's pids to a
    # file named after the case, under PIDS.
    proc = start(tmp_path, "suite.jsonl", "-o", "out.jsonl", "--parallel", "2", PIDS=str(tmp_path))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    pids = [p for i in range(2) for p in tree_pids(tmp_path / f"c{i}")]
    assert len(pids) == 8
    assert gone(pids) == []


async def test_the_test_api_leaves_no_process_behind(tmp_path):
    (tmp_path / "tree.py").write_text(TREE_AGENT)
    async with Test([sys.executable, str(tmp_path / "tree.py")], env={"PIDS": str(tmp_path)}, grace=0.3) as t:
        assert await t.send("hi") == "echo hi"
        pids = tree_pids(tmp_path / "specrun.testing")
        assert all(alive(p) for p in pids)
        stopping = time.monotonic()
    took = time.monotonic() - stopping
    assert 0.3 <= took < GRACE_SECONDS - 0.1, took  # grace= is honoured: the stubborn processes got 0.3 s
    assert gone(pids) == []


# -- 11.7: hooks import the same way whatever is selected ---------------------------------------


def bot_project(tmp_path: Path, hook: str = "bot_hooks.Before") -> None:
    bot = tmp_path / "bot"
    (bot / "hooks").mkdir(parents=True)
    (tmp_path / "specrun.yaml").write_text("timeout: 60s\n")
    (bot / "agent.yaml").write_text("target: python:bot_agent:reply\nhooks: hooks\n")
    (bot / "bot_agent.py").write_text("GREETING = 'hello'\n\ndef reply(messages, ctx):\n    return GREETING\n")
    (bot / "hooks" / "bot_hooks.py").write_text(
        "import bot_agent  # the agent's own module, next to agent.yaml\n\n"
        "def Before(ctx, case):\n    return bot_agent.GREETING\n\n"
        "def After(ctx, case, result, before_data):\n    assert before_data == 'hello'\n\n"
        "def Wrong(ctx):\n    pass\n\n"
        "def WrongAfter(ctx, case, result):\n    pass\n"
    )
    cases = [
        {"id": "plain", "input": "x"},
        {"id": "one-case", "input": "x", "before": hook, "after": "bot_hooks.After"},
    ]
    (bot / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


@pytest.mark.parametrize("selection", [[], ["--run", "one-case"]])
def test_a_hook_imports_the_agents_module_whatever_is_selected(tmp_path, selection):
    bot_project(tmp_path)
    # In process: run_cli starts each call from this process's sys.path, with no module of an
    # earlier test project importable, as a new process would.
    proc = run_cli(["bot/", "-o", "out.jsonl", *selection], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results(tmp_path / "out.jsonl")["one-case"]["status"] == "passed"


@pytest.mark.parametrize(
    ("hook", "field", "expected"),
    [
        ("bot_hooks.Wrong", "before", "before(ctx, case)"),
        ("bot_hooks.WrongAfter", "after", "after(ctx, case, result, before_data)"),
    ],
)
def test_a_hook_with_the_wrong_signature_is_bad_input(tmp_path, hook, field, expected):
    bot_project(tmp_path)
    suite = tmp_path / "bot" / "suite.jsonl"
    case = {"id": "one-case", "input": "x", field: hook}
    suite.write_text(json.dumps({"id": "plain", "input": "x"}) + "\n" + json.dumps(case) + "\n")
    proc = run_cli(["bot/", "-o", "out.jsonl"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "suite.jsonl:2:" in proc.stderr
    assert f"{field}:" in proc.stderr or f".{field}" in proc.stderr
    assert f"takes {expected}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()
