"""Faults of the agent under test, through the CLI: each makes only its case an error, the run goes on.

An ``http`` target points at tests/support/llm_server.py, whose responder misbehaves on cue (the
case input names the fault); python agents crash in every way a function can. Every run must end
on its own, quickly, without asyncio or aiohttp complaining about what was left open.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.cli import at_once
from support.llm_server import LLMServer

SPECRUN = str(Path(sys.executable).with_name("specrun"))
LEFTOVERS = ("Unclosed client session", "Unclosed connector", "Task was destroyed", "Traceback", "never awaited")

AGENTS = """
import asyncio, os, sys

def crash(messages, ctx):
    raise RuntimeError("agent blew up on " + messages[-1].text)

async def async_crash(messages, ctx):
    await asyncio.sleep(0)
    raise ValueError("async agent blew up")

def exits(messages, ctx):
    sys.exit(3)

async def async_exits(messages, ctx):
    raise SystemExit("bye")

def interrupts(messages, ctx):
    raise KeyboardInterrupt

def unserialisable(messages, ctx):
    return object()

def echo(messages, ctx):
    return messages[-1].text

def ExitingBefore(ctx, case):
    sys.exit(1)

async def InterruptingAfter(ctx, case, result, data):
    raise KeyboardInterrupt

def exiting_script(output, messages, expected):
    sys.exit("script gave up")
"""


def faulty(body: dict[str, Any]) -> dict[str, Any]:
    """The behaviour named by the last user message."""
    text = body["messages"][-1]["content"]
    return {
        "hang": {"hang": True},
        "garbage": {"body": "<html>not json</html>"},
        "drop": {"drop": True},
        "server-error": {"status": 500},
        "rate-limited": {"status": 429, "headers": {"retry-after": "0"}},
        "empty": {"body": ""},
        "no-choices": {"body": '{"id": "x"}'},
    }.get(text, {"content": f"echo: {text}"})


def project(tmp_path: Path, url: str, cases: list[dict], agent_extra: str = "") -> None:
    (tmp_path / "specrun.yaml").write_text("timeout: 20s\n")
    (tmp_path / "agent.yaml").write_text(f"target:\n  type: http\n  url: {url}/chat/completions\n{agent_extra}")
    (tmp_path / "agents_mod.py").write_text(AGENTS)
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def run(tmp_path: Path, *args: str, limit: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """specrun in a subprocess; it must end by itself within ``limit`` seconds."""
    started = time.monotonic()
    proc = subprocess.run(
        [SPECRUN, "suite.jsonl", "-o", "out.jsonl", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=limit,
        env={**os.environ, "PYTHONWARNINGS": "default", "PYTHONASYNCIODEBUG": ""},
    )
    for leftover in LEFTOVERS:
        assert leftover not in proc.stderr, proc.stderr
    return proc, time.monotonic() - started


def results(tmp_path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "start" and lines[-1]["type"] == "summary"
    return {r["id"]: r for r in lines if r["type"] == "result"}


@pytest.fixture
def server():
    with LLMServer(faulty) as s:
        yield s


def test_every_http_fault_errors_only_its_case(tmp_path, server):
    faults = ["hang", "garbage", "drop", "server-error", "rate-limited", "empty", "no-choices"]
    # Only the hung request waits out its timeout, so it is short; the others have 1 s to fail.
    cases = [{"id": f, "input": f, "timeout": "100ms" if f == "hang" else "1s"} for f in faults]
    cases += [
        {"id": f"fine{i}", "input": f"hello {i}", "assertions": [{"type": "contains", "value": f"hello {i}"}]}
        for i in range(6)
    ]
    cases.append({"id": "crash", "input": "x", "target": "python:agents_mod:crash"})
    project(tmp_path, server.base_url, cases)
    proc, took = run(tmp_path, "--parallel", "4")
    assert proc.returncode == 1, proc.stderr
    assert took < 20  # the hung request is abandoned at its case timeout
    got = results(tmp_path)
    assert len(got) == len(cases)
    assert all(got[f"fine{i}"]["status"] == "passed" for i in range(6))
    errors = {k: v["error"] for k, v in got.items() if v["status"] == "error"}
    assert set(errors) == {*faults, "crash"}
    assert errors["hang"] == "timeout after 100ms"
    assert errors["garbage"].startswith("invalid JSON from agent: <html>not json</html>")
    assert errors["drop"].startswith(f"connection to {server.base_url}/chat/completions failed: ")
    assert errors["server-error"].startswith(f"HTTP 500 from {server.base_url}/chat/completions: ")
    assert "scripted 500" in errors["server-error"]
    assert errors["rate-limited"].startswith("HTTP 429 from ")
    assert errors["empty"].startswith("invalid JSON from agent")
    assert errors["no-choices"].startswith("reply has no choices[0].message")
    assert errors["crash"] == "agent error: RuntimeError: agent blew up on x"
    # The console says the same, one line per failure, and the summary counts them.
    assert "timeout after 100ms" in proc.stdout and "HTTP 429" in proc.stdout
    summary = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-1])
    assert (summary["passed"], summary["errors"], summary["not_run"]) == (6, 8, 0)


def limited_run(folder: Path, agent_extra: str) -> tuple[subprocess.CompletedProcess, dict[str, dict], Counter[str]]:
    """A run against a server answering each ``flaky`` input 429 the first time, ``broken``
    503 always: the run, its results and how often the server saw each input."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def once_limited(body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        with lock:
            seen[text] += 1
            first = seen[text] == 1
        if text.startswith("flaky") and first:
            return {"status": 429, "headers": {"retry-after": "0"}}
        if text == "broken":
            return {"status": 503, "headers": {"retry-after": "0"}}
        return {"content": f"echo: {text}"}

    folder.mkdir()
    with LLMServer(once_limited) as server:
        cases = [{"id": f"flaky{i}", "input": f"flaky{i}"} for i in range(4)] + [{"id": "broken", "input": "broken"}]
        project(folder, server.base_url, cases, agent_extra)
        proc, _ = run(folder, "--parallel", "5")
    return proc, results(folder), seen


