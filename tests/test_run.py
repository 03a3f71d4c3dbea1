"""The run command end to end: verdicts, timeouts, crashes, fail-fast, hooks, environment, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import support.cli

SPECRUN = str(Path(sys.executable).with_name("specrun"))

AGENT = """
import asyncio, json, os, time

CALLS = []

def echo(messages, ctx):
    return messages[-1].text

def chatty(messages, ctx):
    print("debug: thinking about", messages[-1].text)
    return {"answer": messages[-1].text}

async def slow(messages, ctx):
    await asyncio.sleep(float(messages[-1].text))
    return "done"

def crash(messages, ctx):
    raise RuntimeError("boom " + messages[-1].text)

def leaks(messages, ctx):
    return _connect(os.environ["DB_PASSWORD"])

def _connect(password):
    raise ConnectionError("login refused for " + password)

def env(messages, ctx):
    return {"user": ctx.user, "team": ctx.team, "locale": ctx.locale, "extra": ctx.extra}

def record(messages, ctx):
    CALLS.append(("agent", ctx.case_id))
    return "ok"
"""

HOOKS = """
import json, os
from agent_mod import CALLS

LOG = os.environ["HOOK_LOG"]

def _log(*event):
    with open(LOG, "a") as fh:
        fh.write(json.dumps(event) + "\\n")

def BeforeAll(ctx, cases):
    _log("before_all", len(cases))
    return {"data": "global"}

def AfterAll(ctx, results, data):
    _log("after_all", [r["status"] for r in results], data)

def Before(ctx, case):
    _log("before", case.id)
    return {"data": {"token": case.id}}

def After(ctx, case, result, data):
    _log("after", case.id, result.status, data)

def BrokenBefore(ctx, case):
    raise ValueError("no database")
