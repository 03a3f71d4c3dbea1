"""No result is ever lost, labels say what happened, gates cannot pass a red case, reports stay
bounded (issues 11.4, 11.1, 18.2 and 18.9).

- An output that strict JSON cannot hold errors its own case, at the point the result is made;
  every other result is written and every JSON file specrun writes is strict.
- A reader that goes away (``| head``), an agent that closes ``sys.stdout`` or a console that
  breaks costs the stream and the reports nothing; the exit code still gives the verdict.
- A stream that cannot be written (a full disk, here a file-size limit) leaves every whole-file
  report marked incomplete, with the run's real counts, and exit 3.
- The banner, the exit code and the labels say exactly what happened; a gate of 0 is bad input.
- JUnit, Markdown and HTML stay small whatever the agent says in a long conversation.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import resource
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import support.cli
from rich.console import Console

from specrun import hookimpl
from specrun._core.data import Case, Location, Response
from specrun._core.errors import ReportError
from specrun._core.kinds import SourceContext
from specrun._core.results import Result, RunInfo, Verdict
from specrun._load.loader import Loader
from specrun._project.plugin_manager import default_plugins
from specrun._project.project import Project
from specrun._report.console import ConsoleReport
from specrun._report.stability import Aggregator, exit_code, verdict
from specrun._report.stream import ResultStream, iter_stream
from specrun._run.plan import build_plan, load_inputs
from specrun._run.runner import Runner, RunOptions

SPECRUN = str(Path(sys.executable).with_name("specrun"))

HOSTILE = {
    "nan": 'float("nan")',
    "infinity": '[1, float("inf")]',
    "surrogate": '"bad \\ud800 text"',
    "cycle": "_cycle()",
    "deep": "_deep(100_000)",
    "tuple_key": '{("a", 1): 2}',
    "big_int": "{'n': 10 ** 5000}",
}

AGENT = f"""
import sys

def _cycle():
    d = {{}}
    d["self"] = d
    return d

def _deep(n):
    d = {{}}
    for _ in range(n):
        d = {{"a": d}}
    return d

HOSTILE = {{{", ".join(f"{k!r}: lambda: {v}" for k, v in HOSTILE.items())}}}

def hostile(messages, ctx):
    return HOSTILE[ctx.case_id.split("-")[0]]()

def ok(messages, ctx):
    return "fine " + "x" * 300

def bad(messages, ctx):
    return "wrong"

def crash(messages, ctx):
    raise RuntimeError("boom")

def closer(messages, ctx):
    sys.stdout.close()
    return "fine"

def big(messages, ctx):
    return "y" * 60_000

def huge(messages, ctx):  # 3 times the longest turn the reports show: unclipped, each passes its bound
    return "z" * 150_000
