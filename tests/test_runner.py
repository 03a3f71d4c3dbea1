"""The runner in process: what its reporters receive, whatever one of them does."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from specrun._core.errors import ReportError
from specrun._core.kinds import Reporter, SourceContext
from specrun._core.results import Result, RunInfo
from specrun._load.loader import Loader
from specrun._project.plugin_manager import default_plugins
from specrun._project.project import Project
from specrun._report.stream import ResultStream
from specrun._run.plan import build_plan, load_inputs
from specrun._run.runner import Runner, RunOptions


class Recording(Reporter):
    name = "recording"

    def __init__(self, path: Path, fail_at: int | None = None):
        super().__init__(path)
        self.fail_at = fail_at
        self.ids: list[str] = []

    def case_finished(self, result: Result) -> None:
        if len(self.ids) == self.fail_at:
            raise OSError("disk full")
        self.ids.append(result.case.id)


class Totals(Reporter):
    """Keeps the summary ``run_finished`` is handed."""

    name = "totals"

    def run_finished(self, summary: Any) -> None:
        self.summary = summary


class BrokenStream(ResultStream):
    """A result stream that cannot write a result (a full disk)."""

    def case_finished(self, result: Result) -> None:
        raise OSError("disk full")


async def _run(folder: Path, reporters: list[Reporter], parallel: int, stream: ResultStream | None = None) -> dict:
    plugins = default_plugins()
    project = Project.discover(folder, plugins.registry)
    runner = Runner(project, plugins, RunOptions(parallel=parallel))
    context = SourceContext(Loader(plugins.registry), project.root, runner.services(1), None)
    suites = await load_inputs([str(folder / "suite.jsonl")], context, plugins)
    plan = build_plan(suites, project, plugins, None, None, None, None)
    stream = stream or ResultStream(folder / "out.jsonl")
    return await runner.run(plan.jobs(1), RunInfo(total_cases=len(plan.pairs)), [stream, *reporters], stream)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    module = f"agent_{uuid.uuid4().hex[:8]}"  # each test imports its own
    (tmp_path / f"{module}.py").write_text("async def echo(messages, ctx):\n    return messages[-1].text\n")
    (tmp_path / "agent.yaml").write_text(f"target: python:{module}:echo\n")
    check = [{"type": "contains", "value": "hi"}]
    cases = [{"id": f"c{i}", "input": f"hi {i}", "assertions": check} for i in range(20)]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return tmp_path


@pytest.mark.parametrize("parallel", [1, 8])
def test_every_result_reaches_every_reporter_once(folder, parallel):
    recording = Recording(folder / "r.rec")
    summary = asyncio.run(_run(folder, [recording], parallel))
    assert summary["passed"] == 20 and summary["not_run"] == 0
    assert sorted(recording.ids) == sorted(f"c{i}" for i in range(20))
    if parallel == 1:  # one worker: reported in the order run
        assert recording.ids == [f"c{i}" for i in range(20)]


def test_a_reporter_that_breaks_mid_run_costs_neither_the_stream_nor_the_others(folder):
    broken, after = Recording(folder / "b.rec", fail_at=3), Recording(folder / "a.rec")
    with pytest.raises(ReportError, match=r"recording reporter \(.*b\.rec\) failed: OSError: disk full") as raised:
        asyncio.run(_run(folder, [broken, after], parallel=4))
    assert f"every result is in {folder / 'out.jsonl'}" in str(raised.value)
    lines = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    assert len([r for r in lines if r["type"] == "result"]) == 20 and lines[-1]["type"] == "summary"
    assert len(after.ids) == 20 and len(broken.ids) == 3


def test_a_broken_stream_is_not_said_to_hold_the_results(folder):
    with pytest.raises(ReportError) as raised:
        asyncio.run(_run(folder, [], parallel=2, stream=BrokenStream(folder / "out.jsonl")))
    assert "every result is in" not in str(raised.value)


def test_run_finished_is_handed_the_summary_line_typed(folder):
    totals = Totals(folder / "t.rec")
    asyncio.run(_run(folder, [totals], parallel=4))
    summary = totals.summary
    last = json.loads((folder / "out.jsonl").read_text().splitlines()[-1])
    assert summary == last and summary["passed"] == 20  # the line itself, read as a mapping
    assert (summary.total, summary.passed, summary.failed, summary.errors, summary.not_run) == (20, 20, 0, 0, 0)
    assert summary.interrupted is False and summary.incomplete is None and summary.duration_ms > 0


def test_the_whole_file_reports_of_a_run_read_its_stream_once_between_them(folder, monkeypatch):
    import specrun._report.stream as stream

    registry = default_plugins().registry
    reports = [
        registry.reporter_for(f"report.{ext}")(folder / f"report.{ext}") for ext in ("json", "md", "html", "xml")
    ]
    scans = []
    real = stream.iter_stream
    monkeypatch.setattr(stream, "iter_stream", lambda path: scans.append(path) or real(path))
    asyncio.run(_run(folder, reports, parallel=4))
    assert len(json.loads((folder / "report.json").read_text())["results"]) == 20
    assert all((folder / f"report.{ext}").read_text().count("c19") for ext in ("md", "html", "xml"))
    assert scans == [folder / "out.jsonl"]  # one scan for the four reports, not one each


def test_an_executor_that_raises_errors_that_case_and_the_others_still_run(folder, monkeypatch):
    """A third party's executor (or an engine bug) raising for one case: before, the exception
    ended that worker silently and its remaining cases were "not run" in a run that exited 0."""
    real = Runner.run_one

    async def run_one(self, job):
        if job.case.id == "c3":
            raise RuntimeError("executor bug")
        return await real(self, job)

    monkeypatch.setattr(Runner, "run_one", run_one)
    totals = Totals(folder / "t.rec")
    summary = asyncio.run(_run(folder, [totals], 1))
    assert (summary["passed"], summary["errors"], summary["not_run"]) == (19, 1, 0)
    lines = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    c3 = next(r for r in lines if r.get("id") == "c3")
    assert c3["status"] == "error" and c3["error"] == "internal error: RuntimeError: executor bug"
