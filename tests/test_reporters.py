"""Whole-file reporters fed a constructed result stream: valid output, escaping, atomic writes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt

from specrun._core.data import Case, Location, Message, Response, ToolCall, Usage
from specrun._core.results import Result, RunInfo, Verdict
from specrun._project.plugin_manager import get_plugin_manager
from specrun._report.display import visible

HOSTILE = (
    '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> '
    "| pipe | ``` fence ```` longer `tick` [link](javascript:alert(1)) **bold** \x00\x07 end"
)
HOSTILE_NAME = "evil | <b>name</b> `x`\n# heading"
EXTENSIONS = (".json", ".md", ".html", ".xml")


def case(cid: str, line: int, text: str = "hello", file: str = "suites/chat.yaml", **kw: Any) -> Case:
    return Case(id=cid, location=Location(file, line), input=[Message("user", text)], **kw)


def result(c: Case, status: str, output: Any = "ok", run: int = 1, ms: float = 120.0, **kw: Any) -> dict[str, Any]:
    response = Response(content=output, tool_calls=kw.pop("tool_calls", [])) if output is not None else None
    return Result(c, status, duration_ms=ms, run=run, response=response, **kw).to_dict()  # type: ignore[arg-type]


def start(runs: int = 1, total: int = 0) -> dict[str, Any]:
    info = RunInfo(agent_id="demo.agent", target="python", inputs=["suites/"], total_cases=total, runs=runs)
    info.started_at = "2026-01-01T10:00:00Z"
    return {"type": "start", "specrun_report": "jsonl", **info.to_dict()}


def single_run_records() -> list[dict[str, Any]]:
    failing = Verdict.settled("contains", "failed", "'Paris' not found", expected="Paris", actual="Lyon | <i>")
    judge = Verdict.settled("judge", "error", "judge reply was not JSON")
    dyn = case("dyn", 40, name="Expense flow", file="suites/dynamic.yaml")
    turns = [{"turn": 1, "input": "Help", "output": "What type?"}, {"turn": 2, "input": "$250", "output": HOSTILE}]
    checkpoints = [{"id": "ask_type", "reached_at_turn": 1, "passed": True}]
    return [
        result(case("T001", 1), "passed", "Paris", usage=Usage(10, 5, 15, 0.002)),
        result(case("T002", 2), "failed", "Lyon", assertions=[failing]),
        result(case("T003", 3), "error", None, error="timeout after 30s"),
        result(case("T004", 4, skip=True), "skipped", None, error="not ready"),
        result(case("T005", 5), "error", "x", assertions=[judge]),
        result(case("hostile", 6, text=HOSTILE, name=HOSTILE_NAME), "failed", HOSTILE, assertions=[failing]),
        result(case("tools", 7), "passed", {"b": 1, "a": "<x>"}, tool_calls=[ToolCall("search", {"q": "<q>"})]),
        result(dyn, "passed", HOSTILE, turns=turns, checkpoints=checkpoints),
    ]


def write_stream(path: Path, records: list[dict[str, Any]], runs: int = 1, summary: bool = True) -> Path:
    lines = [start(runs, len({r["id"] for r in records})), *records]
    if summary:
        lines.append({"type": "summary", "duration_ms": 4321.0, "interrupted": False})
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def multi_run_records() -> list[dict[str, Any]]:
    flaky, steady, broken = case("flaky", 1), case("steady", 2), case("broken", 3)
    out = []
    for run in (1, 2, 3):  # interleaved, as a parallel run completes them
        out.append(result(broken, "error", None, run=run, error="agent error: boom"))
        out.append(result(flaky, "passed" if run != 2 else "failed", f"answer {run % 2}", run=run, ms=100.0 * run))
        out.append(result(steady, "passed", "same", run=run))
    return out


@pytest.fixture(scope="module")
def registry():
    return get_plugin_manager().registry


def write_report(registry, path: Path, stream: Path, summary: dict[str, Any] | None = None) -> str:
    reporter = registry.reporter_for(str(path))(path)
    reporter.run_finished(summary or {"duration_ms": 4321.0, "interrupted": False}, stream)
    return path.read_text(encoding="utf-8")


@pytest.fixture
def stream(tmp_path):
    return write_stream(tmp_path / "results.jsonl", single_run_records())


@pytest.fixture
def multi(tmp_path):
    return write_stream(tmp_path / "multi.jsonl", multi_run_records(), runs=3)


def test_extensions_pick_reporters(registry):
    names = {ext: registry.reporter_for(f"out/report{ext}").name for ext in (*EXTENSIONS, ".jsonl", ".markdown")}
    assert names == {
        ".json": "json",
        ".md": "markdown",
        ".html": "html",
        ".xml": "junit",
        ".jsonl": "jsonl",
        ".markdown": "markdown",
    }


def test_json_report_has_the_seed_shape(registry, stream, tmp_path):
    data = json.loads(write_report(registry, tmp_path / "r.json", stream))
    assert list(data) == ["specrun_report", "summary", "environment", "results", "metadata"]
    s = data["summary"]
    assert (s["total"], s["passed"], s["failed"], s["errors"], s["skipped"]) == (8, 3, 2, 2, 1)
    assert s["duration_ms"] == 4321.0 and s["agent_id"] == "demo.agent" and s["runs_per_case"] == 1
    assert s["usage"]["cost"] == 0.002
    assert data["environment"] == {"user_id": "test-user", "team_id": "test-team", "locale": "en-us"}
    ids = [r["id"] for r in data["results"]]
    assert ids == ["T001", "T002", "T003", "T004", "T005", "hostile", "tools", "dyn"]
    first = data["results"][0]
    assert first["status"] == "passed" and first["output"] == "Paris"
    assert first["input"] == [{"role": "user", "content": "hello"}]
    assert data["results"][-1]["turns"][1]["output"] == HOSTILE  # data kept exactly
    assert data["metadata"]["started_at"] == "2026-01-01T10:00:00Z"
    assert data["metadata"]["completed_at"] and data["metadata"]["interrupted"] is False


def test_json_report_with_runs_has_stability_and_run_details(registry, multi, tmp_path):
    data = json.loads(write_report(registry, tmp_path / "r.json", multi))
    s = data["summary"]
    assert (s["total_cases"], s["total_runs"], s["runs_per_case"]) == (3, 9, 3)
    assert (s["stable_cases"], s["unstable_cases"], s["consistently_failing_cases"]) == (1, 1, 1)
    assert (s["pass_hat_k"], s["pass_at_k"]) == (33.3, 66.7)
    flaky = next(r for r in data["results"] if r["id"] == "flaky")
    assert flaky["pass_rate"] == 66.7 and flaky["consistency"] == 0.67 and flaky["status"] == "failed"
    assert flaky["classification"] == "Unstable" and flaky["std_deviation_ms"] == 81.6
    assert [d["run"] for d in flaky["run_details"]] == [1, 2, 3]
    assert flaky["run_details"][0]["output"] == "answer 1"
    assert "input" in flaky and "file" not in flaky["run_details"][0]
    broken = next(r for r in data["results"] if r["id"] == "broken")
    assert broken["status"] == "error" and broken["reason"] == "agent error: boom"
    assert broken["classification"] == "Consistently Erroring", "every run an error: consistent, not unstable"


def test_gate_from_summary_decides_case_verdicts(registry, multi, tmp_path):
    summary = {"duration_ms": 1.0, "interrupted": False, "min_pass_rate": 60}
    data = json.loads(write_report(registry, tmp_path / "r.json", multi, summary))
    assert {r["id"]: r["status"] for r in data["results"]} == {"flaky": "passed", "steady": "passed", "broken": "error"}
    assert data["summary"]["min_pass_rate"] == 60


def test_runner_counts_do_not_override_stream_statistics(registry, multi, tmp_path):
    runner_summary = {"type": "summary", "total": 9, "passed": 5, "failed": 1, "errors": 3, "duration_ms": 9.0}
    data = json.loads(write_report(registry, tmp_path / "r.json", multi, runner_summary))
    assert (data["summary"]["total"], data["summary"]["passed"], data["summary"]["duration_ms"]) == (3, 1, 9.0)


def test_junit_parses_and_keeps_failures_and_errors_apart(registry, stream, tmp_path):
    write_report(registry, tmp_path / "r.xml", stream)
    xml = JUnitXml.fromfile(str(tmp_path / "r.xml"))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"suites/chat.yaml", "suites/dynamic.yaml"}
    chat = suites["suites/chat.yaml"]
    assert (chat.tests, chat.failures, chat.errors, chat.skipped) == (7, 2, 2, 1)
    kinds = {}
    for tc in chat:
        assert tc.classname == "suites/chat.yaml"
        kinds[tc.name] = sorted(type(r).__name__ for r in tc.result)
    assert kinds["T001"] == [] and kinds["tools"] == []
    assert kinds["T002"] == ["Failure"] and kinds["hostile"] == ["Failure"]
    assert kinds["T003"] == ["Error"] and kinds["T005"] == ["Error"]
    assert kinds["T004"] == ["Skipped"]
    t002 = next(tc for tc in chat if tc.name == "T002")
    assert isinstance(t002.result[0], Failure) and "Paris" in t002.result[0].message
    t003 = next(tc for tc in chat if tc.name == "T003")
    assert isinstance(t003.result[0], Error) and "timeout" in t003.result[0].message
    assert isinstance(next(tc for tc in chat if tc.name == "T004").result[0], Skipped)
    hostile = next(tc for tc in chat if tc.name == "hostile")
    assert "<script>" in hostile.system_out and "\x00" not in hostile.system_out  # escaped, legal XML
    props = {p.name: p.value for p in chat.properties()}
    assert props["pass_rate"] == "33.3" and props["runs_per_case"] == "1"


def test_junit_with_runs_is_one_testcase_per_case(registry, multi, tmp_path):
    text = write_report(registry, tmp_path / "r.xml", multi)
    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "r.xml")))
    assert (suite.tests, suite.failures, suite.errors) == (3, 1, 1)
    flaky = next(tc for tc in suite if tc.name == "flaky")
    assert "run 2: failed" in flaky.system_out
    assert re.search(r'<property name="pass_rate" value="66.7"\s*/>', text)


def _render_markdown(text: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def test_markdown_escapes_agent_text(registry, stream, tmp_path):
    text = write_report(registry, tmp_path / "r.md", stream)
    assert text.startswith("# specrun report")
    for heading in ("## Summary", "## Environment", "## Results", "### ✅ T001", "### ❌ T002", "### ⚠️ T003"):
        assert heading in text
    html = _render_markdown(text)
    # Rendered with raw HTML allowed (as GitHub renders before sanitising): nothing got through.
    assert "<script" not in html and "<img" not in html and "<b>" not in html and "<i>" not in html
    assert 'href="javascript' not in html and "<strong>bold</strong>" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html  # shown, as text
    assert html.count("<h1>") == 1  # the name's "# heading" did not become a heading
    assert "**Expected:**" in text and "Lyon | <i>" in text  # expected vs actual, in code blocks


def test_markdown_tables_survive_pipes(registry, stream, tmp_path):
    html = _render_markdown(write_report(registry, tmp_path / "r.md", stream))
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        widths = {row.count("<td") + row.count("<th") for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table


def test_markdown_fence_is_longer_than_backticks_inside(registry, stream, tmp_path):
    text = write_report(registry, tmp_path / "r.md", stream)
    assert "`````\n" + visible(HOSTILE) in text  # 4 backticks inside, a 5-tick fence
    assert "\x00" not in text and "\\x00\\x07" in text  # control characters shown, not replayed


def test_markdown_with_runs_has_stability_table(registry, multi, tmp_path):
    text = write_report(registry, tmp_path / "r.md", multi)
    assert "## Stability" in text and "| flaky | ❌ Failed | 66.7% | 20.8–93.9% | 0.67 | 3 (2/1/0) |" in text
    assert "pass^3 (all runs passed) | 33.3%" in text
    assert "#### Run 2: failed" in text


def test_html_escapes_everything_and_is_self_contained(registry, stream, tmp_path):
    text = write_report(registry, tmp_path / "r.html", stream)
    assert "<script>window" not in text and "<img" not in text and "<b>name" not in text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text
    assert "onerror=&quot;window.__pwned=1&quot;" in text
    assert text.count("<script") == 1  # ours only
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", text), "no network resources"
    assert "Content-Security-Policy" in text and "default-src 'none'" in text.replace("&#x27;", "'")
    for marker in (
        'id="summary"',
        'id="chart-pass-rate"',
        'id="chart-duration"',
        'id="filter"',
        'data-filter="failed"',
    ):
        assert marker in text
    assert text.count('class="case ') == 8


def test_html_script_hash_matches_csp(stream, registry, tmp_path):
    import base64
    import hashlib

    text = write_report(registry, tmp_path / "r.html", stream)
    script = re.search(r"<script>(.*?)</script>", text, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"sha256-{digest}" in text


def test_html_with_runs_shows_runs(registry, multi, tmp_path):
    text = write_report(registry, tmp_path / "r.html", multi)
    assert "Run 2: failed" in text and "Consistency" in text and "pass^3" in text


def test_html_lists_failures_and_errors_first(registry, stream, tmp_path):
    text = write_report(registry, tmp_path / "r.html", stream)
    listed = re.findall(r'<span class="cid">([^<]*)</span>', text)
    charted = re.findall(r'<span class="bar-label" title="([^"]*)"', text.split('id="chart-duration"')[0])
    # as the viewer orders a run: failed, error, passed, skipped, each in suite order
    assert listed == charted == ["T002", "hostile", "T003", "T005", "T001", "tools", "dyn", "T004"]


def _timeout_header(registry, tmp_path: Path, records: list[dict[str, Any]]) -> str:
    text = write_report(registry, tmp_path / "t.html", write_stream(tmp_path / "t.jsonl", records))
    return re.search(r'<p class="meta" id="timeout">Timeout: ([^<]*)</p>', text).group(1)


def test_html_header_shows_the_timeout_that_applied(registry, tmp_path):
    plain = [result(case("a", 1), "passed"), result(case("b", 2), "failed")]
    assert _timeout_header(registry, tmp_path, plain) == "2.0m"  # the run's (RunInfo's default)
    fast = [result(case(f"f{i}", i, file="suites/fast.yaml", timeout=30.0), "passed") for i in (1, 2)]
    assert _timeout_header(registry, tmp_path, fast) == "30.0s"  # every case had its suite's
    assert _timeout_header(registry, tmp_path, plain + fast) == "30.0s (suites/fast.yaml), 2.0m (others)"
    mixed = [*plain, result(case("slow", 9, timeout=300.0), "passed")]
    skipped = result(case("s", 1, file="suites/never.yaml", skip=True, timeout=1.0), "skipped", None)
    assert (  # a case's own timeout counts; a skipped case had none
        _timeout_header(registry, tmp_path, [*mixed, *fast, skipped])
        == "30.0s (suites/fast.yaml), 5.0m (some cases of suites/chat.yaml), 2.0m (others)"
    )
    many = [result(case("x", 1, file=f"s{i}.yaml", timeout=10.0), "passed") for i in range(5)]
    named = "10.0s (s0.yaml, s1.yaml, s2.yaml and 2 more suites), 2.0m (others)"
    assert _timeout_header(registry, tmp_path, [*plain, *many]) == named
    own = [result(case(f"o{i}", i, timeout=float(i)), "passed") for i in range(1, 30)]  # a header stays short
    assert _timeout_header(registry, tmp_path, [*plain, *own, *fast]) == (
        "1.0s to 30.0s (some cases of suites/chat.yaml, suites/fast.yaml), 2.0m (others)"
    )


def test_a_suites_default_timeout_reaches_the_html_header(tmp_path):
    from support.cli import run_cli

    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "echo.py").write_text("def respond(messages, ctx):\n    return 'hi'\n")
    (tmp_path / "agent.yaml").write_text("target: python:echo:respond\n")
    (tmp_path / "fast.yaml").write_text("defaults: {timeout: 3s}\ncases:\n  - {id: f1, input: x}\n")
    (tmp_path / "plain.yaml").write_text("cases:\n  - {id: p1, input: x}\n  - {id: p2, input: x, timeout: 4s}\n")
    done = run_cli(["fast.yaml", "plain.yaml", "-o", "out.jsonl", "-o", "out.html"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {r["id"]: r.get("timeout_s") for r in lines if r["type"] == "result"} == {"f1": 3.0, "p1": None, "p2": 4.0}
    header = re.search(r'id="timeout">Timeout: ([^<]*)<', (tmp_path / "out.html").read_text()).group(1)
    assert header == "3.0s (fast.yaml), 4.0s (some cases of plain.yaml), 10.0s (others)"


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_interrupted_run_is_said(registry, tmp_path, ext):
    records = single_run_records()[:2]
    stream = write_stream(tmp_path / "cut.jsonl", records, summary=False)
    text = write_report(registry, tmp_path / f"r{ext}", stream, {"duration_ms": 5.0, "interrupted": True})
    if ext == ".json":
        data = json.loads(text)
        assert data["summary"]["interrupted"] is True and data["metadata"]["interrupted"] is True
        assert len(data["results"]) == 2
    elif ext == ".xml":
        assert '<property name="interrupted" value="true"' in text
    else:
        assert "Interrupted" in text


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_empty_stream_is_a_valid_report(registry, tmp_path, ext):
    stream = write_stream(tmp_path / "empty.jsonl", [])
    text = write_report(registry, tmp_path / f"r{ext}", stream)
    if ext == ".json":
        assert json.loads(text)["results"] == []
    elif ext == ".xml":
        assert list(JUnitXml.fromfile(str(tmp_path / "r.xml"))) == []


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_atomic_write_replaces_whole_and_leaves_no_temp_file(registry, stream, tmp_path, ext):
    out = tmp_path / "out" / f"report{ext}"
    out.parent.mkdir()
    out.write_text("OLD CONTENT " * 100_000)
    os.chmod(out, 0o640)
    text = write_report(registry, out, stream)
    assert "OLD CONTENT" not in text
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
    assert out.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_failed_write_keeps_the_old_file(registry, tmp_path, ext):
    out = tmp_path / f"report{ext}"
    out.write_text("previous report")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "start"}\n{"type": "result", "id": "A", "status": "passed"}\n')
    reporter = registry.reporter_for(str(out))(out)
    original = reporter.run_finished

    def crash_midway(summary, path):
        import specrun._report.stream as stability

        real = stability.read_at

        def broken(*args, **kwargs):
            yield from real(*args, **kwargs)
            raise RuntimeError("disk full")

        stability.read_at = broken
        try:
            original(summary, path)
        finally:
            stability.read_at = real

    with pytest.raises(RuntimeError, match="disk full"):
        crash_midway({"interrupted": False}, bad)
    assert out.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_every_format_from_one_stream(registry, multi, tmp_path):
    for ext in EXTENSIONS:
        assert write_report(registry, tmp_path / f"all{ext}", multi)
    assert len(list(tmp_path.glob("all.*"))) == 4


def _peak(registry, tmp_path: Path, ext: str, n: int) -> int:
    import tracemalloc

    # A reporter's peak follows the output it holds at once: 20 KB per output keeps a reporter that
    # kept every result 4.7 times over the limit at 48 results (as 100 KB did), in a fifth of the time.
    big = "word " * 4_000  # 20 KB per output
    stream = tmp_path / f"big{n}.jsonl"
    write_stream(stream, [result(case(f"C{i:03}", i), "failed" if i % 3 else "passed", big) for i in range(n)])
    reporter = registry.reporter_for(f"r{ext}")(tmp_path / f"r{n}{ext}")
    tracemalloc.start()
    try:
        reporter.run_finished({"interrupted": False}, stream)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_memory_stays_flat_as_results_grow(registry, tmp_path, ext):
    small, large = _peak(registry, tmp_path, ext, 8), _peak(registry, tmp_path, ext, 48)
    assert large < small * 1.5, f"peak {small} bytes for 8 results of 20 KB, {large} for 48"
