"""Stability statistics on constructed runs: rates, consistency, durations, gates, summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specrun._core.errors import UsageError
from specrun._core.fingerprint import fingerprint, normalize_output
from specrun._report.stability import (
    Aggregator,
    case_stats,
    classify,
    exit_code,
)
from specrun._report.stream import scan


def rec(case="A", run=1, status="passed", output="ok", ms=100.0, **extra):
    return {
        "type": "result",
        "id": case,
        "status": status,
        "run": run,
        "duration_ms": ms,
        "output": output,
        "error": None,
        "assertions": [],
        "file": "suite.yaml",
        "line": 1 + ord(case[0]),
        **extra,
    }


def test_all_passing_with_two_outputs_is_consistency_067_not_pass_rate():
    stats = case_stats([rec(output="Paris"), rec(run=2, output="paris "), rec(run=3, output="Lyon")])
    assert stats["pass_rate"] == 100.0
    assert stats["consistency"] == 0.67
    assert stats["distinct_outputs"] == 2
    assert stats["stable"] is True
    assert stats["classification"] == "Stable"
    assert stats["status"] == "passed"


def test_identical_output_failing_sometimes_is_consistency_1_and_lower_pass_rate():
    runs = [rec(output="same"), rec(run=2, status="failed", output="same"), rec(run=3, output="same")]
    stats = case_stats(runs)
    assert stats["consistency"] == 1.0
    assert stats["pass_rate"] == 66.7
    assert stats["stable"] is False
    assert stats["classification"] == "Unstable"
    assert stats["status"] == "failed"


def test_normalisation_text_whitespace_case_and_structured_key_order():
    assert normalize_output("  Hello\n\tWORLD ") == "hello world"
    assert normalize_output({"b": 1, "a": [1, 2]}) == normalize_output({"a": [1, 2], "b": 1})
    assert normalize_output({"a": "X"}) != normalize_output({"a": "x"})  # structured is exact
    assert fingerprint(rec(output={"b": 1, "a": 2})) == fingerprint(rec(output={"a": 2, "b": 1}))


def test_a_text_answer_is_fingerprinted_by_its_normalised_text_as_any_other_output():
    import hashlib

    from specrun._core.fingerprint import canonical_json

    for text in ["  Paris\n", 'a "quote" \\ and ünïcødé ☃', "\u2028\x00", "\ud800 lone"]:
        parts = [normalize_output(text), []]  # the definition (docs/reports.md), however it is computed
        expected = hashlib.blake2b(canonical_json(parts).encode("utf-8", "replace"), digest_size=16).digest()
        assert fingerprint(rec(output=text)) == fingerprint(rec(output=text, tool_calls=[])) == expected
    assert fingerprint(rec(output="Paris")) == fingerprint(rec(output=" paris ")) != fingerprint(rec(output="Lyon"))


def test_tool_calls_count_by_name_and_arguments():
    a = rec(tool_calls=[{"name": "search", "arguments": {"q": "x", "n": 1}}])
    b = rec(tool_calls=[{"name": "search", "arguments": {"n": 1, "q": "x"}, "result": "other"}])
    c = rec(tool_calls=[{"name": "search", "arguments": {"q": "y", "n": 1}}])
    d = rec(tool_calls=[{"name": "lookup", "arguments": {"q": "x", "n": 1}}])
    assert fingerprint(a) == fingerprint(b)
    assert len({fingerprint(a), fingerprint(c), fingerprint(d)}) == 3


def test_turn_outputs_count_in_dynamic_mode():
    a = rec(turns=[{"turn": 1, "input": "hi", "output": "Hello"}])
    b = rec(turns=[{"turn": 1, "input": "hey", "output": "hello"}])
    c = rec(turns=[{"turn": 1, "input": "hi", "output": "Bye"}])
    assert fingerprint(a) == fingerprint(b)  # the simulator's wording is not the agent's output
    assert fingerprint(a) != fingerprint(c)


def test_durations_population_std_dev():
    stats = case_stats([rec(ms=100), rec(run=2, ms=200), rec(run=3, ms=300), rec(run=4, ms=400)])
    assert stats["avg_duration_ms"] == 250.0
    assert stats["min_duration_ms"] == 100.0
    assert stats["max_duration_ms"] == 400.0
    assert stats["std_deviation_ms"] == round(math.sqrt(12500), 1)  # population, not sample
    assert stats["total_duration_ms"] == 1000.0


@pytest.mark.parametrize(
    ("rate", "label"),
    [
        (100, "Stable"),
        (99.9, "Mostly Stable"),
        (80, "Mostly Stable"),
        (79.9, "Unstable"),
        (50, "Unstable"),
        (49.9, "Highly Unstable"),
        (0.05, "Highly Unstable"),
        (0, "Consistently Failing"),
        (None, "Skipped"),
    ],
)
def test_classification_bounds(rate, label):
    assert classify(rate) == label


def test_every_run_failing_is_consistent_not_unstable():
    """0 of N is as consistent as N of N: "Consistently Failing" (or Erroring, when no run even
    reached a verdict), counted apart from the unstable cases in the summary."""
    failing = case_stats([rec(run=i, status="failed") for i in (1, 2, 3)])
    assert (failing["classification"], failing["stable"], failing["status"]) == (
        "Consistently Failing",
        False,
        "failed",
    )
    crashing = case_stats([rec(run=i, status="error", output=None, error="boom") for i in (1, 2)])
    assert crashing["classification"] == "Consistently Erroring"
    mixed = case_stats([rec(run=1, status="failed"), rec(run=2, status="error", output=None, error="boom")])
    assert mixed["classification"] == "Consistently Failing"
    one_in_three = [rec(run=1, status="failed"), rec(run=2), rec(run=3, status="failed")]
    assert case_stats(one_in_three)["classification"] == "Highly Unstable"


def test_classification_uses_exact_rate_not_rounded():
    runs = [rec(run=i) for i in range(1, 2000)] + [rec(run=2000, status="failed")]
    stats = case_stats(runs)
    assert stats["pass_rate"] == 100.0  # 99.95 rounds up for display...
    assert stats["classification"] == "Mostly Stable"  # ...but one run failed
    assert stats["stable"] is False


def test_errors_count_against_pass_rate_and_are_kept_apart():
    stats = case_stats([rec(), rec(run=2, status="error", output=None, error="timeout after 30s")])
    assert (stats["passed"], stats["failed"], stats["errors"]) == (1, 0, 1)
    assert stats["pass_rate"] == 50.0
    assert stats["status"] == "error"
    assert stats["reason"] == "timeout after 30s"


def test_reason_from_first_failing_assertion():
    failing = {"type": "contains", "status": "failed", "message": "'x' not found"}
    stats = case_stats([rec(status="failed", assertions=[{"type": "regex", "status": "passed"}, failing])])
    assert stats["reason"] == "contains: 'x' not found"


def test_gate_decides_per_case():
    runs = [rec(), rec(run=2), rec(run=3, status="failed"), rec(run=4), rec(run=5)]
    assert case_stats(runs)["status"] == "failed"
    assert case_stats(runs, min_pass_rate=80)["status"] == "passed"
    assert case_stats(runs, min_pass_rate=81)["status"] == "failed"
    own = [{**r, "min_pass_rate": 60} for r in runs]
    assert case_stats(own, min_pass_rate=100)["status"] == "passed"  # the case's own gate wins
    two_thirds = [rec(), rec(run=2), rec(run=3, status="failed")]
    assert case_stats(two_thirds, min_pass_rate=66.666666)["status"] == "passed"


def test_gate_with_only_errors_below_it_is_error():
    runs = [rec(), rec(run=2, status="error", output=None)]
    assert case_stats(runs, min_pass_rate=80)["status"] == "error"


def test_skipped_runs_are_not_runs():
    stats = case_stats([rec(status="skipped", output=None)])
    assert stats["runs"] == 0 and stats["skipped"] == 1
    assert stats["status"] == "skipped"
    assert stats["pass_rate"] is None and stats["consistency"] is None
    assert stats["classification"] == "Skipped"


def test_summary_pass_k_and_totals():
    agg = Aggregator(runs=3)
    for run in (1, 2, 3):
        agg.add(rec("A", run))  # all pass
        agg.add(rec("B", run, status="passed" if run == 1 else "failed"))  # one passes
        agg.add(rec("C", run, status="failed"))  # none
    agg.add(rec("D", 1, status="skipped", output=None))
    s = agg.summary(duration_ms=1234.56)
    assert s["total_cases"] == s["total"] == 4
    assert (s["passed"], s["failed"], s["errors"], s["skipped"]) == (1, 2, 0, 1)
    assert s["total_runs"] == 10
    assert s["runs_per_case"] == 3
    assert (s["runs_passed"], s["runs_failed"]) == (4, 5)
    assert s["overall_pass_rate"] == 44.4
    assert (s["stable_cases"], s["unstable_cases"], s["consistently_failing_cases"]) == (1, 1, 1)  # B; C
    assert s["pass_hat_k"] == 33.3  # A only
    assert s["pass_at_k"] == 66.7  # A and B
    assert s["duration_ms"] == 1234.6
    assert s["interrupted"] is False
    assert "usage" not in s
    assert exit_code(s) == 1


def test_summary_usage_and_gate():
    agg = Aggregator(min_pass_rate=50)
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "cost": 0.001}
    agg.add(rec("A", 1, usage=usage))
    agg.add(rec("A", 2, status="failed", usage={**usage, "cost": None}))
    s = agg.summary(interrupted=True)
    assert s["passed"] == 1 and exit_code(s) == 130  # the gate passed the case; the run was cut short
    assert exit_code({**s, "interrupted": False}) == 0
    assert s["usage"] == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30, "cost": 0.001}
    assert s["interrupted"] is True and s["min_pass_rate"] == 50
    assert s["duration_ms"] == 200.0  # the sum of run durations when no wall time is given


def test_same_id_in_two_files_are_two_cases():
    agg = Aggregator()
    agg.add(rec("A"))
    agg.add({**rec("A"), "file": "other.yaml"})
    assert len(agg) == 2


def test_aggregator_state_stays_small():
    agg = Aggregator()
    for run in range(1, 201):
        agg.add(rec("A", run, output="x" * 100_000 + str(run % 2)))
    (case,) = agg.cases()
    assert len(case.outputs) == 2  # two 16-byte hashes, no output kept
    assert case.offsets is None


def write_stream(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_scan_reads_offsets_gate_and_tolerates_a_cut_last_line(tmp_path):
    start = {"type": "start", "runs": 2, "total_cases": 2}
    lines = [start, rec("B", 1), rec("A", 1, status="failed"), rec("A", 2), rec("B", 2)]
    path = write_stream(tmp_path / "r.jsonl", [*lines, {"type": "summary", "min_pass_rate": 50}])
    stream = scan(path)
    a, b = stream.aggregator.cases()
    assert (a.id, b.id) == ("A", "B")  # suite order (line), not completion order
    assert [r["run"] for r in stream.records(a)] == [1, 2]
    assert a.status == "passed"  # the gate from the summary line
    assert stream.aggregator.runs_per_case == 2
    with path.open("a") as f:
        f.write('{"type": "result", "id": "C", "sta')  # a killed writer
    assert len(scan(path).aggregator) == 2


def test_scan_rejects_a_bad_line_in_the_middle(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"type": "start"}\nnot json\n{"type": "summary"}\n')
    with pytest.raises(UsageError, match=r"r\.jsonl:2"):
        scan(path)


CONTAINS = {"steady": "x", "mixed": "odd", "never": "nope"}


def test_a_case_failing_every_run_reads_consistently_failing_not_unstable(tmp_path):
    from support.cli import run_cli

    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "agent.yaml").write_text("target: python:turns:answer\n")
    (tmp_path / "turns.py").write_text(
        "import itertools\n_n = itertools.count()\n\n"
        "def answer(messages, ctx):\n"
        "    return messages[-1].text + (' odd' if next(_n) % 2 else ' even')\n"
    )
    # The agent's answers alternate between "x even" and "x odd" (one run at a time).
    lines = [{"id": i, "input": "x", "assertions": [{"type": "contains", "value": v}]} for i, v in CONTAINS.items()]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cli(["suite.jsonl", "--runs", "3", "--no-history", "-o", "r.md", "-o", "r.json"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "  Stable:    1\n  Unstable:  1\n  Failing:   1 consistently (no run passed)\n" in done.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    classes = {r["id"]: r["classification"] for r in report["results"]}
    assert classes == {"steady": "Stable", "mixed": "Unstable", "never": "Consistently Failing"}
    assert (report["summary"]["unstable_cases"], report["summary"]["consistently_failing_cases"]) == (1, 1)
    assert "| Consistently failing cases | 1 |" in (tmp_path / "r.md").read_text()
