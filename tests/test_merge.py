"""``specrun merge``: shard streams joined into the reports an unsharded run writes, with its
totals, stability and exit code; streams that do not belong together are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from junitparser import JUnitXml
from support.cli import run_cli
from test_shards import make_project, run_shards

FLAKY = """
def reply(messages, ctx):
    text = messages[-1].content
    if text.endswith("-6") or (text.endswith("-3") and ctx.run == 2):
        return "wrong"
    return text
"""


def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p", files=3, per_file=7)
    (root / "agent" / "bot.py").write_text(FLAKY)  # c6 always fails, c3 fails its second run
    return root


def without_timing(value):
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if "duration" not in k and not k.endswith("_ms")}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


RUN = ("--runs", "3", "--min-pass-rate", "60", "--no-history")  # no flaky marks from the first run


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> Path:
    """The project with its streams split in halves (shard1-2.jsonl) and thirds (third1-3.jsonl),
    made once: a shard's run is not recorded in the history, so a test's copy of them is what
    running them itself would make."""
    root = project(tmp_path_factory.mktemp("merge"))
    run_shards(root, 2)
    run_shards(root, 3, name="third")
    return root


@pytest.fixture
def root(streams, tmp_path) -> Path:
    """This test's copy of ``streams``' project (a test may write into it, or cut a stream)."""
    return Path(shutil.copytree(streams, tmp_path / "p"))


def halves(root: Path) -> list[Path]:
    return [root / f"shard{i}.jsonl" for i in (1, 2)]


def thirds(root: Path) -> list[Path]:
    return [root / f"third{i}.jsonl" for i in (1, 2, 3)]


def test_merged_reports_equal_an_unsharded_run(tmp_path):
    root = project(tmp_path)
    whole = run_cli(["agent", *RUN, "-q", "-o", "whole.json", "-o", "whole.xml"], cwd=root)
    assert whole.returncode == 1
    shards = run_shards(root, 3, *RUN)
    outs = ["merged.json", "merged.xml", "merged.md", "merged.html", "merged.jsonl"]
    done = run_cli(["merge", *map(str, shards), *(a for o in outs for a in ("-o", o))], cwd=root)
    assert done.returncode == whole.returncode, done.stdout + done.stderr
    assert "3 of 3 shards, 21 cases)" in done.stdout
    a, b = (json.loads((root / f).read_text()) for f in ("whole.json", "merged.json"))
    assert without_timing(a["summary"]) == without_timing(b["summary"])
    assert (b["summary"]["passed"], b["summary"]["failed"], b["summary"]["total_runs"]) == (18, 3, 63)
    assert without_timing(a["results"]) == without_timing(b["results"])
    flaky = next(r for r in b["results"] if r["id"] == "c3")  # stability over its three runs, in one shard
    assert (flaky["status"], flaky["pass_rate"], flaky["classification"]) == ("passed", 66.7, "Unstable")
    junit = [JUnitXml.fromfile(str(root / f)) for f in ("whole.xml", "merged.xml")]
    assert [(s.tests, s.failures, s.errors) for s in junit[0]] == [(s.tests, s.failures, s.errors) for s in junit[1]]
    assert "c6" in (root / "merged.md").read_text() and "c6" in (root / "merged.html").read_text()
    for report in ("merged.json", "merged.jsonl"):  # diff takes the merged report and the merged stream
        compared = run_cli(["diff", "whole.json", report], cwd=root)
        assert compared.returncode == 0, compared.stdout
        assert "No regressions" in compared.stdout and "incomplete" not in compared.stdout


def test_diff_of_merged_reports_finds_a_regression(root):
    run_cli(["merge", *map(str, halves(root)), "-o", "before.json"], cwd=root)
    (root / "agent" / "bot.py").write_text(FLAKY.replace('"-6"', '"-5"'))
    run_cli(["merge", *map(str, run_shards(root, 2)), "-o", "after.json"], cwd=root)
    compared = run_cli(["diff", "before.json", "after.json"], cwd=root)
    assert compared.returncode == 1 and "Newly failing (3)" in compared.stdout and "Fixed (3)" in compared.stdout


def test_a_missing_shard_makes_the_merged_run_incomplete(root):
    shards = thirds(root)
    done = run_cli(["merge", str(shards[0]), str(shards[2]), "-o", "merged.json"], cwd=root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "2 of 3 shards, 14 of 21 cases" in done.stdout and "shard 2/3 not merged" in done.stderr
    report = json.loads((root / "merged.json").read_text())
    assert "shard 2/3 not merged" in report["metadata"]["incomplete"]
    assert report["summary"]["not_run"] == 7
    compared = run_cli(["diff", "merged.json", "merged.json"], cwd=root)
    assert compared.returncode == 1 and "NEW is incomplete" in compared.stdout
    run_cli(["merge", str(shards[0]), str(shards[2]), "-o", "part.jsonl"], cwd=root)
    done = run_cli(["merge", "part.jsonl", str(shards[1]), "-o", "whole.json"], cwd=root)  # the missing one joins
    assert done.returncode == 1 and "3 of 3 shards, 21 cases" in done.stdout, done.stdout + done.stderr
    assert json.loads((root / "whole.json").read_text())["metadata"]["incomplete"] is None


def test_a_shard_cut_short_makes_the_merged_run_incomplete(root):
    shards = halves(root)
    lines = shards[1].read_text().splitlines()
    shards[1].write_text("\n".join(lines[:-3]) + "\n")  # killed: two results and the summary lost
    done = run_cli(["merge", *map(str, shards), "-o", "merged.json"], cwd=root)
    assert done.returncode == 3 and "has no summary line" in done.stderr
    assert json.loads((root / "merged.json").read_text())["summary"]["not_run"] == 2


def refused(root: Path, *streams: Path | str) -> str:
    done = run_cli(["merge", *map(str, streams), "-o", "merged.json"], cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and not (root / "merged.json").exists()
    return done.stderr


def test_refuses_overlapping_shards(root):
    shards = halves(root)
    assert "both hold shard 1/2: overlapping shards" in refused(root, shards[0], shards[1], shards[0])
    (root / "again").mkdir()
    again = root / "again" / "shard1.jsonl"
    run_cli(["agent", "--shard", "1/2", "-o", str(again)], cwd=root)
    assert "overlapping shards" in refused(root, shards[0], again)
    assert "are parts of different splits (2 and 3)" in refused(root, shards[0], thirds(root)[1])


def test_refuses_streams_of_different_suites_or_runs(root, tmp_path):
    shards = halves(root)
    other = tmp_path / "other"
    make_project(other, files=2)
    elsewhere = run_shards(other, 2)
    assert "ran different selections of cases" in refused(root, shards[0], elsewhere[1])
    filtered = root / "filtered.jsonl"
    run_cli(["agent", "--shard", "2/2", "--run", "c[0-4]", "-o", str(filtered)], cwd=root)
    assert "ran different selections of cases" in refused(root, shards[0], filtered)
    twice = root / "twice.jsonl"
    run_cli(["agent", "--shard", "2/2", "--runs", "2", "-o", str(twice)], cwd=root)
    assert "ran with different --runs (1 and 2)" in refused(root, shards[0], twice)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"type": "start", "total_cases": 1}\n', "not a shard's stream: its run had no --shard I/N"),
        ('{"type": "result", "id": "a", "status": "passed"}\n', "its first line is no start record"),
        ("not json\n{}\n", "bad.jsonl: not a specrun report"),
        (
            '{"type": "start", "shard": {"index": 1, "count": 2, "selected": 1, "selection": "s", "partition": "p",'
            ' "contents": {"suite.yaml": ["c1"]}}}\n',
            "bad.jsonl:1: field shard: expected index, count, selected, selection, partition, contents",
        ),
    ],
)
def test_refuses_what_is_not_a_shard_stream(root, content, message):
    shards = halves(root)
    bad = root / "bad.jsonl"
    bad.write_text(content)
    assert message in refused(root, shards[0], bad)


def test_a_bad_field_names_the_file_and_line(root):
    shards = halves(root)
    lines = shards[1].read_text().splitlines()
    record = json.loads(lines[2])
    record["duration_ms"] = "slow"
    lines[2] = json.dumps(record)
    shards[1].write_text("\n".join(lines) + "\n")
    assert f"{shards[1]}:3: field duration_ms: expected a finite number" in refused(root, *shards)


def test_merge_does_not_overwrite_a_stream(root):
    shards = halves(root)
    done = run_cli(["merge", *map(str, shards), "-o", str(shards[0])], cwd=root)
    assert done.returncode == 2 and "is an input of this run" in done.stderr


def test_refuses_shards_of_different_versions_of_a_case(root):
    first = halves(root)[0]
    suite = root / "agent" / "suite1.jsonl"
    lines = suite.read_text().splitlines()
    lines[4] = json.dumps(dict(reversed(json.loads(lines[4]).items())))  # c4 written otherwise, the same case
    suite.write_text("\n".join(lines) + "\n")
    again = root / "again.jsonl"
    run_cli(["agent", "--shard", "2/2", "-o", str(again), "-q"], cwd=root)
    assert run_cli(["merge", str(first), str(again)], cwd=root).returncode == 1  # c6 fails, as before
    lines[4] = json.dumps({"id": "c4", "input": "say 1-4", "expected": "say 1-4 now"})  # c4 expects something else
    suite.write_text("\n".join(lines) + "\n")
    run_cli(["agent", "--shard", "2/2", "-o", str(again), "-q"], cwd=root)
    message = refused(root, first, again)
    assert f"{first} and {again} ran different versions of case 'c4' of agent/suite1.jsonl" in message


def test_a_shard_missing_planned_results_is_incomplete_never_passed(root):
    shards, lost = halves(root), {}
    for shard in shards:  # the failing results gone, the summaries kept: every result left passed
        lines = shard.read_text().splitlines()
        kept = [line for line in lines if json.loads(line).get("status") != "failed"]
        shard.write_text("\n".join(kept) + "\n")
        lost[shard] = (len(lines) - len(kept), len(lines) - 2)
    done = run_cli(["merge", *map(str, shards), "-o", "merged.json", "-o", "merged.md"], cwd=root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "INCOMPLETE" in done.stdout and "ALL TESTS PASSED" not in done.stdout
    report = json.loads((root / "merged.json").read_text())
    for shard, (missing, planned) in lost.items():
        if missing:
            why = f"{shard} lacks {missing} of the {planned} results it planned"
            assert why in done.stderr and why in report["metadata"]["incomplete"]
    assert report["summary"]["not_run"] == 3 and report["summary"]["failed"] == 0
    assert "**Incomplete**" in (root / "merged.md").read_text()


AGENTS = {"a": "return text", "b": 'return "wrong" if text.endswith(("1", "2")) else text'}


def test_a_run_against_several_agents_merges_and_diffs(tmp_path):
    """One result per (case, agent): the shards of a matrix run join into its reports."""
    (tmp_path / "specrun.yaml").write_text("")
    for name, body in AGENTS.items():
        folder = tmp_path / "agents" / name
        folder.mkdir(parents=True)
        code = f"def reply(messages, ctx):\n    text = messages[-1].content\n    {body}\n"
        (folder / f"{name}_bot.py").write_text(code)
        (folder / "agent.yaml").write_text(f"id: {name}\ntarget: python:{name}_bot:reply\n")
    cases = [json.dumps({"id": f"c{i}", "input": f"say {i}", "expected": f"say {i}"}) for i in range(6)]
    (tmp_path / "suite.jsonl").write_text("\n".join(cases) + "\n")
    agents = ("suite.jsonl", "-n", "a", "-n", "b", "-q")
    whole = run_cli([*agents, "-o", "whole.json", "-o", "whole.jsonl"], cwd=tmp_path)
    assert whole.returncode == 1, whole.stdout + whole.stderr
    shards = run_shards(tmp_path, 2, inputs=agents)
    done = run_cli(["merge", *map(str, shards), "-o", "merged.json", "-o", "merged.jsonl"], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 of 2 shards, 12 cases): 2 FAILED, 10 PASSED" in done.stdout
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("whole.json", "merged.json"))
    assert a["matrix"] == b["matrix"]

    def by_agent(results: list[dict]) -> list[dict]:  # a case's agents in the order its shards list them
        return without_timing(sorted(results, key=lambda r: (r["line"], r["agent"])))

    assert by_agent(a["results"]) == by_agent(b["results"])
    assert without_timing(a["summary"]["agents"]) == without_timing(b["summary"]["agents"])
    for old, new in (("whole.json", "merged.jsonl"), ("whole.jsonl", "merged.json")):
        compared = run_cli(["diff", old, new], cwd=tmp_path)
        assert compared.returncode == 0 and "No regressions" in compared.stdout, compared.stdout + compared.stderr
        assert "| c1 [b] | failed | failed |" in compared.stdout and "c1 [a]" not in compared.stdout
