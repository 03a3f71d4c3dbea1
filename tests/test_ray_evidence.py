"""Mocked tools and ``traces: otel`` on the ray executor: one run, a case at a time, on the
session's local cluster (tests/support/ray_cluster.py) of a project with three agents (one using
its case's mocked tools through the mcp client, one traced in process, one process agent
exporting OTLP to the receiver it is told of) gives the same verdicts, tool calls and trace
counts as a local run of the same project; an agent whose spans go to a fixed receiver port,
which the workers cannot share, is refused before anything runs."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.modules import AGENTS
from support.ray_cluster import joined

# Imported in the background from the start (tests/conftest.py): Ray, 0.4 s.
PRELOADS = ("ray",)

# Last, as the other ray module: a cluster and its workers take a core while they start.
pytestmark = pytest.mark.order("last")


def plan(*calls: tuple[str, dict[str, Any]]) -> str:
    """A message for tests/agents/mcp_mocked_agent.py: the calls it makes, in order."""
    return json.dumps({"calls": [list(c) for c in calls]})


LOOKUP = {"name": "lookup_order", "when": [{"arguments": {"id": 1}, "returns": {"status": "shipped"}}]}
MOCKED_SUITE = {
    "defaults": {"tools": [LOOKUP]},
    "cases": [
        {
            "id": "mocked",
            "input": plan(("lookup_order", {"id": 1})),
            "assert": [
                {"type": "tool_called", "name": "lookup_order", "arguments": {"id": 1}, "status": "ok"},
                {"type": "contains", "value": "shipped"},
            ],
        },
        {"id": "unmocked", "input": plan(("delete_account", {"user": "ann"}))},
    ],
}

SHOP_AGENT = """
import json
from opentelemetry import trace

tracer = trace.get_tracer("shop")


def agent(messages, ctx):
    item = messages[-1].text
    with tracer.start_as_current_span("invoke_agent shop"):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.arguments": json.dumps({"item": item})}
        with tracer.start_as_current_span("execute_tool lookup", attributes=tool) as span:
            span.set_attribute("gen_ai.tool.call.result", json.dumps({"stock": 3}))
    return f"{item}: looked up"
"""

WEATHER_AGENT = r"""
import json, os, sys, time, urllib.request

_, trace_id, parent, _ = os.environ["TRACEPARENT"].split("-")
endpoint = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]

print("(agent) >> ", end="", flush=True)
for line in sys.stdin:
    city, now = line.strip(), time.time_ns()
    attributes = {"openinference.span.kind": "TOOL", "tool.name": "weather", "input.value": json.dumps({"city": city})}
    span = {"traceId": trace_id, "spanId": "00000000000000a1", "parentSpanId": parent, "name": "weather",
            "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000), "status": {"code": 1},
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    urllib.request.urlopen(urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})).read()
    print(f"{city}: sunny\n(agent) >> ", end="", flush=True)
