"""Suites validated without keeping their cases, then read again as the run reaches them.

What the two passes could break: a mistake reported at another place than the file's, a
duplicate missed, cases lost or doubled between passes, interrupts, --runs, --fail-fast,
generated cases, and a file that changes between the passes.
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

from specrun._core.errors import SpecrunError
from specrun._load.loader import FileCases, Loader
from specrun._project.plugin_manager import default_plugins
from specrun._project.project import Project
from specrun._report.stability import Aggregator
from specrun._report.stream import scan
from specrun._run.plan import build_plan
from tests.support.cli import run_cli

SPECRUN = str(Path(sys.executable).with_name("specrun"))

AGENT = """
import asyncio
from pathlib import Path

async def echo(messages, ctx):
    text = messages[-1].text
    if text.startswith("sleep "):
        Path(ctx.case_id + ".started").touch()  # in flight: a test may interrupt the run now
        await asyncio.sleep(float(text.split()[1]))
    return "echo: " + text
"""


def project(root: Path, suites: dict[str, str]) -> Path:
    (root / "specrun.yaml").write_text("timeout: 60s\n")
    (root / "agent.yaml").write_text("target: python:echo_agent:echo\n")
    (root / "echo_agent.py").write_text(AGENT)
    for name, text in suites.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def jsonl(cases: list[dict]) -> str:
    return "".join(json.dumps(c) + "\n" for c in cases)


def case(i: int, **extra: object) -> dict:
    return {"id": f"c{i}", "input": f"hi {i}", "assertions": [{"type": "contains", "value": f"hi {i}"}], **extra}


def results(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "result"]


def summary(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[-1])


# -- errors: every one at its place, before anything runs ------------------------------------


def test_mistakes_deep_in_a_large_jsonl_file_are_reported_at_their_line_and_column_before_any_case_runs(tmp_path):
    cases = [case(i) for i in range(3000)]
    cases[1200]["assertions"][0]["type"] = "containz"  # line 1201
    cases[2500]["id"] = "c7"  # line 2501: a duplicate of line 8
    lines = jsonl(cases).splitlines()
    lines.insert(1700, "")  # a blank line shifts every line after it: positions are the file's
    lines[2700] = "   " + lines[2700].replace('"input": "hi 2699"', '"input": 5')  # line 2701, indented
    project(tmp_path, {"suite.jsonl": "\n".join(lines) + "\n"})
    for args in (["validate", "suite.jsonl"], ["suite.jsonl", "-o", "out.jsonl"]):
        proc = run_cli(args, tmp_path)
        assert proc.returncode == 2, proc.stderr
        found = [line for line in proc.stderr.splitlines() if line.startswith("suite.jsonl:")]
        assert [line.split(": ", 1)[0] for line in found] == [
            "suite.jsonl:1201:61",
            "suite.jsonl:2502:8",
            "suite.jsonl:2701:29",
        ]
        assert "unknown assertion type 'containz'" in found[0]
        assert "duplicate case id 'c7' (first at line 8)" in found[1]
    assert not (tmp_path / "out.jsonl").exists()  # nothing ran


def test_a_broken_line_is_reported_alone_and_a_nul_byte_anywhere_wins_as_before(tmp_path):
    cases = jsonl([case(i) for i in range(50)]).splitlines()
    cases[10] = '{"id": "broken", "input": '  # line 11: not JSON
    cases[20] = '{"id": "c20", "input": 5}'  # line 21: a schema mistake, not shown next to a syntax one
    project(tmp_path, {"a.jsonl": "\n".join(cases) + "\n"})
    proc = run_cli(["validate", "a.jsonl"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("a.jsonl:") == 1 and "a.jsonl:11:" in proc.stderr and "invalid JSON" in proc.stderr
    (tmp_path / "a.jsonl").write_bytes(("\n".join(cases) + "\n").encode() + b'{"id": "x\x00"}\n')
    proc = run_cli(["validate", "a.jsonl"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("a.jsonl:") == 1 and "a.jsonl:51:1: binary file (NUL byte found)" in proc.stderr


def test_a_report_named_as_a_suite_is_pointed_out_at_its_first_line(tmp_path):
    stream = [{"type": "start", "specrun_report": "jsonl"}, {"type": "summary", "total": 0}]
    project(tmp_path, {"results.jsonl": "\n" + jsonl(stream)})
    proc = run_cli(["validate", "results.jsonl"], tmp_path)
    assert proc.returncode == 2 and "results.jsonl:2:1: a report specrun wrote, not a suite" in proc.stderr


def test_defaults_apply_to_every_case_of_a_yaml_file_read_twice(tmp_path):
    text = "defaults:\n  assertions: [{type: starts_with, value: 'echo:'}]\n  tags: [smoke]\ncases:\n"
    text += "".join(f"  - id: y{i}\n    input: hi {i}\n" for i in range(5))
    project(tmp_path, {"s.yaml": text})
    proc = run_cli(["s.yaml", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = results(tmp_path / "out.jsonl")
    assert [(r["id"], r["line"], r["tags"], r["assertions"][0]["type"]) for r in got] == [
        (f"y{i}", 5 + 2 * i, ["smoke"], "starts_with") for i in range(5)
    ]


# -- every case once, across files --------------------------------------------------------------


def test_the_same_id_in_two_files_runs_twice_and_is_counted_as_two_cases(tmp_path):
    project(tmp_path, {"a/s.jsonl": jsonl([case(1), case(2)]), "b/s.jsonl": jsonl([case(2, input="other")])})
    proc = run_cli([".", "-o", "output-run.jsonl"], tmp_path)  # output-*: not a suite
    assert proc.returncode == 1  # b's c2 says "other", not "hi 2"
    got = results(tmp_path / "output-run.jsonl")
    assert [(r["file"], r["id"], r["status"]) for r in got] == [
        ("a/s.jsonl", "c1", "passed"),
        ("a/s.jsonl", "c2", "passed"),
        ("b/s.jsonl", "c2", "failed"),
    ]
    assert (summary(tmp_path / "output-run.jsonl")["total"], summary(tmp_path / "output-run.jsonl")["failed"]) == (3, 1)


def test_runs_of_a_case_come_together_and_the_summary_counts_every_run(tmp_path):
    cases = [case(i) for i in range(4)] + [
        {"id": "bad", "input": "x", "assertions": [{"type": "contains", "value": "y"}]}
    ]
    project(tmp_path, {"s.jsonl": jsonl(cases)})
    proc = run_cli(["s.jsonl", "--runs", "3", "--parallel", "4", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 1
    got = results(tmp_path / "out.jsonl")
    assert sorted((r["id"], r["run"]) for r in got) == sorted((c["id"], n) for c in cases for n in (1, 2, 3))
    done = summary(tmp_path / "out.jsonl")
    assert (done["total"], done["passed"], done["failed"], done["total_runs"], done["runs_failed"]) == (5, 4, 1, 15, 3)
    assert done["not_run"] == 0


def test_the_runner_keeps_no_case_once_its_runs_are_counted_and_sums_as_a_full_scan_does(tmp_path):
    project(tmp_path, {"s.jsonl": jsonl([case(i) for i in range(30)] + [{"id": "no", "input": "x", "expected": "y"}])})
    proc = run_cli(["s.jsonl", "--runs", "2", "--min-pass-rate", "50", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 1
    streamed = Aggregator(50.0, 2, keep=False)
    for r in results(tmp_path / "out.jsonl"):
        streamed.add(r)
    assert len(streamed) == 0  # every case was complete: nothing kept
    expected = scan(tmp_path / "out.jsonl").aggregator.summary(duration_ms=1.0)
    assert streamed.summary(duration_ms=1.0) == expected
    assert {k: v for k, v in summary(tmp_path / "out.jsonl").items() if k in expected and k != "duration_ms"} == {
        k: v for k, v in expected.items() if k != "duration_ms"
    }


def test_fail_fast_stops_the_stream_of_cases(tmp_path):
    cases = [case(0), {"id": "bad", "input": "x", "expected": "y"}] + [case(i) for i in range(1, 200)]
    project(tmp_path, {"s.jsonl": jsonl(cases)})
    proc = run_cli(["s.jsonl", "--fail-fast", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 1
    assert [r["id"] for r in results(tmp_path / "out.jsonl")] == ["c0", "bad"]
    assert summary(tmp_path / "out.jsonl")["not_run"] == 199


def test_dry_run_lists_every_case_of_the_file_in_order(tmp_path):
    project(tmp_path, {"s.jsonl": jsonl([case(i) for i in range(300)])})
    proc = run_cli(["s.jsonl", "--dry-run", "--runs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("s.jsonl:")]
    assert listed == [f"[c{i}]" for i in range(300)]
    assert "300 cases x 2 run(s)" in proc.stdout


GENERATOR = """
def cases(count):
    return [{"input": f"hi {i}", "assertions": [{"type": "contains", "value": f"hi {i}"}]} for i in range(count)]
