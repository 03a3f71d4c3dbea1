"""``specrun diff`` cannot pass a broken run (issue 18.3).

An incomplete or interrupted NEW run, cases missing from NEW and cases newly skipped are
regressions (exit 1); a report diff cannot trust (a field of the wrong type, a duplicate id, a
line that is not JSON) is exit 2 naming the file and the field, never an internal error.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from specrun._history.diff import Outcome, Side, compare_sides
from specrun.cli.main import main

FILE = "suites/s.yaml"


def result(cid: str, status: str = "passed", run: int = 1, **extra: Any) -> dict[str, Any]:
    record = {"type": "result", "id": cid, "status": status, "run": run, "duration_ms": 10.0, "output": "ok"}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": 0.001}
    record.update(error=None, assertions=[], usage=usage, tags=["t"], file=FILE, line=1)
    return {**record, **extra}


def summary(**extra: Any) -> dict[str, Any]:
    return {"type": "summary", "duration_ms": 50.0, "interrupted": False, "not_run": 0, **extra}


def start(total: int, runs: int = 1) -> dict[str, Any]:
    return {"type": "start", "specrun_report": "jsonl", "total_cases": total, "runs": runs}


def write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def stream(path: Path, records: list[dict[str, Any]], done: dict[str, Any] | None = None, total: int = 0) -> Path:
    total = total or len({json.dumps(r.get("id")) for r in records})
    return write(path, [start(total), *records, *([done] if done is not None else [])])


def report(path: Path, results: list[dict[str, Any]], **top: Any) -> Path:
    data = {"specrun_report": "1", "summary": {"interrupted": False, "not_run": 0}, "environment": {}, "metadata": {}}
    data.update(results=[{k: v for k, v in r.items() if k != "type"} for r in results], **top)
    path.write_text(json.dumps(data, indent=2))
    return path


def diff(old: Path, new: Path, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["diff", str(old), str(new)])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


TEN = [result(f"c{i}", line=i + 1) for i in range(10)]


@pytest.fixture
def baseline(tmp_path):
    return stream(tmp_path / "old.jsonl", TEN, summary())


# -- an incomplete NEW run is a regression ------------------------------------------------------


def test_a_killed_run_is_not_green(tmp_path, baseline, capsys):
    killed = stream(tmp_path / "new.jsonl", TEN[:2], done=None, total=10)  # no summary line, 8 missing
    code, out, _ = diff(baseline, killed, capsys)
    assert code == 1
    assert "❌ **Regressed**: NEW is incomplete, 8 missing from NEW" in out
    assert "⛔ **NEW is an incomplete run** (no summary line" in out and "2 of 10 planned runs have a result" in out
    assert "### ❓ Missing from NEW (8)" in out and "| c9 | passed |" in out


def test_an_interrupted_run_is_a_regression_even_with_every_case(tmp_path, baseline, capsys):
    # A second Ctrl-C can leave every case with a result ("interrupted" errors aside).
    new = stream(tmp_path / "new.jsonl", TEN, summary(interrupted=True))
    code, out, _ = diff(baseline, new, capsys)
    assert code == 1 and "NEW is an incomplete run** (interrupted)" in out
    not_run = stream(tmp_path / "not_run.jsonl", TEN, summary(not_run=3))
    code, out, _ = diff(baseline, not_run, capsys)
    assert code == 1 and "3 scheduled runs did not run" in out


def test_a_stream_with_fewer_results_than_planned_is_incomplete(tmp_path, baseline, capsys):
    # A summary, but result lines lost (a full disk): the start line's plan says so.
    new = stream(tmp_path / "new.jsonl", [*TEN[:9], result("extra", line=11)], summary(), total=11)
    code, out, _ = diff(baseline, new, capsys)
    assert code == 1 and "10 of 11 planned runs have a result" in out


@pytest.mark.parametrize("where", ["summary", "metadata"])
def test_an_interrupted_json_report_is_a_regression(tmp_path, baseline, capsys, where):
    top = {where: {"interrupted": True}}
    new = report(tmp_path / "new.json", TEN, **top)
    code, out, _ = diff(baseline, new, capsys)
    assert code == 1 and "NEW is an incomplete run** (interrupted)" in out


def test_an_incomplete_baseline_is_shown_but_new_decides(tmp_path, baseline, capsys):
    old = stream(tmp_path / "killed.jsonl", TEN, done=None)
    code, out, _ = diff(old, baseline, capsys)
    assert code == 0 and "✅ **No regressions**" in out and "⛔ **OLD is an incomplete run**" in out


# -- cases that NEW did not run -----------------------------------------------------------------


def test_passed_to_skipped_and_passed_to_missing_are_regressions(tmp_path, baseline, capsys):
    records = [result("c0", "skipped", duration_ms=0.0), *TEN[1:9]]  # c0 skipped, c9 gone
    new = stream(tmp_path / "new.jsonl", records, summary())
    code, out, _ = diff(baseline, new, capsys)
    assert code == 1
    assert "❌ **Regressed**: 1 newly skipped, 1 missing from NEW" in out
    assert "### ⏭️ Newly skipped (1)" in out and "| c0 | passed | skipped |" in out
    assert "### ❓ Missing from NEW (1)" in out and "| c9 | passed |" in out
    assert "NEW is an incomplete run" not in out  # complete, yet it regressed


def test_failed_to_skipped_is_a_regression_too(tmp_path, capsys):
    old = stream(tmp_path / "old.jsonl", [result("a", "failed")], summary())
    new = stream(tmp_path / "new.jsonl", [result("a", "skipped")], summary())
    code, out, _ = diff(old, new, capsys)
    assert code == 1 and "| a | failed | skipped |" in out


# -- reports diff cannot trust: exit 2, file and field --------------------------------------------


def test_duplicate_ids_are_an_error(tmp_path, baseline, capsys):
    # A passing copy must not hide a failing one.
    new = stream(tmp_path / "dup.jsonl", [*TEN, result("c3", "failed", line=4)], summary())
    code, _, err = diff(baseline, new, capsys)
    assert code == 2
    assert f"{new}:12: duplicate id: case 'c3' of {FILE} has a second result for run 1" in err
    dup = report(tmp_path / "dup.json", [*TEN, result("c3", "failed")])
    code, _, err = diff(baseline, dup, capsys)
    assert code == 2 and f"{dup}: duplicate id: results[10] and results[3] are both case 'c3'" in err


def test_runs_of_one_case_and_one_id_in_two_files_are_not_duplicates(tmp_path, capsys):
    runs = [result("a", run=1), result("a", run=2), result("a", file="suites/t.yaml")]
    old = stream(tmp_path / "old.jsonl", runs, summary(), total=2)
    code, _, err = diff(old, old, capsys)
    assert code == 0, err


RESULT_FIELDS = [
    ("id", 7),
    ("id", None),
    ("status", "done"),
    ("status", None),
    ("status", ["passed"]),
    ("name", 5),
    ("file", ["x"]),
    ("line", "1"),
    ("run", "1"),
    ("run", 1.5),
    ("duration_ms", "fast"),
    ("duration_ms", True),
    ("min_pass_rate", "50"),
    ("error", {"x": 1}),
    ("tags", 5),
    ("assertions", 5),
    ("turns", 5),
    ("usage", "free"),
    ("usage.cost", "1"),
    ("usage.prompt_tokens", "1"),
    ("usage.total_tokens", 1.5),
]
REPORT_ONLY_FIELDS = [("pass_rate", "high"), ("runs", "3"), ("avg_duration_ms", []), ("reason", 3)]
SUMMARY_FIELDS = [
    ("interrupted", "no"),
    ("not_run", "2"),
    ("min_pass_rate", "50"),
    ("duration_ms", "x"),
    ("total_cases", "10"),
    ("passed", 2.5),
    ("overall_pass_rate", "x"),
    ("usage", 3),
    ("usage.cost", "x"),
]


def with_field(record: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    record = json.loads(json.dumps(record))
    *parents, name = dotted.split(".")
    target = record
    for parent in parents:
        target = target[parent]
    target[name] = value
    return record


def assert_rejected(code: int, err: str, path: Path, field: str) -> None:
    assert code == 2, err
    assert str(path) in err and f"field {field}" in err and "internal error" not in err


@pytest.mark.parametrize(("field", "value"), RESULT_FIELDS, ids=[f"{f}={v!r}" for f, v in RESULT_FIELDS])
def test_a_result_line_with_a_wrong_type(tmp_path, baseline, capsys, field, value):
    bad = with_field(TEN[4], field, value)
    if value is None:  # a missing required field
        bad = {k: v for k, v in bad.items() if k != field}
    new = stream(tmp_path / "new.jsonl", [*TEN[:4], bad, *TEN[5:]], summary())
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, field)
    assert f"{new}:6:" in err  # the start line, then c0..c3, then the bad one


@pytest.mark.parametrize(
    ("field", "value"),
    RESULT_FIELDS + REPORT_ONLY_FIELDS,
    ids=[f"{f}={v!r}" for f, v in RESULT_FIELDS + REPORT_ONLY_FIELDS],
)
def test_a_json_report_result_with_a_wrong_type(tmp_path, baseline, capsys, field, value):
    bad = with_field(TEN[4], field, value)
    if value is None:
        bad = {k: v for k, v in bad.items() if k != field}
    new = report(tmp_path / "new.json", [*TEN[:4], bad, *TEN[5:]])
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, f"results[4].{field}")


@pytest.mark.parametrize(("field", "value"), SUMMARY_FIELDS, ids=[f"{f}={v!r}" for f, v in SUMMARY_FIELDS])
def test_a_summary_with_a_wrong_type(tmp_path, baseline, capsys, field, value):
    new = stream(tmp_path / "new.jsonl", TEN, with_field(summary(usage={"cost": 1.0}), field, value))
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, field)
    data = report(tmp_path / "new.json", TEN, summary=with_field({"usage": {}}, field, value))
    code, _, err = diff(baseline, data, capsys)
    assert_rejected(code, err, data, f"summary.{field}")


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        ([{"type": "start", "runs": "3"}], "runs"),
        ([{"type": "start", "total_cases": [10]}], "total_cases"),
        ([start(10), {"type": "results", "id": "x"}], "type"),
        ([start(10), {"type": 5}], "type"),
    ],
)
def test_start_lines_and_record_types(tmp_path, baseline, capsys, lines, field):
    new = write(tmp_path / "new.jsonl", [*lines, *TEN, summary()])
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, field)


@pytest.mark.parametrize(
    ("top", "field"),
    [
        ({"summary": ["x"]}, "summary"),
        ({"metadata": "x"}, "metadata"),
        ({"metadata": {"interrupted": "no"}}, "metadata.interrupted"),
    ],
)
def test_json_report_sections_with_a_wrong_type(tmp_path, baseline, capsys, top, field):
    new = report(tmp_path / "new.json", TEN, **top)
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, field)


def test_a_results_entry_that_is_not_an_object(tmp_path, baseline, capsys):
    new = report(tmp_path / "new.json", TEN)
    data = json.loads(new.read_text())
    data["results"][2] = "c2 passed"
    new.write_text(json.dumps(data))
    code, _, err = diff(baseline, new, capsys)
    assert_rejected(code, err, new, "results[2]")  # today the entry is dropped: a case vanishes


def test_non_json_lines_and_a_truncated_last_line(tmp_path, baseline, capsys):
    garbled = write(tmp_path / "garbled.jsonl", [start(10), *TEN[:5], "{not json", *TEN[5:], summary()])
    code, _, err = diff(baseline, garbled, capsys)
    assert code == 2 and f"{garbled}:7: not a JSON record" in err
    # A killed writer leaves a last line cut short: readable, and incomplete.
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(json.dumps(x) + "\n" for x in [start(10), *TEN[:6]]) + json.dumps(TEN[6])[:30])
    code, out, err = diff(baseline, cut, capsys)
    assert code == 1 and "NEW is an incomplete run" in out and "6 of 10 planned runs" in out, err


def test_a_json_report_and_a_stream_are_told_apart_by_content(tmp_path, baseline, capsys):
    as_stream = report(tmp_path / "report.jsonl", TEN)  # a JSON report with the stream's extension
    code, out, err = diff(baseline, as_stream, capsys)
    assert code == 0 and "No regressions" in out, err
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(json.loads(as_stream.read_text())))
    code, out, err = diff(one_line, baseline, capsys)
    assert code == 0, err
    named_json = stream(tmp_path / "stream.json", TEN[:3], None, total=10)  # a killed stream named .json
    code, out, _ = diff(baseline, named_json, capsys)
    assert code == 1 and "NEW is an incomplete run" in out


# -- pairing by id is linear -------------------------------------------------------------------


def side(folder: str, n: int) -> Side:
    cases = {
        (f"{folder}/s.yaml", f"c{i}"): Outcome(f"c{i}", f"{folder}/s.yaml", "passed", pass_rate=100.0) for i in range(n)
    }
    return Side(Path(f"{folder}.jsonl"), cases, {})


def test_twenty_thousand_cases_in_another_checkout_pair_by_id_quickly():
    old, new = side("/ci/one", 20_000), side("/ci/two", 20_000)
    started = time.perf_counter()
    c = compare_sides(old, new)
    elapsed = time.perf_counter() - started
    assert not c.regressed and not c.added and not c.missing
    assert elapsed < 20, f"pairing 20,000 cases took {elapsed:.1f}s (it was quadratic: 88 s)"