"""


def make_project(tmp_path: Path, cases: list[dict], function: str = "echo", name: str = "suite.jsonl") -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "agent_mod.py").write_text(AGENT)
    (tmp_path / "hooks_mod.py").write_text(HOOKS)
    (tmp_path / "agent.yaml").write_text(f"target: python:agent_mod:{function}\n")
    suite = tmp_path / name
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return suite


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return support.cli.run_cli(args, cwd, full_env)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def results_by_id(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in records(path) if r["type"] == "result"}


def test_all_pass_exit_0_and_streams_jsonl(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "hello", "assertions": [{"type": "contains", "value": "hell"}]}])
    proc = run("suite.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = records(tmp_path / "out.jsonl")
    assert [r["type"] for r in lines] == ["start", "result", "summary"]
    assert lines[1]["status"] == "passed" and lines[1]["output"] == "hello"
    assert lines[2]["passed"] == 1 and lines[2]["total"] == 1
    assert "ALL TESTS PASSED" in proc.stdout


def test_default_output_under_the_project_root(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run("suite.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("output-*.jsonl"))  # not next to the suites any more
    runs = tmp_path / ".specrun" / "runs"
    outputs = list(runs.glob("output-*.jsonl"))
    assert len(outputs) == 1 and len(outputs[0].stem) == len("output-20261130101010")
    assert f"Output:    .specrun/runs/{outputs[0].name}" in proc.stdout
    assert (tmp_path / ".specrun" / ".gitignore").read_text().splitlines()[-1] == "*"  # git ignores it
    # a second run does not pick up the first run's output as a suite
    proc = run(".", "-o", "output-again.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in records(tmp_path / "output-again.jsonl") if r["type"] == "result"] == ["a"]


def test_failed_assertion_exit_1_shows_expected_and_actual(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "hello", "assertions": [{"type": "contains", "value": "bye"}]}])
    proc = run("suite.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 1
    result = results_by_id(tmp_path / "out.jsonl")["a"]
    assert result["status"] == "failed"
    assert result["assertions"][0]["status"] == "failed"
    assert "bye" in proc.stdout and "FAILED" in proc.stdout


def test_negate_and_custom_message(tmp_path):
    cases = [
        {"id": "a", "input": "hello", "assertions": [{"type": "contains", "value": "bye", "negate": True}]},
        {
            "id": "b",
            "input": "hello",
            "assertions": [{"type": "contains", "value": "he", "negate": True, "message": "no greeting"}],
        },
    ]
    make_project(tmp_path, cases)
    proc = run("suite.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert by_id["a"]["status"] == "passed"
    assert by_id["b"]["status"] == "failed" and "no greeting" in by_id["b"]["assertions"][0]["message"]
    assert proc.returncode == 1


def test_hanging_agent_errors_at_timeout_while_others_finish(tmp_path):
    cases = [
        {"id": "hang", "input": "30", "timeout": "300ms"},
        {"id": "quick1", "input": "0"},
        {"id": "quick2", "input": "0.1"},
    ]
    make_project(tmp_path, cases, function="slow")
    started = time.monotonic()
    proc = run("suite.jsonl", "-o", "out.jsonl", "--parallel", "3", cwd=tmp_path)
    assert time.monotonic() - started < 20
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert by_id["hang"]["status"] == "error" and by_id["hang"]["error"] == "timeout after 300ms"
    assert by_id["quick1"]["status"] == by_id["quick2"]["status"] == "passed"
    assert proc.returncode == 1


def test_global_timeout_flag_and_case_timeout_wins(tmp_path):
    # b sleeps twice the flag's timeout: only its own, longer one lets it pass
    cases = [{"id": "a", "input": "2"}, {"id": "b", "input": "0.4", "timeout": "5s"}]
    make_project(tmp_path, cases, function="slow")
    run("suite.jsonl", "-o", "out.jsonl", "--timeout", "200ms", "--parallel", "2", cwd=tmp_path)
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert by_id["a"]["error"] == "timeout after 200ms"
    assert by_id["b"]["status"] == "passed"


def test_crashing_agent_is_an_error_not_the_run(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}], function="crash")
    proc = run("suite.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 1
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert by_id["a"]["status"] == "error" and "RuntimeError: boom x" in by_id["a"]["error"]
    assert by_id["b"]["status"] == "error"
    assert "Traceback" not in proc.stdout + proc.stderr


def test_fail_fast_under_parallel_stops_scheduling_and_cancels(tmp_path):
    cases = [{"id": "fail", "input": "0.1", "assertions": [{"type": "contains", "value": "nope"}]}]
    cases += [{"id": f"slow{i}", "input": "5"} for i in range(2)]
    cases += [{"id": f"later{i}", "input": "0"} for i in range(20)]
    make_project(tmp_path, cases, function="slow")
    started = time.monotonic()
    proc = run("suite.jsonl", "-o", "out.jsonl", "--parallel", "3", "--fail-fast", cwd=tmp_path)
    assert time.monotonic() - started < 4.5  # the 5 s cases were cancelled
    assert proc.returncode == 1
    lines = records(tmp_path / "out.jsonl")
    by_id = {r["id"]: r for r in lines if r["type"] == "result"}
    assert by_id["fail"]["status"] == "failed"
    assert {by_id["slow0"]["status"], by_id["slow1"]["status"]} == {"skipped"}
    assert "fail-fast" in by_id["slow0"]["error"]
    assert not any(k.startswith("later") for k in by_id)
    assert lines[-1]["not_run"] == 20


def test_hook_order_and_after_always_runs(tmp_path):
    log = tmp_path / "hooks.log"
    cases = [
        {"id": "ok", "input": "x", "before": "hooks_mod.Before", "after": "hooks_mod.After"},
        {"id": "crash", "input": "x", "before": "hooks_mod.Before", "after": "hooks_mod.After"},
        {"id": "nodb", "input": "x", "before": "hooks_mod.BrokenBefore", "after": "hooks_mod.After"},
    ]
    suite = make_project(tmp_path, cases, function="echo")
    # the second case crashes: use a per-case target
    data = [json.loads(line) for line in suite.read_text().splitlines()]
    data[1]["target"] = "python:agent_mod:crash"
    suite.write_text("".join(json.dumps(c) + "\n" for c in data))
    proc = run(
        "suite.jsonl",
        "-o",
        "out.jsonl",
        "--before",
        "hooks_mod.BeforeAll",
        "--after",
        "hooks_mod.AfterAll",
        cwd=tmp_path,
        env={"HOOK_LOG": str(log)},
    )
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events[0] == ["before_all", 3]
    assert events[1:3] == [["before", "ok"], ["after", "ok", "passed", {"token": "ok"}]]
    assert events[3:5] == [["before", "crash"], ["after", "crash", "error", {"token": "crash"}]]
    assert events[5] == ["after", "nodb", "error", None]
    assert events[6] == ["after_all", ["passed", "error", "error"], "global"]
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert "before hook hooks_mod.BrokenBefore failed: ValueError: no database" in by_id["nodb"]["error"]
    assert 'in BrokenBefore\n    raise ValueError("no database")' in by_id["nodb"]["traceback"]
    assert proc.returncode == 1


def test_environment_priority_cli_over_case_over_default(tmp_path):
    cases = [
        {"id": "default", "input": "x"},
        {"id": "case", "input": "x", "user": "alice", "team": "red", "locale": "fr-fr"},
    ]
    make_project(tmp_path, cases, function="env")
    (tmp_path / "ctx.json").write_text(json.dumps({"tenant": "acme"}))
    run("suite.jsonl", "-o", "a.jsonl", "--ctx", "ctx.json", cwd=tmp_path)
    by_id = results_by_id(tmp_path / "a.jsonl")
    assert by_id["default"]["output"] == {
        "user": "test-user",
        "team": "test-team",
        "locale": "en-us",
        "extra": {"tenant": "acme"},
    }
    assert by_id["case"]["output"]["user"] == "alice" and by_id["case"]["output"]["locale"] == "fr-fr"
    run("suite.jsonl", "-o", "b.jsonl", "-u", "admin", "-t", "ops", cwd=tmp_path)
    by_id = results_by_id(tmp_path / "b.jsonl")
    assert by_id["case"]["output"]["user"] == "admin" and by_id["case"]["output"]["team"] == "ops"
    assert by_id["case"]["output"]["locale"] == "fr-fr"


def test_skip_run_filter_and_dry_run(tmp_path):
    cases = [
        {"id": "keep-1", "input": "x"},
        {"id": "keep-2", "input": "x", "skip": "flaky upstream"},
        {"id": "other", "input": "x"},
    ]
    make_project(tmp_path, cases)
    proc = run("suite.jsonl", "-o", "out.jsonl", "--run", "^keep", cwd=tmp_path)
    assert proc.returncode == 0
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert set(by_id) == {"keep-1", "keep-2"}
    assert by_id["keep-2"]["status"] == "skipped" and by_id["keep-2"]["error"] == "flaky upstream"
    proc = run("suite.jsonl", "-o", "dry.jsonl", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0 and "keep-1" in proc.stdout and "other" in proc.stdout
    assert not (tmp_path / "dry.jsonl").exists()


def test_direct_message_mode_prints_the_answer_alone_on_stdout(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run("-i", "what is up", "-n", "python:agent_mod:chatty", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"answer": "what is up"}  # pipeable: `specrun -i ... | jq` reads it
    assert "Agent Test" in proc.stderr and "ALL TESTS PASSED" in proc.stderr
    assert "debug: thinking about what is up" in proc.stderr  # what the agent prints, too
    assert not list(tmp_path.glob("output-*.jsonl"))
    proc = run("-i", "what is up", "-n", "python:agent_mod:crash", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "")  # no answer: not even `null`
    assert "agent error: RuntimeError: boom what is up" in proc.stderr


def test_an_agents_exception_keeps_its_traceback_masked(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}], function="leaks")
    env = {"DB_PASSWORD": "hunter2-but-longer"}
    proc = run("suite.jsonl", "-o", "out.jsonl", "-o", "report.json", "-o", "report.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr  # only with -v or --debug
    trace = results_by_id(tmp_path / "out.jsonl")["a"]["traceback"]
    # The agent's frames, from its function on: none of specrun's above it.
    assert trace.startswith('Traceback (most recent call last):\n  File "'), trace
    assert re.search(r'agent_mod.py", line \d+, in leaks\n    return _connect\(', trace) and "in _connect" in trace
    assert "/specrun/" not in trace and "specrun_plugins" not in trace and "threading" not in trace
    assert trace.endswith("ConnectionError: login refused for [REDACTED:DB_PASSWORD]\n")
    assert json.loads((tmp_path / "report.json").read_text())["results"][0]["traceback"] == trace
    assert "in _connect" in (tmp_path / "report.xml").read_text()  # in the <error> element, for CI
    assert "hunter2" not in "".join(p.read_text() for p in tmp_path.glob("report.*"))
    for flag in ("-v", "--debug"):
        proc = run("suite.jsonl", flag, cwd=tmp_path, env=env)
        assert "      Traceback (most recent call last):" in proc.stdout, flag
        assert "in _connect" in proc.stdout and "hunter2" not in proc.stdout


def test_j_is_parallel(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run("suite.jsonl", "-j", "3", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert records(tmp_path / "out.jsonl")[0]["parallel"] == 3


@pytest.mark.parametrize(
    "args",
    [
        ["suite.jsonl", "--debug", "--dry-run"],
        ["--debug", "suite.jsonl", "--dry-run"],
        ["--debug", "validate", "suite.jsonl"],
        ["validate", "suite.jsonl", "--debug"],
        ["--debug", "-i", "hi", "-n", "python:agent_mod:echo", "--dry-run"],
    ],
)
def test_debug_works_anywhere_on_the_command_line(tmp_path, args):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 0 and "Error" not in proc.stderr, proc.stderr


def test_debug_after_the_paths_shows_the_traceback_of_an_error(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run("suite.jsonl", "-n", "missing.agent", "--debug", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown agent 'missing.agent'" in proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr


def test_bad_input_exit_2_and_no_agent_exit_2(tmp_path):
    suite = make_project(tmp_path, [{"id": "a", "input": "x", "assertions": [{"type": "nope"}]}])
    proc = run("suite.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and f"{suite.name}:1:" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "agent.yaml").unlink()
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    proc = run("suite.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "no agent to test" in proc.stderr
    proc = run("suite.jsonl", "-n", "missing.agent", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown agent 'missing.agent'" in proc.stderr
    proc = run("suite.jsonl", "-n", "python:agent_mod:nothere", cwd=tmp_path)
    assert proc.returncode == 2 and "nothere" in proc.stderr
    proc = run("--parallel", "0", "suite.jsonl", cwd=tmp_path)
    assert proc.returncode == 2


def test_runtime_failure_exit_3(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}])
    proc = run("suite.jsonl", "--before", "hooks_mod.BrokenBefore", cwd=tmp_path, env={"HOOK_LOG": "/dev/null"})
    assert proc.returncode == 3 and "BeforeAll hook hooks_mod.BrokenBefore failed" in proc.stderr


def test_agent_output_cannot_restyle_console(tmp_path):
    make_project(
        tmp_path,
        [{"id": "a", "input": "[red]x[/red] \x1b[31mred\x1b[0m", "assertions": [{"type": "contains", "value": "zzz"}]}],
    )
    proc = run("suite.jsonl", "-o", "out.jsonl", "-v", cwd=tmp_path, env={"TERM": "xterm", "FORCE_COLOR": "1"})
    assert "[red]x[/red]" in proc.stdout  # printed literally, not interpreted
    assert "\x1b[31mred" not in proc.stdout


SEED_V1 = [
    {"id": "T001", "input": "Simple text input"},
    {"id": "T002", "input": {"role": "user", "content": "Message with role"}},
    {"id": "T003", "input": {"role": "user", "content": [{"type": "text", "text": "ContentPart array"}]}},
    {
        "id": "T004",
        "input": [
            {"role": "user", "content": "First message"},
            {"role": "assistant", "content": "Response"},
            {"role": "user", "content": "Follow-up"},
        ],
    },
    {"id": "T005", "input": "Text input", "expected": {"keywords": ["keyword1", "keyword2"]}},
    {"id": "T006", "input": "Test with specific user", "user": "admin", "team": "ops-team"},
    {"id": "T007", "input": "Hello", "assert": {"type": "contains", "value": "need_search"}},
    {
        "id": "T008",
        "input": "What's the weather?",
        "assert": {"type": "json_path", "path": "$.need_search", "value": True},
    },
    {
        "id": "T009",
        "input": "Calculate 2+2",
        "assert": [
            {"type": "json_path", "path": "$.need_search", "value": False},
            {"type": "json_path", "path": "$.confidence", "value": 0.99},
            {"type": "not_contains", "value": "error"},
        ],
    },
    {"id": "T010", "input": "Hello", "assert": {"type": "contains", "value": "error", "negate": True}},
]

SEED_AGENT = """
def answer(messages, ctx):
    text = messages[-1].text
    if text == "Text input":
        return {"keywords": ["keyword1", "keyword2"]}
    return {"need_search": text.endswith("?"), "confidence": 0.99, "echo": text}
