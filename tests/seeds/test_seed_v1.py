"""Every runnable example of V1's design (Yao's ``agent test``) runs unchanged.

Suites are written to a file of the example project exactly as the seed shows them (one case
per line, or an object spread over lines) and run against V1's keyword agent, a model on the
loopback server. Command lines run as written, ``yao agent test`` read as ``specrun``, in the
folder the seed runs them from; each is checked for what its comment in the seed promises.
The report shapes the seed shows are checked field by field against specrun's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .corpus import key_paths, keyword_model, project, run_command, specrun, stream_records, write_suite
from .extract import V1, Example, examples

# Its tests import litellm in the test process: tests/conftest.py starts that import early.
IMPORTS_LITELLM = True

EXAMPLES = examples(V1)
SUITES = [e for e in EXAMPLES if e.role == "cases"]
COMMANDS = [e for e in EXAMPLES if e.role == "command"]
SHAPES = {e.heading: e for e in EXAMPLES if e.role == "shape"}
INPUTS = next(e for e in SUITES if e.heading == "Input Format (JSONL)")  # tests/inputs.jsonl


@pytest.fixture(scope="module")
def model() -> Iterator[Any]:
    server = keyword_model()
    yield server
    server.stop()


def test_the_extractor_finds_v1s_examples() -> None:
    kinds = {e.id: e.role for e in EXAMPLES}
    suites = ["v1:312", "v1:369", "v1:380", "v1:392", "v1:415", "v1:437", "v1:467", "v1:470", "v1:473"]
    assert [e.id for e in SUITES] == suites
    assert len(COMMANDS) == 25, kinds  # every `yao agent test` line, the CI job's included
    assert set(SHAPES) == {"Stability Report Structure", "Output Format", "Custom Report (with -r flag)"}


# -- suites ---------------------------------------------------------------------------------


@pytest.mark.parametrize("example", SUITES, ids=lambda e: e.id)
def test_suite_runs_unchanged(example: Example, tmp_path: Path, model: Any) -> None:
    root = project(tmp_path)
    suite = write_suite(root / "assistants/keyword/tests/inputs.jsonl", example)
    run = specrun(["-i", "tests/inputs.jsonl", "-o", "out.jsonl"], suite.parent.parent, model)
    assert run.returncode == 0, run.stdout + run.stderr
    results = [r for r in stream_records(suite.parent.parent / "out.jsonl") if r["type"] == "result"]
    assert [r["id"] for r in results] == [v["id"] for v in example.values() or []]
    assert all(r["status"] == "passed" for r in results), results


# -- command lines ----------------------------------------------------------------------------

KEYWORD = "assistants/keyword"


def _stream(root: Path) -> list[dict[str, Any]]:
    """The records of the one default result stream: ``.specrun/runs/output-<timestamp>.jsonl``
    under the project root (V1 writes it next to the input; see docs/seeds.md)."""
    (found,) = sorted((root / ".specrun" / "runs").glob("output-*.jsonl"))
    return list(stream_records(found))


def _passed(records: list[dict[str, Any]], runs: int = 1) -> dict[str, Any]:
    results = [r for r in records if r["type"] == "result"]
    assert len(results) == 6 * runs and all(r["status"] == "passed" for r in results), results
    return records[0]


def _direct(run: Any, cwd: Path, model: Any) -> None:
    """Direct message mode: the agent's answer is printed after the run; nothing is written."""
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["keywords"] and not list(cwd.rglob("output-*.jsonl"))


def _report(name: str, starts: str) -> Callable[[Any, Path, Any], None]:
    def check(run: Any, cwd: Path, model: Any) -> None:
        text = (cwd / name).read_text("utf-8")
        assert text.startswith(starts), text[:200]
        assert "T006" in text  # the cases of tests/inputs.jsonl are in it

    return check


def _default(runs: int = 1, **start: Any) -> Callable[[Any, Path, Any], None]:
    def check(run: Any, cwd: Path, model: Any) -> None:
        root = next(p for p in (cwd, *cwd.parents) if (p / "specrun.yaml").is_file())
        first = _passed(_stream(root), runs)
        for key, value in start.items():
            got = first["environment"][key] if key in ("user_id", "team_id") else first[key]
            assert got == value, (key, got)

    return check


def _model_asked(model_name: str, then: Callable[[Any, Path, Any], None]) -> Callable[[Any, Path, Any], None]:
    """The connector (-c) chose the model the loopback server was asked for."""

    def check(run: Any, cwd: Path, model: Any) -> None:
        assert model.requests and all(r["model"] == model_name for r in model.requests), model.requests[-1]["model"]
        then(run, cwd, model)

    return check


def _json_report(user: str, team: str, runs: int = 1) -> Callable[[Any, Path, Any], None]:
    def check(run: Any, cwd: Path, model: Any) -> None:
        report = json.loads((cwd / "report.json").read_text())
        assert report["environment"]["user_id"] == user and report["environment"]["team_id"] == team
        assert len(report["results"]) == 6 and all(r["status"] == "passed" for r in report["results"])
        if runs > 1:  # the CI step after it: jq -e '.results | all(.pass_rate >= 80)' report.json
            assert all(r["pass_rate"] >= 80 for r in report["results"]) and report["summary"]["runs_per_case"] == runs

    return check


