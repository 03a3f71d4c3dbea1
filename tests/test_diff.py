"""``specrun diff``: comparison logic on constructed reports, Markdown, CLI exit codes, real runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import support.cli
from markdown_it import MarkdownIt
from test_reporters import case, result, write_report, write_stream

from specrun._core.data import Usage
from specrun._core.errors import UsageError
from specrun._history.diff import compare_files, load_side, to_markdown
from specrun._project.plugin_manager import get_plugin_manager
from specrun._report.display import md_block, md_text
from specrun.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def runs(cid: str, line: int, statuses: list[str], ms: float = 100.0, cost: float | None = None, **kw: Any):
    c = case(cid, line, **kw)
    usage = Usage(10, 10, 20, cost) if cost is not None else None
    return [result(c, s, f"out {cid}", run=i, ms=ms, usage=usage) for i, s in enumerate(statuses, 1)]


def old_records() -> list[dict[str, Any]]:
    return [
        *runs("stays_green", 1, ["passed"] * 3),
        *runs("breaks", 2, ["passed"] * 3),
        *runs("gets_fixed", 3, ["failed"] * 3),
        *runs("still_red", 4, ["error"] * 3),
        *runs("wobbles", 5, ["passed"] * 3, min_pass_rate=50),
        *runs("slows", 6, ["passed"] * 3, ms=100.0, cost=0.01),
        *runs("goes_away", 7, ["passed"] * 3),
    ]


def new_records() -> list[dict[str, Any]]:
    return [
        *runs("stays_green", 1, ["passed"] * 3),
        *runs("breaks", 2, ["passed", "failed", "failed"]),
        *runs("gets_fixed", 3, ["passed"] * 3),
        *runs("still_red", 4, ["failed"] * 3),
        *runs("wobbles", 5, ["passed", "failed", "passed"], min_pass_rate=50),
        *runs("slows", 6, ["passed"] * 3, ms=400.0, cost=0.03),
        *runs("brand_new", 8, ["passed"] * 3),
        *runs("new_and_red", 9, ["failed"] * 3, name="evil | <img src=x onerror=alert(1)>"),
    ]


@pytest.fixture
def files(tmp_path):
    old = write_stream(tmp_path / "old.jsonl", old_records(), runs=3)
    new = write_stream(tmp_path / "new.jsonl", new_records(), runs=3)
    return old, new


def ids(changes) -> list[str]:
    return sorted(c.case.id for c in changes)


def test_compare_sorts_cases(files):
    c = compare_files(*files)
    assert ids(c.newly_failing) == ["breaks", "new_and_red"]
    assert ids(c.fixed) == ["gets_fixed"]
    assert ids(c.still_failing) == ["still_red"]
    assert ids(c.moved) == ["wobbles"]  # passes under its gate, but its pass rate moved
    assert ids(c.added) == ["brand_new", "new_and_red"]  # a new case that fails is a new case too
    assert ids(c.missing) == ["goes_away"]
    assert ids(c.slower) == ["slows"] and c.faster == []
    assert ids(c.costlier) == ["slows"]
    assert ids(c.rate_dropped) == ["breaks", "wobbles"]
    assert c.regressed


def test_only_improvements_is_not_a_regression(files):
    old, new = files
    c = compare_files(new, old)  # reversed: breaks gets fixed, wobbles improves
    assert ids(c.fixed) == ["breaks"] and ids(c.missing) == ["brand_new", "new_and_red"]
    assert ids(c.newly_failing) == ["gets_fixed"]  # ...and gets_fixed breaks
    assert c.regressed


def test_identical_reports_do_not_regress(files):
    old, _ = files
    c = compare_files(old, old)
    assert not c.regressed and not c.moved and not c.newly_failing
    assert "✅ **No regressions**" in to_markdown(c)


def test_a_pass_rate_drop_alone_is_a_regression(tmp_path):
    old = write_stream(tmp_path / "a.jsonl", runs("x", 1, ["passed"] * 4, min_pass_rate=50), runs=4)
    new = write_stream(tmp_path / "b.jsonl", runs("x", 1, ["passed", "passed", "passed", "failed"], min_pass_rate=50))
    c = compare_files(old, new)
    assert not c.newly_failing and ids(c.moved) == ["x"]
    assert c.regressed and "1 with a lower pass rate" in to_markdown(c)


def test_markdown_comment(files):
    text = to_markdown(compare_files(*files))
    verdict = "❌ **Regressed**: 2 newly failing, 1 missing from NEW, 2 with a lower pass rate"
    assert text.startswith(f"## specrun diff\n\n{verdict}")
    for title in ("❌ Newly failing (2)", "✅ Fixed (1)", "🔁 Still failing (1)", "〰️ Pass rate moved (flaky) (1)"):
        assert f"### {title}" in text
    assert "### ➕ New cases (2)" in text and "### ❓ Missing from NEW (1)" in text
    added = text[text.index("### ➕ New cases") :].split("\n\n")[1]
    assert "| brand\\_new | passed (100.0%, 95% CI 43.9–100.0%) |" in added and "| new\\_and\\_red · evil" in added
    assert "| failed (0.0%, 95% CI 0.0–56.1%) |" in added  # every pass rate of several runs has its interval
    assert "### 🐢 Slower (mean duration) (1)" in text and "### 💸 Costlier per run (1)" in text
    assert "| breaks | passed (100.0%, 95% CI 43.9–100.0%) | failed (33.3%, 95% CI 6.1–79.2%) |" in text
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<img" not in html  # a case name cannot inject markup into the PR comment
    rows = [r for r in text.splitlines() if r.startswith("| new\\_and\\_red")]
    assert rows and rows[0].count(" | ") == 3  # the name's | did not add a column


def test_loads_json_reports_and_streams_alike(files, tmp_path):
    registry = get_plugin_manager().registry
    old, new = files
    old_json, new_json = tmp_path / "old.json", tmp_path / "new.json"
    write_report(registry, old_json, old)
    write_report(registry, new_json, new)
    from_streams = compare_files(old, new)
    from_json = compare_files(old_json, new_json)
    mixed = compare_files(old, new_json)
    for c in (from_json, mixed):
        assert ids(c.newly_failing) == ids(from_streams.newly_failing)
        assert ids(c.fixed) == ids(from_streams.fixed) and ids(c.moved) == ids(from_streams.moved)
        assert ids(c.slower) == ["slows"] and ids(c.costlier) == ["slows"]
    side = load_side(new_json)
    assert side.cases[("suites/chat.yaml", "breaks", "")].pass_rate == pytest.approx(33.3, abs=0.05)


def test_single_run_json_reports(tmp_path):
    registry = get_plugin_manager().registry
    old = write_stream(tmp_path / "a.jsonl", runs("x", 1, ["passed"]) + runs("y", 2, ["failed"]))
    new = write_stream(tmp_path / "b.jsonl", runs("x", 1, ["error"]) + runs("y", 2, ["passed"]))
    write_report(registry, tmp_path / "a.json", old)
    write_report(registry, tmp_path / "b.json", new)
    c = compare_files(tmp_path / "a.json", tmp_path / "b.json")
    assert ids(c.newly_failing) == ["x"] and ids(c.fixed) == ["y"]
    assert c.newly_failing[0].new.label == "error"


def test_cases_match_by_id_when_paths_differ(tmp_path):
    old = write_stream(tmp_path / "a.jsonl", runs("x", 1, ["passed"], file="/ci/one/suite.yaml"))
    new = write_stream(tmp_path / "b.jsonl", runs("x", 1, ["failed"], file="/ci/two/suite.yaml"))
    c = compare_files(old, new)
    assert ids(c.newly_failing) == ["x"] and not c.added and not c.missing


def matrix_records(verdicts: dict[tuple[str, str], list[str]]) -> list[dict[str, Any]]:
    """Result records of a run against several agents: (case, agent) -> the status of each run."""
    cases = {cid: case(cid, line) for line, cid in enumerate(dict.fromkeys(c for c, _ in verdicts), 1)}
    return [
        result(cases[cid], status, f"{agent} says {status}", run=run, agent=agent)
        for (cid, agent), statuses in verdicts.items()
        for run, status in enumerate(statuses, 1)
    ]


def test_runs_against_several_agents_pair_by_case_and_agent(tmp_path):
    registry = get_plugin_manager().registry
    green = ["passed", "passed"]
    old = {("capital", "a"): green, ("capital", "b"): ["failed"] * 2, ("greeting", "a"): green}
    new = {**old, ("capital", "a"): ["passed", "failed"], ("greeting", "b"): ["error"] * 2}
    sides = [write_stream(tmp_path / f"{n}.jsonl", matrix_records(v), runs=2) for n, v in (("old", old), ("new", new))]
    for n, stream in zip(("old", "new"), sides, strict=True):
        write_report(registry, tmp_path / f"{n}.json", stream)
    for pair in (sides, [tmp_path / "old.json", tmp_path / "new.json"], [sides[0], tmp_path / "new.json"]):
        c = compare_files(*pair)
        assert sorted((x.case.id, x.case.agent) for x in c.newly_failing) == [("capital", "a"), ("greeting", "b")]
        assert [(x.case.id, x.case.agent) for x in c.still_failing] == [("capital", "b")]
        assert [(x.case.id, x.case.agent) for x in c.added] == [("greeting", "b")] and not c.missing
        text = to_markdown(c)
        assert "| capital [a] | passed (100.0%, 95% CI 34.2–100.0%) | failed (50.0%, 95% CI 9.5–90.5%) |" in text
        assert "| greeting [b] | (new) |" in text
    twice = matrix_records({("capital", "a"): ["passed"], ("capital", "b"): ["passed"]})
    write_stream(tmp_path / "twice.jsonl", [*twice, twice[0]])
    with pytest.raises(
        UsageError, match=r"case 'capital' of suites/chat\.yaml with agent 'a' has a second result for run 1"
    ):
        load_side(tmp_path / "twice.jsonl")


def test_one_agent_compares_with_another(tmp_path):
    """Outside a matrix the agent is no part of a case's identity: agent v1's run against v2's."""
    old = write_stream(tmp_path / "a.jsonl", matrix_records({("x", "v1"): ["passed"], ("y", "v1"): ["failed"]}))
    new = write_stream(tmp_path / "b.jsonl", matrix_records({("x", "v2"): ["failed"], ("y", "v2"): ["passed"]}))
    c = compare_files(old, new)
    assert ids(c.newly_failing) == ["x"] and ids(c.fixed) == ["y"] and not c.added and not c.missing
    assert "| x | passed | failed |" in to_markdown(c)  # no agent named: there is one on each side


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "not a specrun report"), ("[1, 2]", "expected a JSON object"), ("{not json", "not a specrun report")],
)
def test_bad_input_is_a_usage_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        load_side(path)


