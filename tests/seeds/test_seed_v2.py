"""Every runnable example of V2's design runs unchanged.

V2 writes suites as JSON objects spread over lines with ``//`` comment lines; each block is
written to a ``.jsonl`` file of the example project exactly as the seed shows it and run against
V2's expense assistant (with its simulator, validator and generator agents and its
``env_test`` hooks, in Python). An assertion shown on its own is run inside a case. Command
lines run as written (``yao agent test`` read as ``specrun``) in the agent's folder. The
console layouts and JSON shapes the seed shows are checked against specrun's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .corpus import key_paths, project, run_command, specrun, stream_records, write_suite
from .extract import V2, Example, examples

EXAMPLES = examples(V2)
SUITES = [e for e in EXAMPLES if e.role == "cases"]
ASSERTIONS = [e for e in EXAMPLES if e.role == "assertion"]
COMMANDS = [e for e in EXAMPLES if e.role == "command"]
EXPENSE = "assistants/expense"


def _example(heading: str) -> Example:
    return next(e for e in EXAMPLES if e.heading == heading)


def test_the_extractor_finds_v2s_examples() -> None:
    assert [e.id for e in SUITES] == ["v2:106", "v2:120", "v2:165", "v2:196", "v2:224", "v2:368"]
    assert [e.id for e in ASSERTIONS] == ["v2:467", "v2:481"]
    assert len(COMMANDS) == 7
    # not runnable as written: `"assertions": [...]` is a placeholder (the same case twice, too)
    assert _example("Backward Compatibility").role == "other"


def _run_suite(root: Path, suite: Path, *flags: str) -> tuple[Any, list[dict[str, Any]]]:
    run = specrun([str(suite.relative_to(root / EXPENSE)), "-o", "out.jsonl", *flags], root / EXPENSE)
    records = list(stream_records(root / EXPENSE / "out.jsonl")) if (root / EXPENSE / "out.jsonl").exists() else []
    return run, [r for r in records if r["type"] == "result"]


@pytest.mark.parametrize("example", SUITES, ids=lambda e: e.id)
def test_suite_runs_unchanged(example: Example, tmp_path: Path) -> None:
    root = project(tmp_path)
    suite = write_suite(root / EXPENSE / "tests" / f"seed-{example.line}.jsonl", example)
    run, results = _run_suite(root, suite)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [r["id"] for r in results] == [v["id"] for v in example.values() or []]
    assert all(r["status"] == "passed" for r in results), results


@pytest.mark.parametrize("example", ASSERTIONS, ids=lambda e: e.id)
def test_assertion_runs_unchanged_inside_a_case(example: Example, tmp_path: Path) -> None:
    root = project(tmp_path)
    # the seed's assertion, as written, in the assertions of a case
    case = '{"id": "A1", "input": "Submit a $500 travel expense", "assertions": [\n' + example.text + "\n]}"
    suite = root / EXPENSE / "tests/assertion.jsonl"
    suite.write_text(case + "\n", "utf-8")
    run, results = _run_suite(root, suite)
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = results
    assert result["status"] == "passed" and result["assertions"][0]["type"] == example.values()[0]["type"]  # type: ignore[index]


def test_a_script_id_that_names_no_file_is_a_clear_error(tmp_path: Path) -> None:
    root = project(tmp_path)
    text = next(e for e in ASSERTIONS if "script" in e.text).text.replace("validate-expense", "validate-expenses")
    suite = root / EXPENSE / "tests/assertion.jsonl"
    suite.write_text('{"id": "A1", "input": "x", "assertions": [\n' + text + "\n]}\n", "utf-8")
    run, _ = _run_suite(root, suite)
    assert run.returncode == 2
    assert (
        "tests/assertion.jsonl:4:8: cannot find tests/validate-expenses.py for 'scripts:tests.validate-expenses'"
        in (run.stderr)
    )
    assert "(at cases[0].assertions[0].use)" in run.stderr


def test_the_script_files_function_must_be_there(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / EXPENSE / "tests/validate-expense.py").write_text("def other(output, input, expected):\n    return True\n")
    suite = root / EXPENSE / "tests/assertion.jsonl"
    text = next(e for e in ASSERTIONS if "script" in e.text).text
    suite.write_text('{"id": "A1", "input": "x", "assertions": [\n' + text + "\n]}\n", "utf-8")
    run, results = _run_suite(root, suite)
    assert run.returncode == 1 and results[0]["status"] == "error"
    assert "has no function 'validate_expense' or 'Assert'" in results[0]["assertions"][0]["message"]


# -- command lines ----------------------------------------------------------------------------

EXPENSE_CASES = _example("With Message History (Existing)")  # tests/expense.jsonl
DYNAMIC_CASES = _example("Dynamic Mode (Simulator + Checkpoints)")  # tests/dynamic.jsonl
INPUTS = _example("Testing Different Points in a Conversation")  # tests/inputs.jsonl


def _stream(cwd: Path) -> list[dict[str, Any]]:
    """The one default result stream, under the project root's ``.specrun/runs/`` (see docs/seeds.md)."""
    root = next((p for p in (cwd, *cwd.parents) if (p / "specrun.yaml").is_file()), cwd)
    (found,) = sorted((root / ".specrun" / "runs").glob("output-*.jsonl"))
    return list(stream_records(found))