def _written(path: str) -> Callable[[Any, Path, Any], None]:
    def check(run: Any, cwd: Path, model: Any) -> None:
        _passed(list(stream_records(cwd / path)))

    return check


def _agent_report(name: str, text: str) -> Callable[[Any, Path, Any], None]:
    def check(run: Any, cwd: Path, model: Any) -> None:
        assert text in (cwd / name).read_text("utf-8")

    return check


# command (as the seed writes it) -> (folder it runs in, what it must have done)
SCENES: dict[str, tuple[str, Callable[[Any, Path, Any], None]]] = {
    # Quick Start: the first runs in the agent's folder (after `cd assistants/keyword`)
    'yao agent test -i "hello world"': (KEYWORD, _direct),
    'yao agent test -i "hello world" -n keyword.agent': (".", _direct),
    "yao agent test -i assistants/keyword/tests/inputs.jsonl": (".", _default()),
    "yao agent test -i assistants/keyword/tests/inputs.jsonl --runs 5": (".", _default(runs=5)),
    "yao agent test -i assistants/keyword/tests/inputs.jsonl -r report.html -o report.html": (
        ".",
        _report("report.html", "<!doctype html>"),
    ),
    # Usage: in the agent's folder, tests/inputs.jsonl
    "yao agent test -i tests/inputs.jsonl": (KEYWORD, _default(agent_id="keyword.agent")),
    "yao agent test -i tests/inputs.jsonl -c openai.gpt4": (KEYWORD, _model_asked("gpt-4", _default())),
    "yao agent test -i tests/inputs.jsonl -n my.agent": (KEYWORD, _default(agent_id="my.agent")),
    "yao agent test -i tests/inputs.jsonl -u test-user -t test-team": (
        KEYWORD,
        _default(user_id="test-user", team_id="test-team"),
    ),
    "yao agent test -i tests/inputs.jsonl --runs 5": (KEYWORD, _default(runs=5)),
    "yao agent test -i tests/inputs.jsonl --timeout 10m": (KEYWORD, _default(timeout_s=600.0)),
    "yao agent test -i tests/inputs.jsonl --parallel 4": (KEYWORD, _default(parallel=4)),
    "yao agent test -i tests/inputs.jsonl --parallel 8 --timeout 2m": (KEYWORD, _default(parallel=8, timeout_s=120.0)),
    "yao agent test -i tests/inputs.jsonl -o /path/to/results.jsonl": (KEYWORD, _written("path/to/results.jsonl")),
    "yao agent test -i tests/inputs.jsonl -r report.html -o report.html": (
        KEYWORD,
        _report("report.html", "<!doctype html>"),
    ),
    "yao agent test -i tests/inputs.jsonl -r report.markdown -o report.md": (
        KEYWORD,
        _report("report.md", "# specrun report"),
    ),
    "yao agent test -i tests/inputs.jsonl \\\n  -n keyword.agent \\\n  -c deepseek.v3 \\\n  -u test-user \\\n"
    "  -t test-team \\\n  --runs 3 \\\n  --timeout 10m \\\n  --parallel 4 \\\n  -r report.html \\\n"
    "  -o report.html": (KEYWORD, _model_asked("deepseek-chat", _report("report.html", "<!doctype html>"))),
    # Input Modes
    'yao agent test -i "Extract keywords from this text"': (KEYWORD, _direct),
    'yao agent test -i "Extract keywords from this text" -n keyword.agent': (KEYWORD, _direct),
    'yao agent test -i "你好世界" -n keyword.agent -c deepseek.v3': (KEYWORD, _model_asked("deepseek-chat", _direct)),
    # Environment Override Priority
    "yao agent test -i tests/inputs.jsonl -u admin -t prod-team -o report.json": (
        KEYWORD,
        _json_report("admin", "prod-team"),
    ),
    # Custom Reporter Agent: project agents report.beautiful and report.slack
    "yao agent test -i tests/inputs.jsonl -r report.beautiful -o report.html": (
        KEYWORD,
        _agent_report("report.html", "<h1>Beautiful report</h1>"),
    ),
    "yao agent test -i tests/inputs.jsonl -r report.slack -o summary.txt": (
        KEYWORD,
        _agent_report("summary.txt", "6/6 agent tests passed"),
    ),
    # CI Integration (GitHub Actions), then its jq stability check
    "yao agent test -i assistants/keyword/tests/inputs.jsonl \\\n      -u ci-user -t ci-team \\\n      --runs 3 \\\n"
    "      -o report.json": (".", _json_report("ci-user", "ci-team", runs=3)),
}


def test_every_command_has_a_scene() -> None:
    texts = {e.text.strip() for e in COMMANDS}
    assert texts == set(SCENES), sorted(texts ^ set(SCENES))


