"""``specrun rejudge``: a recorded run's answers judged again by the current assertions, no agent called."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer, data_section

from specrun._history.store import History

AGENT = """\
from pathlib import Path

def bot(messages, ctx):
    with Path(__file__).with_name("calls.txt").open("a") as calls:  # every call counted
        calls.write(ctx.case_id + "\\n")
    return "answer to " + messages[-1].text
"""

RECORDED = """\
cases:
  - {id: capital, input: capital of France?, assertions: [{type: contains, value: France}]}
  - {id: judged, input: say GOOD, assertions: [{type: contains, value: GOOD}]}
  - {id: edited, input: hello, assertions: [{type: contains, value: hello}]}
  - id: talk
    simulator: {type: scripted, turns: [one, two, three]}
    checkpoints: [{id: third, assertion: {type: contains, value: three}}]
  - id: chat
    simulator: {type: scripted, turns: [one, two]}
    checkpoints: [{id: any, required: false, assertion: {type: contains, value: zzz}}]
"""

# The same cases with today's assertions: capital's now fails, judged's is a judge; edited asks
# something else; talk's checkpoint is reached in recorded turn 2, chat's in none; new was never run.
CURRENT = """\
cases:
  - id: capital
    input: capital of France?
    assertions: [{type: contains, value: Berlin}, {type: latency, max: 60000}]
  - {id: judged, input: say GOOD, assertions: [{type: llm, criteria: Says GOOD}]}
  - {id: edited, input: hello there, assertions: [{type: contains, value: hello}]}
  - id: talk
    simulator: {type: scripted, turns: [one, two, three]}
    checkpoints: [{id: second, assertion: {type: contains, value: two}}]
  - id: chat
    simulator: {type: scripted, turns: [one, two]}
    checkpoints: [{id: seven, assertion: {type: contains, value: seven}}]
  - {id: new, input: hi, assertions: [{type: contains, value: hi}]}