"""


def test_seed_v1_jsonl_runs_unchanged(tmp_path):
    (tmp_path / "seed_agent.py").write_text(SEED_AGENT)
    (tmp_path / "package").mkdir()
    suite = tmp_path / "package" / "tests"
    suite.mkdir()
    (tmp_path / "package" / "agent.yaml").write_text("target: python:seed_agent:answer\n")
    (tmp_path / "package" / "seed_agent.py").write_text(SEED_AGENT)
    (suite / "inputs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in SEED_V1))
    proc = run("-i", "package/tests/inputs.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (output,) = list((tmp_path / ".specrun" / "runs").glob("output-*.jsonl"))
    by_id = {r["id"]: r for r in records(output) if r["type"] == "result"}
    assert len(by_id) == 10 and all(r["status"] == "passed" for r in by_id.values())


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version(flag, tmp_path):
    proc = run(flag, cwd=tmp_path)
    assert proc.returncode == 0 and ("Usage" in proc.stdout or "specrun" in proc.stdout)


SEED_V2 = [
    {"id": "T001", "input": "Hello", "assertions": [{"type": "contains", "value": "Hi"}]},
    {
        "id": "T002",
        "name": "Expense submission - final confirmation",
        "input": [
            {"role": "user", "content": "I want to submit an expense"},
            {"role": "assistant", "content": "What type of expense would you like to submit?"},
            {"role": "user", "content": "Business travel to Beijing, $3500"},
            {"role": "assistant", "content": "I'll create an expense for business travel, $3500. Please confirm."},
            {"role": "user", "content": "Yes, confirm"},
        ],
        "assertions": [{"type": "contains", "value": "submitted"}, {"type": "tool_called", "name": "create_expense"}],
    },
    {
        "id": "T003",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What's in this receipt?"},
                    {"type": "image", "source": "file://./fixtures/receipt.jpg"},
                ],
            }
        ],
        "assertions": [{"type": "contains", "value": "amount"}],
    },
    {"id": "T004", "input": "order status", "assertions": [{"type": "regex", "pattern": "order-\\d+"}]},
    {
        "id": "T005",
        "input": "status json",
        "assertions": [
            {"type": "json_path", "path": "$.status", "value": "ok"},
            {"type": "type", "path": "$.count", "value": "number"},
            {"type": "equals", "value": {"status": "ok", "count": 3}},
        ],
    },
    {
        "id": "T006",
        "before": "env_test.Before",
        "after": "env_test.After",
        "input": "Submit a $500 travel expense",
        "assertions": [{"type": "tool_called", "name": "create_expense"}],
    },
]

SEED_V2_AGENT = """
from specrun import Response, ToolCall