"""

FINE = [{"type": "contains", "value": "fine"}]


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _project(root: Path, cases: list[dict[str, Any]]) -> Path:
    root.mkdir(exist_ok=True)
    (root / "bot.py").write_text(AGENT)
    (root / "agent.yaml").write_text("target: python:bot:ok\n")
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def _specrun(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return support.cli.run_cli(args, root)


def _process(root: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """A real ``specrun`` process, for what only a process has: its stdout descriptor, its limits."""
    return subprocess.run([SPECRUN, *args], cwd=root, capture_output=True, text=True, timeout=120, **kwargs)


def _results(path: Path) -> list[dict[str, Any]]:
    lines = [_strict(line) for line in path.read_text("utf-8").splitlines()]
    return [r for r in lines if r["type"] == "result"]


# -- 11.4: an output JSON cannot hold --------------------------------------------------------


def _case() -> Case:
    return Case(id="c", location=Location("suite.yaml", 3))


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_output_json_cannot_hold_makes_its_own_case_an_error(name):
    namespace: dict[str, Any] = {}
    exec(AGENT, namespace)
    result = Result(_case(), "passed", response=Response(namespace["HOSTILE"][name]()))
    result.seal()
    assert result.status == "error"
    assert result.error.startswith("the result cannot be written as JSON; recorded as null: output")
    record = _strict(result.line)
    assert record["status"] == "error" and record["error"] == result.error and record["id"] == "c"
    assert result.record() is result.record()  # one record, read by the stream and every observer


def test_the_part_json_cannot_hold_is_named_and_the_rest_is_kept():
    verdict_ = Verdict.settled("equals", "failed", "differs", expected=1, actual={"x": float("nan"), "y": 2})
    result = Result(_case(), "failed", response=Response("text"), assertions=[verdict_], error="first")
    record = _strict(result.line)
    assert result.status == "error"
    assert result.error.startswith("first; the result cannot be written as JSON; recorded as null: ")
    assert "assertions[0].actual (ValueError: Out of range float values are not JSON compliant)" in result.error
    assert record["output"] == "text"
    assert record["assertions"] == [
        {"type": "equals", "status": "failed", "message": "differs", "expected": 1, "actual": None}
    ]


def test_hostile_outputs_cost_no_other_result_and_every_json_file_is_strict(tmp_path):
    cases = []
    for i, name in enumerate(sorted(HOSTILE)):
        cases.append({"id": f"ok{i}", "input": "hi", "assertions": FINE})
        cases.append({"id": f"{name}-{i}", "input": "hi", "target": "python:bot:hostile"})
    cases.append({"id": "bad", "input": "hi", "target": "python:bot:bad", "assertions": FINE})
    root = _project(tmp_path / "p", cases)
    proc = _specrun(root, "suite.jsonl", "--parallel", "4", "-o", "r.jsonl", "-o", "r.json", "-o", "r.xml")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    results = {r["id"]: r for r in _results(root / "r.jsonl")}
    assert set(results) == {c["id"] for c in cases}
    for i, name in enumerate(sorted(HOSTILE)):
        assert results[f"ok{i}"]["status"] == "passed"
        hostile = results[f"{name}-{i}"]
        assert hostile["status"] == "error", hostile
        assert "cannot be written as JSON" in hostile["error"] and "output" in hostile["error"]
    assert results["bad"]["status"] == "failed"
    report = _strict((root / "r.json").read_text("utf-8"))
    assert len(report["results"]) == len(cases)
    expected = {"passed": len(HOSTILE), "failed": 1, "errors": len(HOSTILE)}
    assert {k: report["summary"][k] for k in expected} == expected
    suite = ET.parse(root / "r.xml").getroot()
    assert suite.get("tests") == str(len(cases)) and suite.get("failures") == "1"
    assert suite.get("errors") == str(len(HOSTILE))
    assert f"{len(HOSTILE)} ERRORS" in proc.stdout


# -- 11.4: stdout goes away --------------------------------------------------------------------


def test_a_reader_that_goes_away_costs_no_result_and_no_verdict(tmp_path):
    cases = [{"id": f"c{i}", "input": "hi", "assertions": FINE} for i in range(150)]
    cases.append({"id": "bad", "input": "hi", "target": "python:bot:bad", "assertions": FINE})
    root = _project(tmp_path / "p", cases)
    # specrun suite.jsonl -v --parallel 8 | head -3
    proc = subprocess.Popen(
        [SPECRUN, "suite.jsonl", "-v", "--parallel", "8", "-o", "r.jsonl", "-o", "r.xml"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    head = [proc.stdout.readline() for _ in range(3)]
    proc.stdout.close()
    stderr = proc.stderr.read()
    code = proc.wait(timeout=120)
    assert head[1].strip() == "Agent Test (Parallel: 8)"
    assert len(_results(root / "r.jsonl")) == len(cases)
    assert (root / "r.jsonl").read_text().splitlines()[-1].startswith('{"type": "summary"')
    assert ET.parse(root / "r.xml").getroot().get("tests") == str(len(cases))
    assert code == 1, stderr  # the verdict: a case failed
    assert stderr == ""  # no traceback, no "Exception ignored", no "Broken pipe"


def test_an_agent_that_closes_sys_stdout_silences_nothing(tmp_path):
    cases = [{"id": f"c{i}", "input": "hi", "assertions": FINE} for i in range(40)]
    cases[3] = {"id": "closer", "input": "hi", "target": "python:bot:closer", "assertions": FINE}
    cases.append({"id": "bad", "input": "hi", "target": "python:bot:bad", "assertions": FINE})
    root = _project(tmp_path / "p", cases)
    proc = _process(root, "suite.jsonl", "--parallel", "4", "-o", "r.jsonl")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "closed file" not in proc.stderr, proc.stderr
    assert len(_results(root / "r.jsonl")) == len(cases)
    assert proc.stdout.count("► [") == len(cases)
    assert "❌ 1 FAILED, 40 PASSED" in proc.stdout


def test_a_run_started_with_its_standard_streams_closed_still_passes(tmp_path):
    """``specrun ... >&- 2>&- <&-`` (a daemon, a cron line): the files the run opened took the
    numbers 0-2, and the event loop, closing one of them at the end, aborted the process (134)."""
    root = _project(tmp_path / "p", [{"id": "a", "input": "hi", "assertions": FINE}])
    closed = 'exec "$0" "$@" <&- >&- 2>&-'
    proc = subprocess.run(["sh", "-c", closed, SPECRUN, "suite.jsonl", "-o", "r.jsonl"], cwd=root, timeout=120)
    assert proc.returncode == 0
    assert [r["status"] for r in _results(root / "r.jsonl")] == ["passed"]


class _Breaks:
    """A plugin of the run in the console's place, that fails on its third result."""

    def __init__(self) -> None:
        self.seen = 0

    @hookimpl(trylast=True)
    def case_finished(self, result: Result) -> None:
        self.seen += 1
        if self.seen == 3:
            raise ValueError("I/O operation on closed file.")


