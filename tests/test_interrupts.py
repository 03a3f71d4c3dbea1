"""Ctrl-C and SIGTERM mid-run: nothing lost, hooks still run, the report is valid and marked, exit code says so."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from support.cli import at_once

SPECRUN = str(Path(sys.executable).with_name("specrun"))

AGENT = """
import asyncio, os, time

async def slow(messages, ctx):
    with open(os.environ["STARTED_LOG"], "a") as fh:  # the test signals once the cases it names run
        fh.write(ctx.case_id + "\\n")
    await asyncio.sleep(float(messages[-1].text))
    return "done"

def blocking(messages, ctx):
    time.sleep(float(messages[-1].text))
    return "done"

async def to_thread(messages, ctx):  # the loop's default executor: asyncio.run joins its threads
    await asyncio.to_thread(time.sleep, float(messages[-1].text))
    return "done"
"""

HOOKS = """
import json, os, time

def _log(*event):
    with open(os.environ["HOOK_LOG"], "a") as fh:
        fh.write(json.dumps(event) + "\\n")

def After(ctx, case, result, data):
    _log("after", case.id, result.status, result.error)

def SlowAfter(ctx, case, result, data):
    _log("slow-after", case.id)
    time.sleep(60)

def AfterAll(ctx, results, data):
    _log("after_all", sorted(r["status"] for r in results))
"""


def project(tmp_path: Path, cases: list[dict], function: str = "slow") -> None:
    (tmp_path / "specrun.yaml").write_text("timeout: 120s\n")
    (tmp_path / "agent_mod.py").write_text(AGENT)
    (tmp_path / "hooks_mod.py").write_text(HOOKS)
    (tmp_path / "agent.yaml").write_text(f"target: python:agent_mod:{function}\n")
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "HOOK_LOG": str(tmp_path / "hooks.log"), "STARTED_LOG": str(tmp_path / "started.log")}
    return subprocess.Popen(
        [SPECRUN, "suite.jsonl", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_lines(path: Path, wanted: Callable[[list[str]], bool], what: str, limit: float = 30) -> None:
    """Poll ``path`` until ``wanted`` holds for its lines; ``limit`` is a failure deadline."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and wanted(path.read_text().splitlines()):
            return
        time.sleep(0.02)
    raise AssertionError(f"{what} never appeared in {path}")


def wait_for_results(path: Path, count: int) -> None:
    wait_for_lines(path, lambda lines: sum('"type": "result"' in line for line in lines) >= count, f"{count} results")


def wait_for_started(tmp_path: Path, *cases: str) -> None:
    """Until the agent has started each of ``cases`` (it logs them as it starts)."""
    wait_for_lines(tmp_path / "started.log", lambda lines: set(cases) <= set(lines), f"cases {cases}")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


T = TypeVar("T")


def each_at_once(calls: dict[str, Callable[[], T]]) -> dict[str, T | Exception]:
    """What each of ``calls`` returns (or raises), all run at once: independent processes that
    tests only read, on every core, each test failing only for its own."""

    def outcome(call: Callable[[], T]) -> T | Exception:
        try:
            return call()
        except Exception as exc:
            return exc

    return dict(zip(calls, at_once(*(functools.partial(outcome, call) for call in calls.values())), strict=True))


def ran(outcome: T | Exception) -> T:
    """What a call of ``each_at_once`` returned; what it raised is raised again, in its test."""
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def signalled_run(tmp_path: Path, sig: signal.Signals) -> tuple[Path, subprocess.Popen, str, str]:
    """A run in ``tmp_path`` sent ``sig`` once its quick case passed and the next three are in
    flight: the folder, the process, and what it printed."""
    cases = [{"id": "quick", "input": "0", "after": "hooks_mod.After"}]
    cases += [{"id": f"slow{i}", "input": "60", "after": "hooks_mod.After"} for i in range(2)]
    cases += [{"id": f"queued{i}", "input": "60"} for i in range(5)]  # queued0 starts when quick ends
    project(tmp_path, cases)
    proc = start(tmp_path, "--parallel", "3", "-o", "out.jsonl", "--after", "hooks_mod.AfterAll")
    try:
        wait_for_results(tmp_path / "out.jsonl", 1)
        wait_for_started(tmp_path, "slow0", "slow1", "queued0")  # in flight, queued0 where quick was
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()  # a run that did not end must not outlive the test (its agents sleep a minute)
    return tmp_path, proc, out, err