def answer(messages, ctx):
    last = messages[-1]
    if last.attachments:
        return f"The receipt shows an amount of $85.50 ({last.attachments[0]['mime']})"
    text = last.text
    if text == "Hello":
        return "Hi there"
    if text == "order status":
        return "Your order-1234 ships today"
    if text == "status json":
        return {"status": "ok", "count": 3}
    return Response("Expense submitted! Reference: EXP-001", tool_calls=[ToolCall("create_expense", {"amount": 500})])
"""

SEED_V2_HOOKS = """
def Before(ctx, case):
    return {"data": {"userId": "u-1", "testId": case.id}}

def After(ctx, case, result, before_data):
    assert before_data == {"userId": "u-1", "testId": case.id}
"""


def test_seed_v2_jsonl_runs_unchanged(tmp_path):
    package = tmp_path / "assistants" / "expense"
    (package / "src").mkdir(parents=True)
    (package / "tests" / "fixtures").mkdir(parents=True)
    (package / "agent.yaml").write_text("target: python:expense_seed:answer\n")
    (package / "expense_seed.py").write_text(SEED_V2_AGENT)
    (package / "src" / "env_test.py").write_text(SEED_V2_HOOKS)  # the seed keeps hooks in the agent's src/
    (package / "tests" / "fixtures" / "receipt.jpg").write_bytes(b"\xff\xd8\xff fake jpeg")
    (package / "tests" / "inputs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in SEED_V2))
    proc = run("-i", "assistants/expense/tests/inputs.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_id = results_by_id(tmp_path / "out.jsonl")
    assert len(by_id) == 6 and all(r["status"] == "passed" for r in by_id.values())
    assert "image/jpeg" in by_id["T003"]["output"]


def test_missing_case_hook_is_bad_input_before_anything_runs(tmp_path):
    make_project(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "x", "after": "hooks_mod.Nope"}])
    proc = run("suite.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 2
    assert "suite.jsonl:2:1:" in proc.stderr and "(at cases[1].after)" in proc.stderr and "Nope" in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_dry_run_names_each_dynamic_case_simulator_as_its_plugin_labels_it():
    root = Path(__file__).resolve().parents[1]
    proc = run(str(root / "suites/expense/tests/dynamic.yaml"), "--dry-run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("simulator=scripted checkpoints=") == 2