def _all_passed(count: int) -> Callable[[Any, Path], None]:
    def check(run: Any, cwd: Path) -> None:
        results = [r for r in _stream(cwd) if r["type"] == "result"]
        assert len(results) == count and all(r["status"] == "passed" for r in results), results

    return check


def _hooks_ran(run: Any, cwd: Path) -> None:
    """BeforeAll's data reached AfterAll, and AfterAll got every result in full (V2)."""
    _all_passed(3)(run, cwd)
    after = json.loads((cwd / "after_all.json").read_text())
    assert after["before_data"] == {"initialized": True, "cases": ["expense-turn1", "expense-turn2", "expense-turn3"]}
    outputs = {r["id"]: r["output"] for r in after["results"]}
    assert outputs["expense-turn1"] == "What type of expense would you like to submit?"
    assert all(r["input"] and r["assertions"] for r in after["results"])


def _chat(run: Any, cwd: Path) -> None:
    assert run.stdout.strip().endswith("I'm fine, thank you! You said: Hello, how are you?")


def _generated(run: Any, cwd: Path) -> None:
    results = [r for r in _stream(cwd) if r["type"] == "result"]
    assert [r["id"] for r in results] == [f"gen-{i:03d}" for i in range(1, 11)]
    assert all(r["status"] == "passed" for r in results)


def _dynamic(run: Any, cwd: Path) -> None:
    _all_passed(1)(run, cwd)
    assert "Agent Test (Dynamic Mode)" in run.stdout and "ℹ Simulator: workers.test.user-simulator" in run.stdout
    assert "└─ ✓ checkpoint: call_create (tool: create_expense)" in run.stdout
    assert "3 turns, 3/3 checkpoints" in run.stdout


def _parallel(run: Any, cwd: Path) -> None:
    _all_passed(1)(run, cwd)
    assert "Agent Test (Parallel: 5)" in run.stdout and "ℹ Parallel: 5 concurrent" in run.stdout
    assert "Running Tests (5 parallel)" in run.stdout and "/test with 5 parallel)" in run.stdout


def _verbose(run: Any, cwd: Path) -> None:
    _all_passed(1)(run, cwd)
    assert "✓ tool_called" in run.stdout and "output: Expense submitted! Reference: EXP-001" in run.stdout


# command (as the seed writes it) -> what it must have done (it runs in assistants/expense)
SCENES: dict[str, Callable[[Any, Path], None]] = {
    "yao agent test -i ./tests/inputs.jsonl \\\n--before env_test.BeforeAll \\\n--after env_test.AfterAll": _hooks_ran,
    'yao agent test -i "Hello, how are you?" -n assistants.chat': _chat,
    "yao agent test -i ./tests/expense.jsonl": _all_passed(1),
    'yao agent test -i "agents:workers.test.generator?count=10" -n assistants.expense': _generated,
    "yao agent test -i ./tests/dynamic.jsonl --simulator workers.test.user-simulator": _dynamic,
    "yao agent test -i ./tests/expense.jsonl --parallel 5": _parallel,
    "yao agent test -i ./tests/expense.jsonl -v": _verbose,
}


def test_every_command_has_a_scene() -> None:
    assert {e.text for e in COMMANDS} == set(SCENES)


@pytest.mark.parametrize("example", COMMANDS, ids=lambda e: e.id)
def test_command_runs_unchanged(example: Example, tmp_path: Path) -> None:
    root = project(tmp_path)
    tests = root / EXPENSE / "tests"
    write_suite(tests / "inputs.jsonl", INPUTS)
    write_suite(tests / "expense.jsonl", EXPENSE_CASES)
    write_suite(tests / "dynamic.jsonl", DYNAMIC_CASES)
    run = run_command(example, root / EXPENSE)
    assert run.returncode == 0, run.stdout + run.stderr
    SCENES[example.text](run, root / EXPENSE)


# -- layouts and shapes ---------------------------------------------------------------------


def _report(tmp_path: Path, suite: Example, *flags: str) -> dict[str, Any]:
    root = project(tmp_path)
    path = write_suite(root / EXPENSE / "tests/cases.jsonl", suite)
    run = specrun([str(path), "-o", "report.json", *flags], root / EXPENSE)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((root / EXPENSE / "report.json").read_text())