def test_retries_opt_in_turns_a_429_then_200_into_a_pass(tmp_path):
    # Both runs at once, each with a server of its own: two processes one after the other cost twice.
    (proc, got, _), (retried, got_retried, seen) = at_once(
        functools.partial(limited_run, tmp_path / "default", ""),
        functools.partial(limited_run, tmp_path / "retries", "  retries: 2\n"),
    )
    assert proc.returncode == 1 and {r["status"] for r in got.values()} == {"error"}  # no retries by default
    assert [got_retried[f"flaky{i}"]["status"] for i in range(4)] == ["passed"] * 4
    assert seen["flaky0"] == 2  # one 429, one answer
    assert got_retried["broken"]["status"] == "error" and got_retried["broken"]["error"].startswith("HTTP 503 from ")
    assert seen["broken"] == 3  # the first try and two retries
    assert retried.returncode == 1


CRASHES = {
    "crash": "agent error: RuntimeError: agent blew up on x",
    "async_crash": "agent error: ValueError: async agent blew up",
    "exits": "agent error: SystemExit: 3",
    "async_exits": "agent error: SystemExit: bye",
    "interrupts": "agent error: KeyboardInterrupt",
    "unserialisable": "agent returned object; expected str, dict, list or specrun.Response",
}


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """One run with a case per crashing function, between a crash and a case that must still
    pass; the tests only read it (a specrun process per function cost 0.3-1 s each)."""
    tmp_path = tmp_path_factory.mktemp("crashes")
    cases = [{"id": "before", "input": "a", "target": "python:agents_mod:crash"}]
    cases += [{"id": function, "input": "x", "target": f"python:agents_mod:{function}"} for function in CRASHES]
    cases.append({"id": "after", "input": "fine", "assertions": [{"type": "contains", "value": "fine"}]})
    with LLMServer() as server:
        project(tmp_path, server.base_url, cases)
        proc, _ = run(tmp_path, "--parallel", "2")
    return proc, results(tmp_path)


@pytest.mark.parametrize(("function", "message"), CRASHES.items())
def test_a_crashing_python_agent_errors_its_case_and_the_run_goes_on(crashed, function, message):
    proc, got = crashed
    assert got[function]["status"] == "error"
    assert got[function]["error"].startswith(message), got[function]["error"]
    assert got["after"]["status"] == "passed"
    assert proc.returncode == 1