"""


def traced_suite(tool: str, key: str, good: str, bad: str) -> dict[str, Any]:
    """Two cases asserting a call of ``tool`` with ``{key: good}``: one makes it, one does not."""
    called = {"type": "tool_called", "name": tool, "arguments": {key: good}}
    return {"cases": [{"id": f"{tool}-{v}", "input": v, "assert": [called]} for v in (good, bad)]}


def project(root: Path) -> Path:
    (root / "specrun.yaml").write_text("timeout: 20s\nexecutor: ray\n")
    folders = {
        "mocked": ({"target": "python:mcp_mocked_agent:agent"}, MOCKED_SUITE),
        "shop": ({"target": "python:shop:agent", "traces": "otel"}, traced_suite("lookup", "item", "lamp", "sofa")),
        "weather": (
            {"target": {"type": "process", "command": "weather.py"}, "traces": {"type": "otel", "grace": "5s"}},
            traced_suite("weather", "city", "Paris", "Atlantis"),
        ),
    }
    for name, (agent, suite) in folders.items():
        (root / name).mkdir()
        (root / name / "agent.yaml").write_text(json.dumps({"id": name, **agent}))
        (root / name / "suite.yaml").write_text(json.dumps(suite))
    shutil.copy(AGENTS / "mcp_mocked_agent.py", root / "mocked")
    (root / "shop" / "shop.py").write_text(SHOP_AGENT)
    (root / "weather" / "weather.py").write_text(WEATHER_AGENT)
    return root


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, ray_cluster: Callable[[], str]
) -> dict[str, tuple[Any, list[dict[str, Any]]]]:
    """The project run locally (while the cluster starts), then once on the session's cluster:
    each run's exit, printout and stream lines."""
    root = project(tmp_path_factory.mktemp("ray-evidence"))
    got = {}
    for executor in ("local", "ray"):
        # One case at a time (a local run's default; on ray, one per cluster CPU): the cases run
        # on one worker, so one worker process boots (and later cases find the mock server and
        # the trace receivers of earlier ones still there).
        args = ["mocked", "shop", "weather", "--executor", executor, "--parallel", "1", "--no-history"]
        args += ["-o", f"{executor}.jsonl"]
        with joined(ray_cluster()) if executor == "ray" else contextlib.nullcontext():
            done = run_cli(args, cwd=root)
        lines = [json.loads(line) for line in (root / f"{executor}.jsonl").read_text().splitlines()]
        got[executor] = (done, lines)
    return got


def verdicts(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """What a user reads of each case: its status, error, assertions and tool calls."""
    keep = ("status", "error", "assertions", "tool_calls", "warnings")
    return {r["id"]: {k: r.get(k) for k in keep} for r in lines if r["type"] == "result"}


def test_mocked_tools_and_traces_give_the_same_verdicts_on_ray_as_locally(runs):
    (local, local_lines), (remote, ray_lines) = runs["local"], runs["ray"]
    assert local.returncode == remote.returncode == 1, remote.stdout + remote.stderr
    statuses = {case: v["status"] for case, v in verdicts(ray_lines).items()}
    assert statuses == {
        "mocked": "passed",
        "unmocked": "failed",
        "lookup-lamp": "passed",
        "lookup-sofa": "failed",
        "weather-Paris": "passed",
        "weather-Atlantis": "failed",
    }, verdicts(ray_lines)
    assert verdicts(ray_lines) == verdicts(local_lines)


def test_a_call_no_mock_answers_fails_the_ray_case_naming_it(runs):
    _, lines = runs["ray"]
    unmocked = verdicts(lines)["unmocked"]
    failing = [a["message"] for a in unmocked["assertions"] if a["status"] == "failed"]
    assert any('delete_account {"user": "ann"} is not mocked' in m for m in failing), unmocked


def test_the_workers_spans_are_counted_in_the_run_summary(runs):
    summaries = {executor: lines[-1] for executor, (_, lines) in runs.items()}
    assert summaries["ray"]["traces"] == summaries["local"]["traces"]
    assert summaries["ray"]["traces"]["spans"] == 6  # two per shop case, one per weather case
    assert "Traces:" in runs["ray"][0].stdout


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("target: http://127.0.0.1:9/chat\ntraces: otel\n", "the fixed receiver 127.0.0.1:4318"),
        (
            "target: {type: process, command: weather.py}\ntraces: {type: otel, receiver: 127.0.0.1:4319}\n",
            "the fixed receiver 127.0.0.1:4319: each worker listens for its own cases' spans, and several cannot share"
            " one port; run it with --executor local (or drop receiver:",
        ),
    ],
)
def test_a_fixed_trace_receiver_on_ray_is_refused_before_anything_runs(tmp_path, agent, said):
    (tmp_path / "specrun.yaml").write_text("executor: ray\n")
    (tmp_path / "agent.yaml").write_text("id: web\n" + agent)
    (tmp_path / "suite.yaml").write_text(json.dumps(traced_suite("weather", "city", "Paris", "Atlantis")))
    done = run_cli(["suite.yaml", "-o", "out.jsonl"], cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agent.yaml:3:" in done.stderr and "traces: otel cannot run on the ray executor" in done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / ".specrun").exists()