def test_md_helpers():
    assert md_text("a | b\n# c <x> `y` *z*") == "a \\| b # c &lt;x&gt; \\`y\\` \\*z\\*"
    assert md_text("x" * 50, 10) == "x" * 9 + "…"
    assert md_block("has ```` four") == "`````\nhas ```` four\n`````"
    assert md_block("plain").startswith("```\n")


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_cli_exit_codes_and_output_file(files, tmp_path, capsys):
    old, new = files
    code, out, _ = run_cli(["diff", str(old), str(new)], capsys)
    assert code == 1 and out.startswith("## specrun diff")
    code, out, _ = run_cli(["diff", str(old), str(old)], capsys)
    assert code == 0 and "No regressions" in out
    target = tmp_path / "comment" / "diff.md"
    code, out, err = run_cli(["diff", str(old), str(new), "-o", str(target)], capsys)
    assert code == 1 and out == "" and target.read_text().startswith("## specrun diff")
    assert [p.name for p in target.parent.iterdir()] == ["diff.md"]
    code, _, err = run_cli(["diff", str(old), str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "missing.json: no such report file" in err
    (tmp_path / "junk.json").write_text("hello")
    code, _, err = run_cli(["diff", str(old), str(tmp_path / "junk.json")], capsys)
    assert code == 2 and "not a specrun report" in err


def _specrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return support.cli.run_cli(args, cwd)


def test_diff_of_two_real_runs_of_the_example_suite(tmp_path):
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "suites", suites)
    first = _specrun("keywords", "-o", str(tmp_path / "old.jsonl"), "-o", str(tmp_path / "old.json"), cwd=suites)
    assert first.returncode == 0, first.stdout + first.stderr
    agent = suites / "keywords" / "keywords_agent.py"
    agent.write_text(agent.read_text().replace('"changing change', '"cloud changing change'))  # a regression
    second = _specrun("keywords", "--runs", "2", "-o", str(tmp_path / "new.jsonl"), cwd=suites)
    assert second.returncode == 1, second.stdout + second.stderr

    diff = _specrun("diff", str(tmp_path / "old.jsonl"), str(tmp_path / "new.jsonl"), cwd=tmp_path)
    assert diff.returncode == 1, diff.stderr
    assert "### ❌ Newly failing (1)" in diff.stdout
    assert "| T001 | passed | failed (0.0%, 95% CI 0.0–65.8%) |" in diff.stdout
    back = _specrun("diff", str(tmp_path / "new.jsonl"), str(tmp_path / "old.json"), cwd=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert "### ✅ Fixed (1)" in back.stdout
    data = json.loads((tmp_path / "old.json").read_text())
    assert data["summary"]["passed"] == data["summary"]["total"] > 0