def test_the_standard_json_report_has_every_field_of_the_seed(tmp_path: Path) -> None:
    seed = _example("JSON Output (Standard Mode)").values()[0]  # type: ignore[index]
    report = _report(tmp_path, INPUTS)
    assert key_paths(seed) - key_paths(report) == set()
    assert report["summary"]["agent_path"].endswith(EXPENSE) and report["summary"]["timeouts"] == 0
    assert report["metadata"]["input_file"].endswith("tests/cases.jsonl")
    for stamp in (report["metadata"]["started_at"], report["metadata"]["completed_at"]):
        assert stamp.endswith("Z") and len(stamp) == len("2025-12-25T10:00:00Z")


def test_the_dynamic_json_report_has_every_field_of_the_seed(tmp_path: Path) -> None:
    seed = _example("JSON Output (Dynamic Mode)").values()[0]  # type: ignore[index]
    report = _report(tmp_path, DYNAMIC_CASES)
    assert key_paths(seed) - key_paths(report) == set()


def test_failed_assertions_are_listed_as_assertion_errors(tmp_path: Path) -> None:
    root = project(tmp_path)
    suite = root / EXPENSE / "tests/cases.jsonl"
    suite.write_text('{"id": "T1", "input": "Hello", "assertions": [{"type": "contains", "value": "Bye"}]}\n')
    run = specrun([str(suite), "-o", "report.json"], root / EXPENSE)
    assert run.returncode == 1
    (result,) = json.loads((root / EXPENSE / "report.json").read_text())["results"]
    assert result["assertion_errors"] == [result["assertions"][0]["type"] + ": " + result["assertions"][0]["message"]]


def test_a_timeout_is_counted_in_timeouts(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / EXPENSE / "tests/slow.py").write_text("import time\n\ndef respond(messages, ctx):\n    time.sleep(2)\n")
    suite = root / EXPENSE / "tests/cases.jsonl"
    suite.write_text('{"id": "T1", "input": "Hello", "target": "python:slow:respond", "timeout": "0.2s"}\n')
    run = specrun([str(suite), "-o", "report.json"], root / EXPENSE)
    assert run.returncode == 1
    summary = json.loads((root / EXPENSE / "report.json").read_text())["summary"]
    assert summary["timeouts"] == 1 and summary["errors"] == 1


def test_the_turn_tree_shows_attachments_and_an_unnamed_case_its_id(tmp_path: Path) -> None:
    root = project(tmp_path)
    suite = root / EXPENSE / "tests/cases.jsonl"
    opening = '[{"role": "user", "content": [{"type": "text", "text": "Submit receipt"}, '
    opening += '{"type": "image", "source": "file://./fixtures/receipt.jpg"}]}]'
    simulator = '"simulator": {"use": "workers.test.user-simulator"}'
    suite.write_text(
        '{"id": "T002", "input": ' + opening + ", " + simulator + ', "checkpoints": [{"id": "extract_amount", '
        '"assertion": {"type": "contains", "value": "amount"}}]}\n'
        '{"id": "T005", ' + simulator + ', "checkpoints": [{"id": "ask_type", '
        '"assertion": {"type": "contains", "value": "type"}}]}\n'
    )
    run = specrun([str(suite)], root / EXPENSE)
    assert run.returncode == 0, run.stdout + run.stderr
    assert '└─ Turn 1: "Submit receipt" + [receipt.jpg] → "The receipt shows an amount' in run.stdout
    assert "1 turn, 1/1 checkpoints" in run.stdout
    assert "► [T005] T005 PASSED" in run.stdout  # no name and no input: the id titles it


def test_the_html_report_exports_json_and_csv_from_the_page(tmp_path: Path) -> None:
    import base64
    import csv
    import io
    import re

    root = project(tmp_path)
    suite = write_suite(root / EXPENSE / "tests/cases.jsonl", INPUTS)
    suite.write_text(suite.read_text() + '{"id": "=cmd|x", "input": "hello", "expected": "no"}\n')
    run = specrun([str(suite), "-o", "report.html"], root / EXPENSE)
    assert run.returncode == 1
    page = (root / EXPENSE / "report.html").read_text()
    links = dict(re.findall(r'download="specrun-results\.(\w+)" href="data:[^;]+;charset=utf-8;base64,([^"]+)"', page))
    exported = json.loads(base64.b64decode(links["json"]))
    assert [r["id"] for r in exported["results"]] == ["expense-turn1", "expense-turn2", "expense-turn3", "=cmd|x"]
    assert exported["summary"]["failed"] == 1 and exported["results"][3]["status"] == "failed"
    rows = list(csv.DictReader(io.StringIO(base64.b64decode(links["csv"]).decode())))
    assert [r["status"] for r in rows] == ["passed", "passed", "passed", "failed"]
    assert rows[3]["id"] == "'=cmd|x"  # a spreadsheet does not run it
    assert page.count("<script>") == 1  # the export needs no script of its own
