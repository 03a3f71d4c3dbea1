"""``--shard I/N``: the parts cover every case once, stay the same across machines and file
orders, keep a case's runs together, balance by past durations, and reject bad values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_cli

from specrun._core.errors import UsageError
from specrun._core.identity import CaseKey
from specrun._run.shard import Shard, partition

AGENT = """
def reply(messages, ctx):
    text = messages[-1].content
    return "wrong" if text.endswith("7") else text
"""


def make_project(root: Path, files: int = 3, per_file: int = 7) -> Path:
    (root / "agent").mkdir(parents=True)
    (root / "specrun.yaml").write_text("")
    (root / "agent" / "agent.yaml").write_text("target: python:bot:reply\n")
    (root / "agent" / "bot.py").write_text(AGENT)
    for f in range(files):
        lines = [
            json.dumps({"id": f"c{i}", "input": f"say {f}-{i}", "expected": f"say {f}-{i}"}) for i in range(per_file)
        ]
        (root / "agent" / f"suite{f}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def results(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == "result"]


def start(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[0])


def run_shards(
    root: Path, count: int, *extra: str, inputs: tuple[str, ...] = ("agent",), name: str = "shard"
) -> list[Path]:
    outs = []
    for i in range(1, count + 1):
        out = root / f"{name}{i}.jsonl"
        done = run_cli([*inputs, "--shard", f"{i}/{count}", "-o", str(out), "-q", *extra], cwd=root)
        assert done.returncode in (0, 1), done.stderr
        outs.append(out)
    return outs


def test_shards_cover_every_case_exactly_once_with_all_its_runs(tmp_path):
    root = make_project(tmp_path / "p")
    outs = run_shards(root, 4, "--runs", "2")
    seen: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for index, out in enumerate(outs, 1):
        for r in results(out):
            seen.setdefault((r["file"], r["id"]), []).append((index, r["run"]))
    assert len(seen) == 21  # 3 files x 7 cases, none lost, none twice
    for runs in seen.values():  # both runs of a case, in one shard
        assert len({shard for shard, _ in runs}) == 1 and sorted(run for _, run in runs) == [1, 2]
    sizes = [len(results(out)) // 2 for out in outs]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 21  # round-robin: as even as can be
    info = [start(out)["shard"] for out in outs]
    assert [i["index"] for i in info] == [1, 2, 3, 4] and {i["count"] for i in info} == {4}
    assert {i["selected"] for i in info} == {21} and len({i["selection"] for i in info}) == 1
    assert [start(out)["total_cases"] for out in outs] == sizes


def test_partition_is_the_same_whatever_the_folder_or_the_input_order(tmp_path):
    first = make_project(tmp_path / "a")
    second = tmp_path / "elsewhere" / "b"
    shutil.copytree(first, second)
    files = tuple(f"agent/suite{f}.jsonl" for f in range(3))
    ids, selections = [], set()
    for root, inputs in ((first, files), (second, tuple(reversed(files)))):
        outs = run_shards(root, 3, inputs=inputs)
        ids.append([sorted((r["file"], r["id"]) for r in results(out)) for out in outs])
        assert len({start(out)["shard"]["partition"] for out in outs}) == 1
        selections |= {start(out)["shard"]["selection"] for out in outs}
    assert ids[0] == ids[1]
    assert len(selections) == 1  # the same cases' content too, wherever the checkout is: shards merge


def test_an_empty_shard_is_a_run_of_nothing_that_passes(tmp_path):
    root = make_project(tmp_path / "p", files=1, per_file=2)
    out = root / "s.jsonl"
    counts = []
    for i in (1, 2, 3):
        done = run_cli(["agent", "--shard", f"{i}/3", "-o", str(out)], cwd=root)
        counts.append(len(results(out)))
        if not results(out):
            assert done.returncode == 0, done.stdout + done.stderr
            lines = [json.loads(line) for line in out.read_text().splitlines()]
            assert [r["type"] for r in lines] == ["start", "summary"]
            assert "Shard: " + f"{i}/3 of 2 cases" in done.stdout
    assert sorted(counts) == [0, 1, 1]


@pytest.mark.parametrize("value", ["0/3", "4/3", "a/b", "3", "1/0", "-1/2"])
def test_invalid_shard_is_exit_2_before_anything_runs(tmp_path, value):
    root = make_project(tmp_path / "p", files=1, per_file=1)
    done = run_cli(["agent", "--shard", value, "-o", "out.jsonl"], cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--shard {value!r}" in done.stderr and "Traceback" not in done.stderr
    assert not (root / "out.jsonl").exists()


def test_parse():
    assert Shard.parse("2/3") == Shard(2, 3) and str(Shard.parse(" 1 / 1 ")) == "1/1"
    with pytest.raises(UsageError, match="from 1 to N"):
        Shard.parse("5/4")


def keys(n: int) -> list[CaseKey]:
    return [CaseKey("suite.yaml", f"case{i}", "agent") for i in range(n)]


def test_durations_balance_the_shards_longest_first():
    durations = {"case0": 9000.0, **{f"case{i}": 1000.0 for i in range(1, 10)}}
    assigned = partition(keys(10), 2, durations)
    loads = [sum(durations[k[1]] for k, s in assigned.items() if s == shard) for shard in (1, 2)]
    assert sorted(loads) == [9000.0, 9000.0]  # the long case alone against the nine short ones
    by_count = partition(keys(10), 2, {})
    count_loads = [sum(durations[k[1]] for k, s in by_count.items() if s == shard) for shard in (1, 2)]
    assert max(count_loads) > 9000.0  # what balancing saved: dealt by count, one shard gets the long case and more


def test_cases_without_a_past_duration_count_as_the_median():
    durations = {"case0": 100.0, "case1": 100.0, "case2": 100.0}  # case3..case5 are new
    assigned = partition(keys(6), 2, durations)
    assert sorted(list(assigned.values()).count(s) for s in (1, 2)) == [3, 3]
    assert partition(keys(6), 2, durations) == assigned  # deterministic


SLOW = """
import time

def reply(messages, ctx):
    if ctx.case_id == "c0":
        time.sleep(0.2)  # longer than the nine others together, loaded or not
    return messages[-1].content
"""


def test_shards_balance_by_the_durations_in_the_run_history(tmp_path):
    root = make_project(tmp_path / "p", files=1, per_file=10)
    (root / "agent" / "bot.py").write_text(SLOW)
    assert run_cli(["agent", "-q", "-o", "whole.jsonl"], cwd=root).returncode == 0  # recorded in .specrun/history.db
    # From here c0 is as quick as the others: the shards are split by the durations recorded above
    # (a shard's own run is not recorded), not by how long their cases take now.
    (root / "agent" / "bot.py").write_text(SLOW.replace("time.sleep(0.2)", "pass"))
    outs = run_shards(root, 2)
    info = [start(out)["shard"] for out in outs]
    assert all(i["balanced"] for i in info) and len({i["partition"] for i in info}) == 1
    sizes = {out: [r["id"] for r in results(out)] for out in outs}
    assert sorted(len(ids) for ids in sizes.values()) == [1, 9]  # the slow case alone against the nine others
    assert ["c0"] in sizes.values()
    unbalanced = run_shards(root, 2, "--no-history", name="plain")  # no history read: dealt by count
    assert [len(results(out)) for out in unbalanced] == [5, 5]
    assert not any(start(out)["shard"]["balanced"] for out in unbalanced)
    done = run_cli(["merge", *map(str, [outs[0], unbalanced[1]])], cwd=root)
    assert done.returncode == 2 and "split the cases differently" in done.stderr