@pytest.fixture(scope="module")
def signalled(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, subprocess.Popen, str, str] | Exception]:
    """A run per signal, each a process of its own, both at once: the tests only read them."""
    signals = (signal.SIGINT, signal.SIGTERM)
    return each_at_once({s.name: functools.partial(signalled_run, tmp_path_factory.mktemp(s.name), s) for s in signals})


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_run_keeps_every_result_and_runs_hooks(signalled, sig, code):
    tmp_path, proc, out, err = ran(signalled[signal.Signals(sig).name])
    assert proc.returncode == code, err
    lines = records(tmp_path / "out.jsonl")
    results = {r["id"]: r for r in lines if r["type"] == "result"}
    assert results["quick"]["status"] == "passed"
    assert results["slow0"]["status"] == results["slow1"]["status"] == "error"
    assert results["slow0"]["error"] == "interrupted"
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["interrupted"] is True
    assert results["queued0"]["error"] == "interrupted"
    assert summary["not_run"] == 4 and summary["total"] == 4
    events = [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]
    assert ["after", "slow0", "error", "interrupted"] in events
    assert events[-1] == ["after_all", ["error", "error", "error", "passed"]]
    assert "INTERRUPTED" in out
    assert "Traceback" not in err


def test_second_ctrl_c_exits_at_once(tmp_path):
    project(tmp_path, [{"id": "slow", "input": "60", "after": "hooks_mod.SlowAfter"}])
    proc = start(tmp_path, "-o", "out.jsonl")
    wait_for_started(tmp_path, "slow")
    proc.send_signal(signal.SIGINT)  # the case is cancelled; its after hook now sleeps 60 s
    wait_for_lines(tmp_path / "hooks.log", lambda lines: any("slow-after" in line for line in lines), "slow-after", 20)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert time.monotonic() - started < 5


HUNG = ("blocking", "to_thread")


def hung_run(tmp_path: Path, function: str) -> tuple[float, int, dict[str, dict]]:
    """A run whose ``function`` agent hangs past its case's timeout: how long it took to end,
    its exit code and its results."""
    project(tmp_path, [{"id": "stuck", "input": "3600", "timeout": "200ms"}, {"id": "fine", "input": "0"}], function)
    started = time.monotonic()
    proc = start(tmp_path, "-o", "out.jsonl", "--parallel", "2")
    try:
        proc.communicate(timeout=30)
    finally:
        proc.kill()  # a run that did hang must not outlive the test (its agent sleeps an hour)
    took = time.monotonic() - started
    return took, proc.returncode, {r["id"]: r for r in records(tmp_path / "out.jsonl") if r["type"] == "result"}


@pytest.fixture(scope="module")
def hung(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[float, int, dict[str, dict]] | Exception]:
    """A run per hung agent, each a process of its own (one's way of ending must not hide the
    other's), both at once: the tests only read them."""
    return each_at_once({f: functools.partial(hung_run, tmp_path_factory.mktemp(f), f) for f in HUNG})


@pytest.mark.parametrize("function", HUNG)
def test_hung_sync_agent_does_not_keep_the_run_from_exiting(hung, function):
    took, returncode, results = ran(hung[function])
    assert took < 15
    assert results["stuck"]["error"] == "timeout after 200ms"
    assert results["fine"]["status"] == "passed"
    assert returncode == 1
