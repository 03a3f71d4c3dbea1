"""The ray executor on the session's local cluster (tests/support/ray_cluster.py; the machine has
two cores): the same verdicts and reports as a local run, errors, timeouts, hooks, model calls,
per-agent resources, --fail-fast and an interrupt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import SPECRUN, run_cli
from support.llm_server import LLMServer
from support.ray_cluster import joined
from test_merge import without_timing

# Imported in the background from the start (tests/conftest.py): Ray, 0.4 s.
PRELOADS = ("ray",)

# Last: a Ray cluster and its workers take the machine's cores for a minute, which would starve
# the timing tests of the other pytest-xdist worker.
pytestmark = pytest.mark.order("last")

AGENT = """
import json, os, time

def reply(messages, ctx):
    text = messages[-1].content
    if text == "crash":
        raise RuntimeError("boom")
    if text == "hang":
        time.sleep(3)
        return "late"
    if text == "flaky" and ctx.run == 2:
        return "wrong"
    if text == "where":
        import ray
        return {"cwd_is_copy": os.getcwd() != os.environ["PROJECT_ROOT"],
                "resources": ray.get_runtime_context().get_assigned_resources()}
    if text == "wait":
        open(os.path.join(os.environ["MARKS"], ctx.case_id), "w").close()
        time.sleep(60)
    return text
"""

HOOKS = """
import json, os

def _log(*event):
    with open(os.environ["HOOK_LOG"], "a") as fh:
        fh.write(json.dumps(event) + "\\n")

def Before(ctx, case):
    _log("before", case.id, ctx.run)
    return {"token": case.id}

def After(ctx, case, result, data):
    _log("after", case.id, result.status, data)
    if case.id == "after-fails":
        raise ValueError("after hook broke")

def BrokenBefore(ctx, case):
    raise ValueError("no database")
