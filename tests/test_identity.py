"""One case identity (specrun._core.identity) for every room: the history, --lf, shards, diff, merge, statistics."""

from __future__ import annotations

import json

from support.cli import run_cli

from specrun._core.identity import CaseKey, ResultKey, suite_key
from specrun._history.report_loading import load_side
from specrun._history.store import History
from specrun._report.stability import Aggregator


def _case(case_id: str, expect: str) -> str:
    return json.dumps({"id": case_id, "input": "hello", "assertions": [{"type": "contains", "value": expect}]})


def test_a_suite_outside_the_project_keeps_one_key_in_the_history_and_its_shown_file_in_a_shard(tmp_path):
    """The one ``suite_key``: the history (recording and --lf) names a suite outside the project
    by its path, a shard by the file the run shows; inside, both by the path from the root."""
    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "specrun.yaml").write_text("timeout: 60s\n")
    (root / "agent_mod.py").write_text("def echo(messages, ctx):\n    return 'echo: ' + messages[-1].text\n")
    (root / "agent.yaml").write_text("target: python:agent_mod:echo\n")
    (root / "suite.jsonl").write_text(_case("in", "hello") + "\n")
    (outside / "s.jsonl").write_text(_case("out-ok", "hello") + "\n" + _case("out-bad", "bye") + "\n")
    inputs = ["suite.jsonl", "../outside/s.jsonl", "-n", "proj"]
    assert run_cli([*inputs, "-o", "first.jsonl"], root).returncode == 1
    again = run_cli([*inputs, "--lf", "-o", "again.jsonl"], root)
    assert "--lf: rerunning the 1 case that failed last time (2 deselected)" in again.stderr
    history = History.open(root, {})
    try:
        (run,) = [r for r in history.runs() if "--lf" in r["argv"]]
        assert [(c["suite"], c["case_id"]) for c in history.cases(run["id"])] == [
            (str((outside / "s.jsonl").resolve()), "out-bad")
        ]
    finally:
        history.close()
    shard = run_cli([*inputs, "--shard", "1/1", "-o", "shard.jsonl"], root)
    assert shard.returncode == 1, shard.stdout + shard.stderr
    start = json.loads((root / "shard.jsonl").read_text().splitlines()[0])
    assert sorted(start["shard"]["contents"]) == ["../outside/s.jsonl", "suite.jsonl"]


def test_suite_key_is_the_path_from_the_root(tmp_path):
    inside = tmp_path / "suites" / "chat.yaml"
    assert suite_key(inside, tmp_path) == "suites/chat.yaml"
    assert suite_key(tmp_path / "suites" / ".." / "a.yaml", tmp_path) == "a.yaml"
    elsewhere = tmp_path.parent / "other.yaml"
    assert suite_key(elsewhere, tmp_path) == str(elsewhere)
    assert suite_key(elsewhere, tmp_path, outside="../other.yaml") == "../other.yaml"


def test_every_reader_of_a_stream_keys_a_case_alike(tmp_path):
    """A matrix stream: the statistics, ``diff``'s loader and the record itself give each case one key."""
    results = [
        {"type": "result", "id": "a", "status": s, "run": run, "agent": agent, "file": "s.yaml", "line": 1}
        for agent, s in (("x", "passed"), ("y", "failed"))
        for run in (1, 2)
    ]
    stream = tmp_path / "out.jsonl"
    lines = [{"type": "start", "runs": 2, "total_cases": 1}, *results, {"type": "summary"}]
    stream.write_text("".join(json.dumps(r) + "\n" for r in lines))
    keys = {CaseKey("s.yaml", "a", "x"), CaseKey("s.yaml", "a", "y")}
    assert {CaseKey.of(r) for r in results} == {ResultKey.of(r).case for r in results} == keys
    aggregator = Aggregator()
    for r in results:
        aggregator.add(r)
    assert {c.key for c in aggregator.cases()} == keys
    side = load_side(stream)
    assert set(side.cases) == {o.key for o in side.cases.values()} == keys
    assert {ResultKey.of(r) for r in results} == {ResultKey("s.yaml", "a", a, n) for a in "xy" for n in (1, 2)}


def test_paired_drops_the_agent_unless_a_matrix():
    key = CaseKey("s.yaml", "a", "bot")
    assert key.paired(True) == ("s.yaml", "a", "bot") and key.paired(False) == ("s.yaml", "a") == key.any_agent
    assert key.paired(True, suite=False) == ("a", "bot") and key.paired(False, suite=False) == ("a",)
    assert CaseKey.of({"id": "a", "file": None}) == CaseKey("", "a", "") and ResultKey.of({"id": "a"}).run == 1


def test_a_case_key_sorts_and_serializes_as_the_tuple_it_replaced():
    """Shard digests hash the keys as JSON: a stream written before the key type still merges."""
    assert json.dumps(CaseKey("s.yaml", "a", "bot")) == json.dumps(["s.yaml", "a", "bot"])
    assert hash(CaseKey("s", "a", "")) == hash(("s", "a", ""))