"""


def judge(body: dict) -> dict:
    response = data_section(body["messages"][1]["content"])[0]["response"]
    passed = "GOOD" in response
    return {"content": {"passed": passed, "score": 1.0 if passed else 0.0, "reason": f"judged {response}"}}


def records(path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return {r.get("id", r["type"]): r for r in lines}


@pytest.fixture(scope="module")
def rejudged(tmp_path_factory):
    """One recorded run, then its rejudge with the current suite over the loopback judge."""
    root = tmp_path_factory.mktemp("rejudge")
    (root / "specrun.yaml").write_text("model: openai/gpt-4o-mini\n")
    (root / "agent_mod.py").write_text(AGENT)
    (root / "agent.yaml").write_text("target: python:agent_mod:bot\n")
    (root / "suite.yaml").write_text(RECORDED)
    first = run_cli(["suite.yaml", "-o", "first.jsonl", "--runs", "2"], root)
    assert first.returncode == 0, first.stdout + first.stderr
    calls = (root / "calls.txt").read_text()
    (root / "suite.yaml").write_text(CURRENT)
    with LLMServer(responder=judge) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
        done = run_cli(["rejudge", "first.jsonl", "suite.yaml", "-o", "again.jsonl", "-v"], root, env)
        asked = [data_section(r["messages"][1]["content"])[0]["response"] for r in server.requests]
    assert (root / "calls.txt").read_text() == calls  # not one call of the agent
    return root, done, asked


def test_a_changed_assertion_judges_the_recorded_output(rejudged):
    root, done, asked = rejudged
    assert done.returncode == 1, done.stdout + done.stderr  # capital now fails: a run's exit code
    again = records(root / "again.jsonl")
    assert again["capital"]["status"] == "failed"
    assert again["capital"]["output"] == "answer to capital of France?"
    assert again["capital"]["assertions"][1]["status"] == "passed"  # the recorded latency, read again
    assert again["judged"]["status"] == "passed"  # the llm judge, over HTTP, on the recorded answer
    assert asked == ["answer to say GOOD"] * 2  # once per recorded run


def test_every_recorded_run_is_rejudged(rejudged):
    root, _, _ = rejudged
    lines = [json.loads(line) for line in (root / "again.jsonl").read_text().splitlines()]
    assert lines[0]["runs"] == 2
    runs = sorted((r["id"], r["run"]) for r in lines if r["type"] == "result")
    assert runs == sorted((c, n) for c in ("capital", "judged", "edited", "talk", "chat") for n in (1, 2))


def test_a_case_whose_input_changed_is_not_rejudged(rejudged):
    root, _, _ = rejudged
    edited = records(root / "again.jsonl")["edited"]
    assert edited["status"] == "skipped"
    assert "input changed since stream first.jsonl" in edited["error"]
    assert edited["assertions"] == []  # no verdict made up


def test_a_case_not_in_the_stream_is_not_run_and_listed(rejudged):
    root, done, _ = rejudged
    again = records(root / "again.jsonl")
    assert "new" not in again
    assert again["summary"]["not_run"] == 2  # its two runs
    assert "not run: 2 not in stream first.jsonl" in done.stderr
    assert "suite.yaml:" in done.stderr and " new (agent " in done.stderr
    assert again["summary"]["not_judged"] == 2 and "2 NOT JUDGED (not in the recording)" in done.stdout


def test_a_rejudge_of_part_of_the_cases_that_all_pass_is_incomplete_not_all_passed(rejudged):
    root, _, _ = rejudged
    done = run_cli(["rejudge", "first.jsonl", "suite.yaml", "--run", "^(talk|new)$", "-o", "part.jsonl"], root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "INCOMPLETE: 2 not in the recording, not judged" in done.stdout and "ALL TESTS PASSED" not in done.stdout


def test_dynamic_checkpoints_are_checked_again_on_the_recorded_turns(rejudged):
    root, _, _ = rejudged
    again = records(root / "again.jsonl")
    talk = again["talk"]
    assert talk["status"] == "passed"
    assert [c["reached_at_turn"] for c in talk["checkpoints"]] == [2]
    assert [t["output"] for t in talk["turns"]] == ["answer to one", "answer to two"]
    # chat's recording ended on the simulator's word after 2 turns: the new required checkpoint is missed
    chat = again["chat"]
    assert chat["status"] == "failed"
    assert "missing checkpoints: seven" in chat["error"]
    assert chat["total_turns"] == 2


def test_the_rejudge_is_marked_in_its_stream_and_history(rejudged):
    root, _, _ = rejudged
    assert records(root / "again.jsonl")["start"]["rejudge"] == "stream first.jsonl"
    store = History.open(root, {})
    try:
        latest = store.runs()[0]
    finally:
        store.close()
    assert latest["argv"][:2] == ["rejudge", "first.jsonl"]
    assert "(rejudge of stream first.jsonl)" in run_cli(["history"], root).stdout


def test_a_history_run_id_is_a_recorded_run_too(rejudged):
    root, _, _ = rejudged
    store = History.open(root, {})
    try:
        recorded = store.runs()[-1]["id"]  # the first run: the recorded one
    finally:
        store.close()
    calls = (root / "calls.txt").read_text()
    done = run_cli(["rejudge", recorded, "suite.yaml", "-o", "third.jsonl", "--run", "capital|talk"], root)
    assert done.returncode == 1, done.stderr
    third = records(root / "third.jsonl")
    assert third["start"]["rejudge"] == f"run {recorded}"
    assert (third["capital"]["status"], third["talk"]["status"]) == ("failed", "passed")
    assert (root / "calls.txt").read_text() == calls


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        (None, "missing.jsonl: no such result stream file"),
        ('{"type": "start"}\n{"type": "result", "id": \n{"type": "summary"}\n', "bad.jsonl:2: not a JSON record"),
        ('{"type": "start"}\n[1, 2]\n', "bad.jsonl:2: expected a JSON object"),
        ('{"type": "start"}\n\n{"type": "result", "id": "cap', "bad.jsonl:3: not a JSON record: the line is cut short"),
        ('{"type": "result", "id": "capital", "file": "suite.yaml", "run": "x"}\n', "bad.jsonl:1: field `run`"),
        ('{"type": "result", "id": "c", "file": "s.yaml", "run": 1}\n' * 2, "bad.jsonl:2: case 'c' (agent '') run 1"),
        ("\x00" * 4, "bad.jsonl:1: not a specrun result stream (not a JSON record)"),  # was "cut short"
        ('{"type": "start", "working_dir": 123}\n', "bad.jsonl:1: field `working_dir`: expected a folder's path"),
        (  # a run index past the start's runs: the rejudge would plan that many runs of every case
            '{"type": "start", "runs": 2}\n{"type": "result", "id": "c", "file": "s.yaml", "run": 1000000000}\n',
            "bad.jsonl:2: field `run`: 1000000000 is past the 2 run(s) of its start line (line 1)",
        ),
    ],
)
def test_a_bad_stream_is_bad_input_with_its_line(rejudged, content, shown):
    root, _, _ = rejudged
    name = "missing.jsonl"
    if content is not None:
        name = "bad.jsonl"
        (root / name).write_text(content)
    done = run_cli(["rejudge", name, "suite.yaml", "--no-history"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert shown in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["first.jsonl", "./first.jsonl", "linked.jsonl"])
def test_the_rejudge_never_writes_over_its_recording(rejudged, name):
    """The recording is the evidence, read again case by case: -o onto it, by any of its names
    (a hard link too, which resolving the path did not see), is refused before anything runs."""
    root, _, _ = rejudged
    before = (root / "first.jsonl").read_bytes()
    if name == "linked.jsonl" and not (root / name).exists():
        os.link(root / "first.jsonl", root / name)
    done = run_cli(["rejudge", "first.jsonl", "suite.yaml", "--no-history", "-o", name], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"-o {name}: that is the stream being rejudged" in done.stderr
    assert (root / "first.jsonl").read_bytes() == before


def test_a_record_it_cannot_read_back_is_that_case_s_error_and_the_others_are_judged(rejudged):
    """A recorded answer whose fields a run never writes so (a stream edited by hand) is an error
    of its case, never judged on part of it; it raised out of the case, and the rejudge lost
    every result after it and exited 0 ("no tests ran")."""
    root, _, _ = rejudged
    lines = [json.loads(line) for line in (root / "first.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("id") == "capital":
            line["tool_calls"] = [{"nme": "lookup"}]
        if line.get("id") == "talk":
            line["turns"] = [*line["turns"], "not a turn"]
    (root / "edited.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    done = run_cli(["rejudge", "edited.jsonl", "suite.yaml", "--run", "^(capital|talk|chat)$", "-o", "out.jsonl"], root)
    assert done.returncode == 1, done.stderr
    results = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    got = {(r["id"], r["run"]): (r["status"], r["error"] or "") for r in results if r["type"] == "result"}
    assert len(got) == 6, got  # every recorded run of the three
    assert got[("capital", 1)][0] == "error" and "`tool_calls[0]` is not a tool call" in got[("capital", 1)][1]
    why = "not rejudged: stream edited.jsonl: the record of 'talk': `turns` is not a list of turns"
    assert got[("talk", 2)] == ("error", why)
    assert got[("chat", 1)][0] == "failed"  # judged: its checkpoint is reached in no recorded turn


def test_the_rejudge_has_the_runs_recorded_not_those_its_start_line_claims(rejudged):
    """A start line's `runs` no result reaches plans no run: 10**12 of them hung the rejudge
    (each one a not-run case, each listed in memory)."""
    root, _, _ = rejudged
    lines = (root / "first.jsonl").read_text().splitlines()
    start = json.loads(lines[0])
    (root / "claims.jsonl").write_text("\n".join([json.dumps({**start, "runs": 5000}), *lines[1:]]) + "\n")
    done = run_cli(["rejudge", "claims.jsonl", "suite.yaml", "--run", "^capital$", "-o", "claimed.jsonl"], root)
    claimed = records(root / "claimed.jsonl")
    assert (claimed["start"]["runs"], claimed["summary"]["not_run"]) == (2, 0), done.stderr
    assert "not run:" not in done.stderr


def test_a_run_index_no_run_could_reach_is_bad_input(rejudged):
    """A result of run 10**9 (its start line claiming more) would plan 10**9 runs of every case:
    the rejudge hung; a run has at least as many results as repetitions."""
    root, _, _ = rejudged
    lines = (root / "first.jsonl").read_text().splitlines()
    start, result = json.loads(lines[0]), json.loads(lines[1])
    forged = [json.dumps({**start, "runs": 10**12}), json.dumps({**result, "run": 10**9})]
    (root / "forged.jsonl").write_text("\n".join(forged) + "\n")
    done = run_cli(["rejudge", "forged.jsonl", "suite.yaml"], root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a result of run 1,000,000,000, but 1 result(s) in all" in done.stderr


def test_a_recorded_stream_is_not_held_in_memory(tmp_path):
    """What a rejudge keeps of a recording is where each record is, not the records (a run of a
    million cases is rejudged in flat memory): reading the index of 2,000 results of 2 KB answers
    peaks well under the file's size."""
    import tracemalloc

    import specrun._report.stream  # noqa: F401  # imported before the count: no part of the index
    from specrun._core.identity import ResultKey
    from specrun._run.replay import read_recorded

    stream = tmp_path / "big.jsonl"
    answer = "x" * 2000
    with stream.open("w") as f:
        f.write(json.dumps({"type": "start", "working_dir": str(tmp_path)}) + "\n")
        for i in range(2000):
            line = {"type": "result", "id": f"c{i}", "file": "suite.yaml", "run": 1, "agent": "a", "output": answer}
            f.write(json.dumps(line) + "\n")
    tracemalloc.start()
    try:
        recorded = read_recorded(str(stream), tmp_path, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < stream.stat().st_size / 4, (peak, stream.stat().st_size)
    assert recorded.record(ResultKey("suite.yaml", "c1234", "a", 1))["output"] == answer  # read again when it runs
    recorded.close()