async def _run_with(root: Path, observer: _Breaks) -> dict[str, Any]:
    plugins = default_plugins()
    project = Project.discover(root, plugins.registry)
    runner = Runner(project, plugins, RunOptions(parallel=8))
    context = SourceContext(Loader(plugins.registry), project.root, runner.services(1), None)
    plan = build_plan(await load_inputs([str(root / "suite.jsonl")], context, plugins), project, plugins, *[None] * 4)
    stream = ResultStream(root / "r.jsonl")
    return await runner.run(plan.jobs(1), RunInfo(total_cases=len(plan.pairs)), [observer, stream], stream)


def test_a_console_that_breaks_costs_the_stream_nothing(tmp_path):
    root = _project(tmp_path / "p", [{"id": f"c{i}", "input": "hi", "assertions": FINE} for i in range(30)])
    observer = _Breaks()
    with pytest.raises(ReportError, match=r"_Breaks failed: ValueError: I/O operation on closed file") as raised:
        asyncio.run(_run_with(root, observer))
    assert f"every result is in {root / 'r.jsonl'}" in str(raised.value)
    assert len(_results(root / "r.jsonl")) == 30 and observer.seen == 3  # not called again once broken


# -- 11.4: the stream cannot be written ------------------------------------------------------


def _file_size_limit() -> None:  # a full disk, portably: writes past 200 kB fail with EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


def test_a_stream_that_cannot_be_written_leaves_no_report_looking_green(tmp_path):
    cases = [{"id": f"big{i}", "input": "hi", "target": "python:bot:big"} for i in range(6)]
    cases += [{"id": f"bad{i}", "input": "hi", "target": "python:bot:bad", "assertions": FINE} for i in range(3)]
    root = _project(tmp_path / "p", cases)
    outputs = ["-o", "r.jsonl", "-o", "r.json", "-o", "r.xml", "-o", "r.md", "-o", "r.html"]
    proc = _process(root, "suite.jsonl", "-q", *outputs, preexec_fn=_file_size_limit)
    assert proc.returncode == 3, proc.stderr
    assert "jsonl reporter (r.jsonl) failed: OSError: [Errno 27] File too large" in proc.stderr
    assert "the reports say incomplete" in proc.stderr and "Traceback" not in proc.stderr
    assert "INCOMPLETE: not every result could be written (3 FAILED, 6 PASSED)" in proc.stdout
    written = [r for _, r in iter_stream(root / "r.jsonl") if r["type"] == "result"]  # a cut last line is left
    assert 0 < len(written) < len(cases) and all(r["status"] == "passed" for r in written)
    report = _strict((root / "r.json").read_text("utf-8"))
    assert "File too large" in report["summary"]["incomplete"] and report["metadata"]["incomplete"]
    assert (report["summary"]["failed"], report["summary"]["passed"]) == (3, 6)  # the run's counts
    junit = ET.parse(root / "r.xml").getroot()
    assert junit.get("errors") == "1"  # the one test CI must not show green
    error = junit.find("./testsuite/testcase[@name='incomplete report']/error")
    assert error is not None and "File too large" in (error.get("message") or "")
    assert "⚠️ **Incomplete**: not every result could be written" in (root / "r.md").read_text("utf-8")
    assert '<div class="banner" id="incomplete"><strong>Incomplete</strong>' in (root / "r.html").read_text("utf-8")