"""


def test_generated_cases_run_with_a_file_of_cases(tmp_path):
    project(tmp_path, {"s.jsonl": jsonl([case(1)]), "gen.py": GENERATOR})
    proc = run_cli(["s.jsonl", "-i", "scripts:gen.cases?count=3", "-o", "out.jsonl", "--save", "saved.jsonl"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = [(r["file"], r["id"], r["status"]) for r in results(tmp_path / "out.jsonl")]
    origin = "scripts:gen.cases?count=3"
    assert got == [("s.jsonl", "c1", "passed")] + [(origin, f"gen-00{i}", "passed") for i in (1, 2, 3)]
    assert len((tmp_path / "saved.jsonl").read_text().splitlines()) == 3


# -- interrupts ----------------------------------------------------------------------------------


def test_an_interrupt_mid_stream_keeps_what_ran_and_counts_the_rest_as_not_run(tmp_path):
    cases = [case(i) for i in range(20)] + [{"id": f"slow{i}", "input": "sleep 60"} for i in range(2)]
    cases += [case(i) for i in range(100, 2100)]
    project(tmp_path, {"s.jsonl": jsonl(cases)})
    proc = subprocess.Popen(
        [SPECRUN, "s.jsonl", "--parallel", "2", "-o", "out.jsonl"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "out.jsonl"
    started = [tmp_path / f"slow{i}.started" for i in range(2)]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        all(s.exists() for s in started) and out.exists() and out.read_text().count('"type": "result"') >= 20
    ):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)  # both slow cases are in flight; 2,000 more wait in the file
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    got = results(out)
    assert [r["id"] for r in got[:20]] == [f"c{i}" for i in range(20)]
    assert sorted((r["id"], r["error"]) for r in got[20:]) == [("slow0", "interrupted"), ("slow1", "interrupted")]
    done = summary(out)
    assert done["interrupted"] is True and done["not_run"] == 2000 and done["total"] == 22


# -- the file between the two passes ---------------------------------------------------------


def test_a_suite_file_changed_after_validation_is_an_error_not_unchecked_cases(tmp_path):
    project(tmp_path, {"s.jsonl": jsonl([case(1), case(2)])})
    (suite,) = Loader(default_plugins().registry).load([tmp_path / "s.jsonl"])
    assert isinstance(suite.cases, FileCases) and len(suite.cases) == 2
    assert [c.id for c in suite.cases] == ["c1", "c2"]  # read again, as often as iterated
    assert suite.cases[-1].location.line == 2
    (tmp_path / "s.jsonl").write_text(jsonl([case(1), {"id": "c2", "input": 5}]))
    os.utime(tmp_path / "s.jsonl", ns=(1, 1))
    with pytest.raises(SpecrunError, match=r"s\.jsonl changed after it was validated"):
        list(suite.cases)


def test_a_plan_reordered_or_cut_by_a_step_reads_each_case_back_with_its_agent(tmp_path):
    named = "cases:\n  - {id: y, input: hey}\n  - {id: zé✓, name: the last one, input: ho}\n"
    project(tmp_path, {"a.jsonl": jsonl([case(i) for i in range(5)]), "b.yaml": named})
    plugins = default_plugins()
    suites = Loader(plugins.registry).load([tmp_path / "a.jsonl", tmp_path / "b.yaml"])
    plan = build_plan(suites, Project.discover(tmp_path, plugins.registry), plugins)
    assert [(ref.id, Path(ref.file).name, ref.line) for ref, _ in plan.pairs] == [
        *((f"c{i}", "a.jsonl", i + 1) for i in range(5)),
        ("y", "b.yaml", 2),
        ("zé✓", "b.yaml", 3),
    ]
    assert (plan.pairs[-1][0].name, plan.pairs[0][0].name) == ("the last one", None)
    failed_first = [3, 5, 0, 1, 2, 4, 6]  # what --ff does: some cases first, the rest after
    plan.pairs = plan.pairs.select(failed_first)
    assert [(case.id, case.input[0].text, agent.id) for case, agent in plan.cases()] == [
        ("c3", "hi 3", tmp_path.name),
        ("y", "hey", tmp_path.name),
        *((f"c{i}", f"hi {i}", tmp_path.name) for i in (0, 1, 2, 4)),
        ("zé✓", "ho", tmp_path.name),
    ]
    plan.pairs = [(ref, agent) for ref, agent in plan.pairs if ref.id in ("c4", "y")]  # a list works too
    assert [case.id for case, _ in plan.cases()] == ["y", "c4"]
    assert [(job.case.id, job.run) for job in plan.jobs(2)] == [("y", 1), ("y", 2), ("c4", 1), ("c4", 2)]


def two_agents(root: Path) -> None:
    for name, answer in (("good", "messages[-1].text"), ("bad", "'no'")):
        (root / "agents" / name).mkdir(parents=True)
        # not ``good_bot``: a plan built here imports it for good, and test_multi_agent has its own
        (root / "agents" / name / f"streaming_{name}.py").write_text(f"def run(messages, ctx):\n    return {answer}\n")
        (root / "agents" / name / "agent.yaml").write_text(f"id: {name}\ntarget: python:streaming_{name}:run\n")


def test_several_agents_read_a_file_once_and_each_case_runs_against_each_agent(tmp_path, monkeypatch):
    import specrun._load.loader as loader
    from specrun._load.documents import parse

    project(tmp_path, {"s.jsonl": jsonl([case(i) for i in range(6)])})
    two_agents(tmp_path)
    plugins = default_plugins()
    suites = Loader(plugins.registry).load([tmp_path / "s.jsonl"])
    plan = build_plan(suites, Project.discover(tmp_path, plugins.registry), plugins, ["good", "bad"])
    reads = []
    monkeypatch.setattr(loader, "parse", lambda *a: reads.append(a) or parse(*a))
    got = [(c.id, agent.id) for c, agent in plan.cases()]
    assert got == [(f"c{i}", name) for i in range(6) for name in ("good", "bad")]
    assert len(reads) == 1  # one stretch of the file for both agents, not one read per pair


def test_a_run_of_several_agents_sums_each_agent_as_a_full_scan_does(tmp_path):
    project(tmp_path, {"s.jsonl": jsonl([case(i) for i in range(20)])})
    two_agents(tmp_path)
    proc = run_cli(["s.jsonl", "-n", "good", "-n", "bad", "--runs", "2", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 1
    done = summary(tmp_path / "out.jsonl")  # the runner's, which drops each case once counted
    expected = scan(tmp_path / "out.jsonl").aggregator.summary(duration_ms=1.0)
    assert done["agents"]["good"]["cases"] == done["agents"]["bad"]["cases"] == 20
    assert (done["agents"]["good"]["passed"], done["agents"]["bad"]["failed"]) == (20, 20)
    for agent in ("good", "bad"):
        assert {k: v for k, v in done["agents"][agent].items() if k != "avg_duration_ms"} == {
            k: v for k, v in expected["agents"][agent].items() if k != "avg_duration_ms"
        }


def test_a_jsonl_file_of_one_line_cases_then_cases_spread_over_lines_runs_each_once(tmp_path):
    spread = json.dumps(case(90), indent=2) + "\n" + json.dumps(case(91), indent=2) + "\n"
    project(tmp_path, {"s.jsonl": jsonl([case(i) for i in range(3)]) + spread + jsonl([case(92)])})
    proc = run_cli(["s.jsonl", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    half = spread.count("\n") // 2
    assert [(r["id"], r["line"]) for r in results(tmp_path / "out.jsonl")] == [
        *((f"c{i}", i + 1) for i in range(3)),
        ("c90", 4),
        ("c91", 4 + half),
        ("c92", 4 + 2 * half),
    ]


def test_the_models_the_cases_name_are_noted_as_the_plan_is_made_not_read_again(tmp_path, monkeypatch):
    import specrun._load.loader as loader
    from specrun._load.documents import parse

    judged = [
        case(i, assertions=[{"type": "llm", "criteria": "polite", "model": f"openai/m{i % 3}"}]) for i in range(6)
    ]
    project(tmp_path, {"s.jsonl": jsonl(judged)})
    # a module of its own: a plan built here imports it for good
    (tmp_path / "agent.yaml").write_text("target: python:streaming_judged:run\n")
    (tmp_path / "streaming_judged.py").write_text("def run(messages, ctx):\n    return 'ok'\n")
    plugins = default_plugins()
    suites = Loader(plugins.registry).load([tmp_path / "s.jsonl"])
    plan = build_plan(suites, Project.discover(tmp_path, plugins.registry), plugins)
    reads = []
    monkeypatch.setattr(loader, "parse", lambda *a: reads.append(a) or parse(*a))
    assert plan.needs_model() and plan.model_uses(plugins.registry) == [(f"openai/m{i}", None) for i in range(3)]
    plan.pairs = [plan.pairs[i] for i in (4, 1)]  # a step keeps some (--shard, --lf): their models only
    assert plan.model_uses(plugins.registry) == [("openai/m1", None)]
    assert reads == []  # a judged run reads its suites to validate, to plan and to run: not a fourth time


def test_a_run_reads_each_suite_file_twice_once_to_validate_and_plan_it_and_once_to_run_it(tmp_path, monkeypatch):
    import specrun._load.loader as loader
    from specrun._load.documents import parse

    tagged = [case(i, tags=["smoke"] if i % 2 else ["slow"]) for i in range(6)]
    project(tmp_path, {"a.jsonl": jsonl(tagged[:3]), "b.yaml": json.dumps({"cases": tagged[3:]})})
    reads: list[str] = []
    monkeypatch.setattr(loader, "parse", lambda path, *a: reads.append(path.name) or parse(path, *a))
    proc = run_cli(["a.jsonl", "b.yaml", "-m", "smoke or nosuchtag", "-o", "out.jsonl"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["id"] for r in results(tmp_path / "out.jsonl")] == ["c1", "c3", "c5"]
    assert "unknown tag 'nosuchtag' (known tags: slow, smoke)" in proc.stderr
    assert sorted(reads) == ["a.jsonl", "a.jsonl", "b.yaml", "b.yaml"]  # not again to plan, nor for -m's tags