@pytest.mark.parametrize("example", COMMANDS, ids=lambda e: e.id)
def test_command_runs_unchanged(example: Example, tmp_path: Path, model: Any) -> None:
    root = project(tmp_path)
    write_suite(root / KEYWORD / "tests/inputs.jsonl", INPUTS)
    where, check = SCENES[example.text.strip()]
    cwd = root / where
    if "/path/to/" in example.text:  # the seed's placeholder folder: made here, under the project
        example = Example(example.seed, example.line, example.kind, example.text.replace("/path/to/", "path/to/"))
    model.requests.clear()
    run = run_command(example, cwd, model)
    assert run.returncode == 0, run.stdout + run.stderr
    check(run, cwd, model)


# -- report shapes ----------------------------------------------------------------------------


def _ours(tmp_path: Path, model: Any, *flags: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run of tests/inputs.jsonl: its .json report and its result stream."""
    root = project(tmp_path)
    write_suite(root / KEYWORD / "tests/inputs.jsonl", INPUTS)
    cwd = root / KEYWORD
    run = specrun(["-i", "tests/inputs.jsonl", *flags, "-o", "report.json", "-o", "out.jsonl"], cwd, model)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((cwd / "report.json").read_text()), list(stream_records(cwd / "out.jsonl"))


def test_the_json_report_has_every_field_of_the_custom_report(tmp_path: Path, model: Any) -> None:
    seed = SHAPES["Custom Report (with -r flag)"].values(placeholders=True)[0]  # type: ignore[index]
    report, _ = _ours(tmp_path, model, "-c", "deepseek.v3")
    # output is what the agent answered: the seed's keyword agent answers an object, this one text
    assert {p for p in key_paths(seed) if not p.startswith("results[].output.")} - key_paths(report) == set()
    assert report["summary"]["connector"] == "deepseek.v3"


def test_the_stability_report_has_every_field_of_the_seed(tmp_path: Path, model: Any) -> None:
    seed = SHAPES["Stability Report Structure"].values(placeholders=True)[0]  # type: ignore[index]
    report, _ = _ours(tmp_path, model, "--runs", "3")
    assert key_paths(seed) - key_paths(report) == set()


def test_the_result_stream_has_every_field_of_the_seed(tmp_path: Path, model: Any) -> None:
    seed = SHAPES["Output Format"].values() or []
    _, records = _ours(tmp_path, model)
    for kind in ("start", "result", "summary"):
        wanted = set().union(*(set(r) for r in seed if r["type"] == kind))
        have = set().union(*(set(r) for r in records if r["type"] == kind))
        assert wanted - have == set(), kind
    start = records[0]
    assert start["timestamp"].endswith("Z") and len(start["timestamp"]) == len("2024-12-17T10:00:00Z")


# -- what the seed's flags promise, past a happy run ------------------------------------------


def test_an_unknown_reporter_is_an_error_before_the_run(tmp_path: Path, model: Any) -> None:
    root = project(tmp_path)
    write_suite(root / KEYWORD / "tests/inputs.jsonl", INPUTS)
    model.requests.clear()
    run = specrun(["-i", "tests/inputs.jsonl", "-r", "report.fancy", "-o", "r.html"], root / KEYWORD, model)
    assert run.returncode == 2 and not model.requests  # nothing ran
    assert "-r report.fancy: not a built-in reporter, and unknown agent 'report.fancy'" in run.stderr
    assert "report.html, report.json" in run.stderr and "report.summary" in run.stderr


def test_report_summary_is_a_brief_text_naming_what_failed(tmp_path: Path, model: Any) -> None:
    root = project(tmp_path)
    suite = root / KEYWORD / "tests/inputs.jsonl"
    suite.write_text('{"id": "T1", "input": "Hello"}\n{"id": "T2", "input": "Hello", "expected": "nope"}\n')
    run = specrun(["-i", "tests/inputs.jsonl", "-r", "report.summary", "-o", "summary.txt"], root / KEYWORD, model)
    assert run.returncode == 1
    text = (root / KEYWORD / "summary.txt").read_text()
    assert "Total: 2, Passed: 1, Failed: 1, Errors: 0, Skipped: 0" in text
    assert "❌ T2 - Failed: equals:" in text and text.rstrip().endswith("Result: FAILED")
    assert len(text.splitlines()) < 10


@pytest.mark.parametrize(
    ("reporter", "starts"),
    [
        ("report.html", "<!doctype html>"),
        ("report.markdown", "# specrun report"),
        ("report.json", '{\n  "specrun_report"'),
        ("report.summary", "Agent Test Summary"),
    ],
)
def test_a_built_in_reporter_named_by_r_writes_any_o_file(
    reporter: str, starts: str, tmp_path: Path, model: Any
) -> None:
    """V1's built-in reporter agents: -r names the format, whatever the -o file is called; the
    .jsonl stream stays a stream."""
    root = project(tmp_path)
    write_suite(root / KEYWORD / "tests/inputs.jsonl", INPUTS)
    cwd = root / KEYWORD
    run = specrun(["-i", "tests/inputs.jsonl", "-r", reporter, "-o", "report.out", "-o", "out.jsonl"], cwd, model)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (cwd / "report.out").read_text("utf-8").startswith(starts)
    assert next(stream_records(cwd / "out.jsonl"))["type"] == "start"