# -- 11.1: labels --------------------------------------------------------------------------------


def test_labels_say_exactly_what_happened(tmp_path):
    cases = [
        {"id": "bad1", "input": "hi", "target": "python:bot:bad", "assertions": FINE},
        {"id": "bad2", "input": "hi", "target": "python:bot:bad", "assertions": FINE},
        {"id": "crash", "input": "hi", "target": "python:bot:crash"},
        {"id": "later", "input": "hi", "skip": "not ready yet"},
        {"id": "named", "name": "Greets politely", "input": "hello there", "assertions": FINE},
        {
            "id": "talk",
            "input": "start",
            "simulator": {"type": "scripted", "turns": ["a", "b"]},
            "max_turns": 2,
            "checkpoints": [{"id": "never", "assertion": {"type": "contains", "value": "zzz"}}],
        },
    ]
    root = _project(tmp_path / "p", cases)
    proc = _specrun(root, "suite.jsonl", "-o", "r.jsonl", "-o", "r.md", "-o", "r.html", "-o", "r.xml")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "❌ 3 FAILED, 1 ERROR, 1 PASSED, 1 SKIPPED" in out and "TESTS FAILED" not in out
    assert "    skipped: not ready yet" in out and "error: not ready yet" not in out
    assert "    failed: max turns (2) exceeded; missing checkpoints: never" in out
    assert "    error: agent error: RuntimeError: boom" in out
    md = (root / "r.md").read_text("utf-8")
    assert "**Skipped:**\n\n```\nnot ready yet" in md and "**Failed:**\n\n```\nmax turns (2)" in md
    html = (root / "r.html").read_text("utf-8")
    assert "<summary>Skipped</summary><pre>not ready yet</pre>" in html
    assert "<summary>Failed</summary><pre>max turns (2) exceeded" in html
    junit = (root / "r.xml").read_text("utf-8")
    assert "failed: max turns (2) exceeded" in junit and "error: max turns" not in junit

    dry = _specrun(root, "suite.jsonl", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "    name: Greets politely\n    input: hello there\n" in dry.stdout
    assert "input: Greets politely" not in dry.stdout


def _banner(summary: dict[str, Any]) -> str:
    buffer = io.StringIO()
    ConsoleReport(Console(file=buffer, width=200)).run_finished({"total": 0, **summary})
    return buffer.getvalue().splitlines()[-2].strip()


@pytest.mark.parametrize(
    ("summary", "banner", "code"),
    [
        ({"passed": 3}, "✨ ALL TESTS PASSED ✨", 0),
        ({"passed": 3, "skipped": 1}, "✨ 3 PASSED, 1 SKIPPED ✨", 0),
        ({"skipped": 2}, "✨ NO TESTS RAN (2 SKIPPED) ✨", 0),
        ({"passed": 1, "errors": 2}, "❌ 2 ERRORS, 1 PASSED", 1),
        ({"failed": 2, "errors": 1}, "❌ 2 FAILED, 1 ERROR", 1),
        (
            {"passed": 2, "runs_failed": 1, "total_runs": 4},
            "✨ ALL TESTS PASSED (1 of 4 runs failed or errored, within min_pass_rate) ✨",
            0,
        ),
        ({"failed": 1, "interrupted": True}, "⚠ INTERRUPTED: partial results written", 130),
        ({"passed": 2, "incomplete": "disk full"}, "⚠ INCOMPLETE: not every result could be written (2 PASSED)", 3),
    ],
)
def test_the_banner_and_the_exit_code_read_one_verdict(summary, banner, code):
    assert _banner(summary) == banner
    assert exit_code(summary) == code
    assert verdict(summary)[1] in banner


# -- 18.2: gates -----------------------------------------------------------------------------------


def test_a_gate_of_zero_is_bad_input(tmp_path):
    root = _project(tmp_path / "p", [])
    (root / "suite.yaml").write_text(
        "target: python:bot:bad\ndefaults:\n  min_pass_rate: 0\ncases:\n"
        "  - id: a\n    input: hi\n    min_pass_rate: 0.0\n    assertions: [{type: contains, value: fine}]\n"
    )
    proc = _specrun(root, "validate", "suite.yaml")
    assert proc.returncode == 2
    assert "suite.yaml:3:18: defaults.min_pass_rate: 0 is less than or equal to the minimum of 0" in proc.stderr
    assert "suite.yaml:7:20: cases[0].min_pass_rate: 0.0 is less than or equal to the minimum of 0" in proc.stderr
    (root / "suite.yaml").write_text(
        "target: python:bot:bad\ncases:\n  - {id: a, input: hi, assertions: [{type: contains, value: fine}]}\n"
    )
    proc = _specrun(root, "suite.yaml", "--runs", "2", "--min-pass-rate", "0")
    assert proc.returncode == 2 and "0.0 is not in the range 0<x<=100" in proc.stderr
    assert not list(root.glob("output-*.jsonl"))  # nothing ran


def test_no_gate_passes_a_case_none_of_whose_runs_passed():
    for gate in (0.0, 1e-9):  # as a stream or a plugin could still say
        agg = Aggregator(min_pass_rate=gate)
        for run in (1, 2):
            agg.add({"type": "result", "id": "a", "status": "failed", "run": run, "file": "s.yaml", "line": 1})
        summary = agg.summary()
        assert (summary["passed"], summary["failed"], exit_code(summary)) == (0, 1, 1)


# -- 18.9: reports stay bounded ----------------------------------------------------------------


def test_long_conversations_and_many_runs_keep_text_reports_small(tmp_path):
    turns = [f"turn {i}" for i in range(30)]
    cases = [
        {
            "id": "talk",
            "input": "start",
            "target": "python:bot:huge",
            "simulator": {"type": "scripted", "turns": turns},
            "max_turns": 30,
            "checkpoints": [{"id": "never", "assertion": {"type": "contains", "value": "never said"}}],
        }
    ]
    root = _project(tmp_path / "p", cases)
    proc = _specrun(root, "suite.jsonl", "-q", "-o", "r.jsonl", "-o", "r.xml", "-o", "r.md", "-o", "r.html")
    assert proc.returncode == 1, proc.stderr
    assert os.path.getsize(root / "r.jsonl") > 4_500_000  # 30 turns of 150,000 characters
    assert os.path.getsize(root / "r.xml") < 250_000  # JUnit clips turns as it clips outputs
    assert os.path.getsize(root / "r.md") < 1_000_000  # 20 turns shown, each cut at 20,000 characters
    assert os.path.getsize(root / "r.html") < 2_200_000  # 20 turns shown, each cut at 50,000
    for name in ("r.md", "r.html"):
        assert "… 10 turns left out here; see the JSON report" in (root / name).read_text("utf-8")
    ET.parse(root / "r.xml")

    many = _project(tmp_path / "q", [{"id": "big", "input": "hi", "target": "python:bot:big"}])
    proc = _specrun(many, "suite.jsonl", "-q", "--runs", "8", "-o", "r.html", "-o", "r.md")
    assert proc.returncode == 0, proc.stderr
    html = (many / "r.html").read_text("utf-8")
    assert html.count("Details in the JSON report.") == 3 and html.count("<summary>Run ") == 8
    assert os.path.getsize(many / "r.html") < 400_000  # 5 runs in full, as Markdown shows