"""

CASES = [
    {"id": "ok", "input": "hello", "expected": "hello", "before": "hooks.Before", "after": "hooks.After"},
    {"id": "wrong", "input": "hello", "expected": "goodbye"},
    {"id": "crash", "input": "crash", "after": "hooks.After"},
    {"id": "hang", "input": "hang", "timeout": "0.2s"},
    {"id": "flaky", "input": "flaky", "expected": "flaky"},
    {"id": "nodb", "input": "hello", "before": "hooks.BrokenBefore"},
    {"id": "after-fails", "input": "hello", "after": "hooks.After"},
    {"id": "skipped", "input": "hello", "skip": "not today"},
]


@pytest.fixture(scope="module")
def cluster(ray_cluster):
    """The session's cluster (tests/support/ray_cluster.py) joined for the module, as a program
    that had joined one would have it: its address."""
    import ray  # here, not at collection: Ray's import is half a second

    with joined(ray_cluster()):
        yield ray.get_runtime_context().gcs_address


def project(root: Path, cases: list[dict], config: str = "") -> Path:
    root.mkdir(parents=True)
    # The workers' environment is the cluster's: what a case needs of the driver's is forwarded.
    config = config or "timeout: 20s\nexecutor:\n  type: ray\n  env: [HOOK_LOG, MARKS, PROJECT_ROOT]\n"
    (root / "specrun.yaml").write_text(config)
    (root / "bot.py").write_text(AGENT)
    (root / "hooks.py").write_text(HOOKS)
    (root / "agent.yaml").write_text("id: bot\ntarget: python:bot:reply\n")
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def env(root: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOOK_LOG": str(root / "hooks.log"), "PROJECT_ROOT": str(root), **extra}


def hook_events(log: Path) -> list[list]:
    return sorted(json.loads(line) for line in log.read_text().splitlines())


def test_same_verdicts_and_reports_as_a_local_run(tmp_path, cluster):
    root = project(tmp_path / "p", CASES)
    reports = {}
    for executor in ("local", "ray"):  # one project, so that every path in the reports is the same
        outs = [f"{executor}.{ext}" for ext in ("json", "jsonl", "xml", "md")]
        args = ["suite.jsonl", "--runs", "2", "--parallel", "2", "--no-history", *(a for o in outs for a in ("-o", o))]
        log = root / f"hooks-{executor}.log"
        done = run_cli([*args, "--executor", executor], cwd=root, env=env(root, HOOK_LOG=str(log)))
        assert done.returncode == 1, done.stdout + done.stderr
        reports[executor] = (json.loads((root / f"{executor}.json").read_text()), hook_events(log), done.stdout)
    (local, local_hooks, _), (remote, ray_hooks, ray_out) = reports.values()
    assert without_timing(remote["results"]) == without_timing(local["results"])
    assert without_timing(remote["summary"]) == without_timing(local["summary"])
    error = {r["id"]: r["run_details"][0]["error"] for r in remote["results"]}
    assert error["crash"] == "agent error: RuntimeError: boom" and error["hang"] == "timeout after 200ms"
    assert "before hook hooks.BrokenBefore failed: ValueError: no database" in error["nodb"]
    assert "after hook hooks.After failed: ValueError: after hook broke" in error["after-fails"]
    by_id = {r["id"]: r for r in remote["results"]}
    assert (by_id["flaky"]["pass_rate"], by_id["skipped"]["status"]) == (50.0, "skipped")
    assert ray_hooks == local_hooks  # every case hook ran on the workers, with its data
    assert ["after", "ok", "passed", {"token": "ok"}] in ray_hooks
    for ext in ("jsonl", "md"):  # the stream and the text reports, line for line but the timings
        assert len((root / f"ray.{ext}").read_text().splitlines()) == len(
            (root / f"local.{ext}").read_text().splitlines()
        )
    assert "Parallel: 2" in ray_out and "agent error: RuntimeError: boom" in ray_out


def test_cases_run_in_the_shipped_project_with_the_agents_resources(tmp_path, cluster):
    root = project(tmp_path / "p", [{"id": "where", "input": "where"}])
    (root / "agent.yaml").write_text("id: bot\ntarget: python:bot:reply\nresources:\n  num_cpus: 2\n")
    done = run_cli(["suite.jsonl", "--executor", "ray", "-o", "out.jsonl"], cwd=root, env=env(root))
    assert done.returncode == 0, done.stdout + done.stderr
    output = json.loads((root / "out.jsonl").read_text().splitlines()[1])["output"]
    assert output == {"cwd_is_copy": True, "resources": {"CPU": 2.0}}


def test_a_resource_the_cluster_lacks_is_bad_input(tmp_path, cluster):
    root = project(tmp_path / "p", [{"id": "ok", "input": "hello"}])
    (root / "agent.yaml").write_text("id: bot\ntarget: python:bot:reply\nresources:\n  num_gpus: 1\n")
    done = run_cli(["suite.jsonl", "--executor", "ray", "-o", "out.jsonl"], cwd=root, env=env(root))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agent 'bot' asks for num_gpus 1 per case; the cluster has none" in done.stderr
    assert "Traceback" not in done.stderr


def test_model_calls_from_the_workers(tmp_path, cluster):
    def judge(body: dict) -> dict:
        passed = "Paris" in json.dumps(body["messages"])
        return {"content": json.dumps({"passed": passed, "score": 1.0 if passed else 0.0, "reason": "checked"})}

    cases = [
        {"id": "good", "input": "Paris", "assertions": [{"type": "llm", "criteria": "Names the capital of France"}]},
        {"id": "bad", "input": "Lyon", "assertions": [{"type": "llm", "criteria": "Names the capital of France"}]},
    ]
    root = project(tmp_path / "p", cases, config="model: openai/gpt-4o-mini\nexecutor: ray\n")
    with LLMServer(responder=judge) as server:
        keys = {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
        # One case at a time: one worker imports the model client (seconds) and judges both.
        done = run_cli(["suite.jsonl", "--parallel", "1", "-o", "out.jsonl"], cwd=root, env=env(root, **keys))
        assert len(server.requests) == 2  # both judged from the workers, over HTTP
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    statuses = {r["id"]: r["status"] for r in lines if r["type"] == "result"}
    assert statuses == {"good": "passed", "bad": "failed"} and done.returncode == 1
    assert lines[-1]["usage"]["total_tokens"] > 0  # the judges' usage came back with the results


def test_fail_fast_cancels_the_cases_in_flight(tmp_path, cluster):
    marks = tmp_path / "marks"
    marks.mkdir()
    cases = [{"id": "wrong", "input": "hello", "expected": "goodbye"}] + [
        {"id": f"slow{i}", "input": "wait"} for i in range(3)
    ]
    root = project(tmp_path / "p", cases)
    done = run_cli(
        ["suite.jsonl", "--executor", "ray", "--parallel", "2", "--fail-fast", "-o", "out.jsonl"],
        cwd=root,
        env=env(root, MARKS=str(marks)),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    results = {r["id"]: r for r in lines if r["type"] == "result"}
    assert results["wrong"]["status"] == "failed"
    cancelled = [r for r in results.values() if r["id"] != "wrong"]
    assert cancelled and all(r["status"] == "skipped" for r in cancelled)
    assert all(r["error"] == "cancelled by --fail-fast" for r in cancelled)
    assert lines[-1]["not_run"] == 4 - len(results)


def test_ctrl_c_cancels_the_remote_cases_and_still_reports(tmp_path, cluster):
    marks = tmp_path / "marks"
    marks.mkdir()
    cases = [{"id": f"slow{i}", "input": "wait", "after": "hooks.After"} for i in range(2)]
    root = project(tmp_path / "p", cases)
    command = [SPECRUN, "suite.jsonl", "--executor", "ray", "--parallel", "2", "-o", "out.jsonl", "-o", "out.json"]
    process = subprocess.Popen(
        command, cwd=root, env=env(root, MARKS=str(marks), RAY_ADDRESS=cluster), stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 90
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:  # both cases running on workers
        time.sleep(0.05)
    assert len(list(marks.iterdir())) == 2, "the cases never started"
    process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 130, stdout
    lines = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    results = [r for r in lines if r["type"] == "result"]
    assert sorted(r["id"] for r in results) == ["slow0", "slow1"]
    assert all(r["status"] == "error" and r["error"] == "interrupted" for r in results)
    assert lines[-1]["interrupted"] is True
    assert json.loads((root / "out.json").read_text())["metadata"]["interrupted"] is True
    assert sorted(e[:2] for e in hook_events(root / "hooks.log")) == [
        ["after", "slow0"],
        ["after", "slow1"],
    ]  # ran remotely


def test_unknown_executor_and_bad_options_are_exit_2(tmp_path):
    root = project(tmp_path / "p", [{"id": "ok", "input": "hello"}])
    done = run_cli(["suite.jsonl", "--executor", "rey"], cwd=root)
    assert done.returncode == 2 and "unknown executor type 'rey' (known: local, ray)" in done.stderr
    (root / "specrun.yaml").write_text("executor:\n  type: ray\n  address: 6379\n")
    done = run_cli(["suite.jsonl"], cwd=root)
    assert done.returncode == 2 and "specrun.yaml:3:12: executor.address must be a string" in done.stderr
    (root / "specrun.yaml").write_text("executor: rey\n")
    done = run_cli(["suite.jsonl"], cwd=root)
    assert done.returncode == 2 and 'specrun.yaml:1:11: "rey" is not one of: local, ray' in done.stderr


def test_update_snapshots_is_refused_before_anything_runs(tmp_path):
    cases = [{"id": "ok", "input": "hello", "before": "hooks.Before", "assertions": [{"type": "snapshot"}]}]
    root = project(tmp_path / "p", cases)
    done = run_cli(["suite.jsonl", "--update-snapshots", "-o", "out.jsonl"], cwd=root, env=env(root))
    assert done.returncode == 2
    assert "--update-snapshots cannot run on the ray executor" in done.stderr
    assert "--executor local --update-snapshots" in done.stderr
    assert not any((root / p).exists() for p in ("hooks.log", "out.jsonl", "__snapshots__", ".specrun"))


def test_a_worker_with_its_own_copy_refuses_to_write_snapshots(tmp_path):
    from specrun._run.remote import RemoteRun, RemoteWorker
    from specrun._run.runner import RunOptions
    from specrun.plugin import UsageError

    shipped = RemoteRun(tmp_path / "project", tmp_path, {}, RunOptions(update_snapshots=True), [], [])
    with pytest.raises(UsageError, match="--update-snapshots cannot run in a worker with its own copy"):
        RemoteWorker(shipped, tmp_path / "copy")