def test_user_code_calling_sys_exit_fails_its_case_not_the_run(tmp_path):
    """sys.exit() or KeyboardInterrupt in a hook or a script assertion is that case's error."""
    echo = "python:agents_mod:echo"
    cases = [
        {"id": "before", "input": "x", "target": echo, "before": "agents_mod.ExitingBefore"},
        {"id": "after", "input": "x", "target": echo, "after": "agents_mod.InterruptingAfter"},
        {
            "id": "script",
            "input": "x",
            "target": echo,
            "assertions": [{"type": "script", "script": "agents_mod.exiting_script"}],
        },
        {"id": "fine", "input": "x", "target": echo},
    ]
    with LLMServer() as server:
        project(tmp_path, server.base_url, cases)
        proc, _ = run(tmp_path, "--parallel", "2")
    got = results(tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert got["before"]["error"] == "before hook agents_mod.ExitingBefore failed: HookExit: SystemExit(1)"
    assert got["after"]["error"] == "after hook agents_mod.InterruptingAfter failed: HookExit: KeyboardInterrupt()"
    assert got["script"]["status"] == "error"
    assert got["script"]["assertions"][0]["message"].endswith("raised SystemExit: script gave up")
    assert got["fine"]["status"] == "passed"


class HoldsTheFirstBurst(LLMServer):
    """Lets no request of the first burst in until ``burst`` have arrived (or 10 s passed).

    A loaded specrun sends its 32 first calls more slowly than this server answers them: the
    first replies came back while the burst was still going out, lowering the limit before
    the last calls were sent, so the server saw only part of the burst. Held until the whole
    burst is there, it sees what specrun really sent before it knew anything."""

    def __init__(self, responder: Any, burst: int):
        super().__init__(responder)
        self.burst, self.arrived = burst, 0
        self._all_in = asyncio.Event()

    async def _chat(self, request: Any) -> Any:
        # The body first (aiohttp keeps it for the handler): let in, the held requests then all
        # count themselves in flight in one loop turn, none waiting for its body meanwhile.
        await request.read()
        self.arrived += 1  # the server's own loop thread: no lock needed
        if self.arrived <= self.burst:
            if self.arrived == self.burst:
                self._all_in.set()
            # The last one waits the same way: none starts its reply before all are let in.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_in.wait(), 10)  # a deadline: the burst is fast
            self._all_in.set()  # on time or not, the burst is over
        return await super()._chat(request)


def test_concurrency_halves_when_the_endpoint_answers_bursts_with_429(tmp_path):
    """The server takes 8 requests at once and answers 429 beyond; specrun runs 32 at once."""
    observed: list[int] = []

    def bouncer(body: dict[str, Any]) -> dict[str, Any]:
        observed.append(server.in_flight)
        if server.in_flight > 8:
            # Refused quickly, answered slowly, as real servers do: a 429 reaches specrun before
            # the answers to the calls sent with it, even when a loaded specrun spreads a burst
            # over 20 ms. (Answered after them, as at 0.02 s against 0.03 s, the successes raised
            # the limit first, one per call the server took: a burst of 16 became one of 24.)
            return {"status": 429, "headers": {"retry-after": "0"}, "delay": 0.01}
        return {"content": "ok", "delay": 0.04}

    server = HoldsTheFirstBurst(bouncer, burst=32)
    with server:
        # 96 cases are some 160 calls: the later half, read below, comes well after the first
        # burst's halving on a loaded machine too (160 cases paid 0.35 s more for the same saw).
        cases = [{"id": f"c{i}", "input": f"q{i}"} for i in range(96)]
        project(tmp_path, server.base_url, cases, "  retries: 30\n")
        proc, _ = run(tmp_path, "--parallel", "32")
    got = results(tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert len(got) == 96
    # The first burst: nothing was known yet, all 32 went out.
    assert server.max_in_flight == 32, (server.max_in_flight, server.arrived)
    later = sorted(observed[len(observed) // 2 :])
    # After the first 429s the limit halves, then grows by one per success and halves again on
    # the next 429: the concurrency the server sees saws around the 8 it takes, far from 32.
    # (It grows only while specrun fills it: a loaded specrun that kept fewer calls in flight
    # used to raise it back to unbounded, then sent its backlog at once, 24-29 in flight.)
    assert later[len(later) // 2] <= 10, later
    assert later[-1] <= 20, observed


def test_cases_queued_by_the_limiter_do_not_time_out(tmp_path):
    """Throttled to what the server takes, cases wait longer than their timeout for a slot:
    that wait is specrun's, so it neither times the case out nor counts as its latency."""
    with LLMServer(delay=0.05) as server:
        latency = [{"type": "latency", "max": 450}]  # the queue's time (up to 550 ms) is not the agent's latency
        cases = [{"id": f"c{i}", "input": "q", "timeout": "500ms", "assertions": latency} for i in range(24)]
        cases += [{"id": "slow-agent", "input": "q", "timeout": "500ms", "target": "python:agents_mod:slow"}]
        # The server takes 2 calls at once (max_connections): each call is one 0.05 s reply, far
        # inside 450 ms however loaded the machine (the server's thread may share this process
        # with the tests' own litellm import). Left to find that limit by 429s (as
        # test_concurrency_halves_... does), the cases paid for a storm of rejected round trips,
        # which are their own time, and timed out under load.
        project(tmp_path, server.base_url, cases, "  max_connections: 2\n")
        (tmp_path / "agents_mod.py").write_text(AGENTS + "\nasync def slow(m, c):\n    await asyncio.sleep(30)\n")
        proc, _ = run(tmp_path, "--parallel", "25")
    got = results(tmp_path)
    queued = [r for k, r in got.items() if k != "slow-agent"]
    statuses = Counter(r["status"] for r in queued)
    assert statuses == {"passed": 24}, [(r["error"], r["duration_ms"]) for r in queued if r["status"] != "passed"]
    assert server.max_in_flight == 2  # the other cases queued in specrun
    # 24 replies of 0.05 s, 2 at once: the last cases waited at least 0.55 s for a slot, past
    # their 0.5 s timeout, took at least 0.6 s in all, and passed.
    assert max(r["duration_ms"] for r in queued) > 550
    assert got["slow-agent"]["error"] == "timeout after 500ms"  # the case timeout still works
    assert proc.returncode == 1


def test_unreachable_endpoint_is_an_error_per_case_not_a_crash(tmp_path):
    cases = [{"id": f"c{i}", "input": "x"} for i in range(3)]
    project(tmp_path, "http://127.0.0.1:9", cases)  # the discard port: nothing listens
    proc, took = run(tmp_path, "--parallel", "3")
    got = results(tmp_path)
    assert proc.returncode == 1 and took < 20
    assert all(
        r["error"].startswith("connection to http://127.0.0.1:9/chat/completions failed: ") for r in got.values()
    )
