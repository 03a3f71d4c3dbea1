"""Pass rates with 95% Wilson intervals, and McNemar's exact test in ``specrun diff``, against
values worked out by hand."""

from __future__ import annotations

import json
from math import comb

import pytest
from support.cli import run_cli
from test_diff import runs
from test_reporters import write_stream

from specrun._history.diff import compare_files, to_markdown
from specrun._report import rates
from specrun._report.rates import mcnemar, wilson_pct


@pytest.mark.parametrize(
    ("passed", "runs_", "interval"),
    [
        # p = k/n, z = 1.96: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
        (8, 10, [49.0, 94.3]),  # (0.8 + 0.19207 ± 1.95996·0.16001) / 1.38415 = 0.4902, 0.9433
        (0, 10, [0.0, 27.8]),  # (0 + 0.19207 + 1.95996·0.09800) / 1.38415 = 0.2775
        (3, 3, [43.9, 100.0]),  # (1 + 0.64024 - 1.95996·0.32669) / 2.28049 = 0.4385
        (1, 2, [9.5, 90.5]),
        (50, 100, [40.4, 59.6]),
    ],
)
def test_wilson_intervals(passed, runs_, interval):
    assert wilson_pct(passed, runs_) == interval
    assert wilson_pct(0, 0) is None


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 5, 2 / 2**5),  # every discordant case went one way: 2 · P(X = 0), X ~ Bin(5, 1/2)
        (1, 6, 2 * (1 + 7) / 2**7),
        (2, 10, 2 * (1 + 12 + 66) / 2**12),
        (3, 3, 1.0),
        (0, 0, 1.0),  # nothing discordant: nothing changed
    ],
)
def test_mcnemar_exact_two_sided(b, c, p):
    assert mcnemar(b, c) == p and mcnemar(c, b) == p


def test_mcnemar_at_sizes_where_2_to_the_n_overflows_a_float(monkeypatch):
    exact = 2 * sum(comb(1000, i) for i in range(451)) / 2**1000  # Python integers: no rounding until here
    assert mcnemar(450, 550) == exact
    monkeypatch.setattr(rates, "_EXACT_INTEGERS", 0)  # the same sum in logarithms, as for large counts
    assert mcnemar(450, 550) == pytest.approx(exact, rel=1e-9)


def stream(tmp_path, name, statuses):
    records = [r for line, (cid, s) in enumerate(statuses.items(), 1) for r in runs(cid, line, [s])]
    return write_stream(tmp_path / name, records, runs=1)


def test_diff_says_whether_the_change_is_larger_than_chance(tmp_path):
    green = {f"c{i}": "passed" for i in range(10)}
    old = stream(tmp_path, "old.jsonl", {**green, "skip": "skipped"})
    six = stream(tmp_path, "six.jsonl", {**green, **{f"c{i}": "failed" for i in range(6)}, "skip": "passed"})
    two = stream(tmp_path, "two.jsonl", {**green, "c0": "failed", "c1": "error", "new": "failed"})

    paired = compare_files(old, six).paired  # the skipped case and the new one are not paired
    assert (paired.both, paired.old_only, paired.new_only, paired.neither) == (4, 6, 0, 0)
    proc = run_cli(["diff", str(old), str(six)], tmp_path)
    assert proc.returncode == 1
    assert (
        "**Larger than chance?** Paired test (McNemar's exact test on the verdicts of the 10 cases both runs ran): "
        "6 passed only in OLD, 0 only in NEW; p = 0.0312, so the change is larger than chance (p < 0.05)."
    ) in proc.stdout
    assert "| Pass rate, 95% CI | 72.2–100.0% (10 runs) | 21.3–72.0% (11 runs) | |" in proc.stdout

    text = to_markdown(compare_files(old, two))  # 2 of 2 discordant one way: p = 2 · 1/4
    assert "2 passed only in OLD, 0 only in NEW; p = 0.5, so the change is within chance (p ≥ 0.05)" in text


def test_the_summary_and_the_agents_carry_intervals(tmp_path):
    from specrun._report.stream import scan

    path = write_stream(tmp_path / "r.jsonl", [*runs("a", 1, ["passed", "failed", "passed"])], runs=3)
    summary = scan(path).aggregator.summary()
    assert summary["overall_pass_rate_ci"] == [20.8, 93.9]
    assert scan(path).aggregator.cases()[0].to_dict()["pass_rate_ci"] == [20.8, 93.9]
    assert json.dumps(summary)  # strict JSON, as the reports write it


def test_a_hand_edited_report_shows_no_interval_rather_than_a_traceback(tmp_path):
    (tmp_path / "old.json").write_text(
        '{"results": [{"id": "a", "status": "passed", "runs": 3, "pass_rate": 150.0}],'
        ' "summary": {"runs_passed": -3, "runs_failed": 1, "runs_errors": 0}}'
    )
    agreement = '{"passed": "x", "failed": 1, "undecided": 0, "samples": 3}'
    (tmp_path / "new.jsonl").write_text(
        '{"type": "result", "id": "a", "status": "passed", "run": 1, "assertions": [{"type": "llm", '
        f'"status": "passed", "details": {{"agreement": {agreement}}}}}]}}\n{{"type": "summary"}}\n'
    )
    proc = run_cli(["diff", "old.json", "new.jsonl"], tmp_path)
    assert proc.returncode == 1 and not proc.stderr, proc.stderr
    assert "| Pass rate, 95% CI | - | 20.7–100.0% (1 run) | |" in proc.stdout
    assert "| a | passed (150.0%) | passed |" in proc.stdout
