"""``specrun calibrate``: judge labelled outputs over real HTTP (the loopback judge) and count agreement."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import aiohttp
import pytest
from support.cli import run_cli
from support.llm_server import LLMServer, data_section

from specrun._history.store import History
from specrun.viewer.app import Viewer, serve
from specrun.viewer.store import Store


def judged(body: dict) -> str:
    """The response a judge prompt asks about (the reminder after an unusable reply comes last)."""
    return data_section(body["messages"][1]["content"])[0]["response"]


def judge(body: dict) -> dict:
    """Pass an output that says GOOD; an output that says ERROR gets an answer that is no verdict."""
    response = judged(body)
    if "ERROR" in response:
        return {"content": "I would rather not say."}
    passed = "GOOD" in response
    return {"content": {"passed": passed, "score": 1.0 if passed else 0.0, "reason": f"judged {response}"}}


@pytest.fixture(scope="module")
def server():
    with LLMServer(responder=judge) as running:
        yield running


SUITE = """\
cases:
  - id: capital
    input: What is the capital of France?
    assertions:
      - {type: llm, criteria: Names Paris}
  - id: tone
    input: Say hello
    assertions:
      - {type: contains, value: o}
      - {type: llm, criteria: Is polite}
  - id: plain
    input: Say hi
    assertions:
      - {type: contains, value: hi}
"""

# (case, output, human) and what the judge makes of it: a hand-computed confusion matrix
LABELS = [
    ("capital", "Paris GOOD", "pass"),  # tp
    ("capital", "It is Paris. GOOD", "pass"),  # tp
    ("capital", "Lyon GOOD", "fail"),  # fp
    ("capital", "Lyon", "fail"),  # tn
    ("capital", "Paris", "pass"),  # fn
    ("capital", "Marseille", "fail"),  # tn
    ("tone", "Hello GOOD", "pass"),  # tp
    ("tone", "Go away", "fail"),  # tn
    ("tone", "ERROR", "pass"),  # undecided: the judge gave no verdict, twice
    ("tone", "Nice GOOD", "fail"),  # fp
]


def project(tmp_path: Path, labels: list[str] | None = None) -> None:
    (tmp_path / "specrun.yaml").write_text("model: openai/gpt-4o-mini\n")
    (tmp_path / "suite.yaml").write_text(SUITE)
    lines = labels or [json.dumps({"case": c, "output": o, "human": h}) for c, o, h in LABELS]
    (tmp_path / "labels.jsonl").write_text("\n".join(lines) + "\n")


def calibrate(tmp_path: Path, server: LLMServer, *args: str):
    env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
    return run_cli(["calibrate", "suite.yaml", "--labels", "labels.jsonl", *args], tmp_path, env)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory, server):
    """One calibration, judged over HTTP; later calls of the same outputs come from the judge cache."""
    folder = tmp_path_factory.mktemp("calibrate")
    project(folder)
    server.requests.clear()
    proc = calibrate(folder, server, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder, json.loads(proc.stdout), list(server.requests)


def test_the_numbers_are_those_of_the_hand_computed_matrix(calibrated):
    _, result, requests = calibrated
    # tp 3, tn 3, fp 2, fn 1: po = 6/9; the judge passed 5/9, the person 4/9, so pe = 40/81
    assert result["matrix"] == {"tp": 3, "tn": 3, "fp": 2, "fn": 1}
    assert (result["n"], result["undecided"]) == (9, 1)
    assert result["agreement"] == round(6 / 9, 4)
    assert result["kappa"] == round(14 / 41, 4)  # (54/81 - 40/81) / (1 - 40/81)
    assert (result["tpr"], result["tnr"]) == (0.75, 0.6)
    # every judged output went to the judge as the response (ERROR twice: asked once more); no agent
    assert sorted(judged(r) for r in requests) == sorted([o for _, o, _ in LABELS] + ["ERROR"])


def test_per_case_and_per_assertion(calibrated):
    _, result, _ = calibrated
    capital, tone = result["cases"]
    assert capital["case"] == "capital" and capital["matrix"] == {"tp": 2, "tn": 2, "fp": 1, "fn": 1}
    assert capital["agreement"] == round(4 / 6, 4) and capital["kappa"] == round(1 / 3, 4)
    assert tone["matrix"] == {"tp": 1, "tn": 1, "fp": 1, "fn": 0} and tone["undecided"] == 1
    assert tone["tpr"] == 1.0 and tone["tnr"] == 0.5
    # only the model-backed assertion of tone is judged: the second of its assertions
    assert [(a["case"], a["assertion"], a["n"]) for a in result["assertions"]] == [
        ("capital", "llm #1", 6),
        ("tone", "llm #2", 3),
    ]


def test_disagreements_and_undecided_verdicts_are_listed(calibrated):
    _, result, _ = calibrated
    assert [(d["where"], d["human"], d["judge"], d["output"]) for d in result["disagreements"]] == [
        ("labels.jsonl:3", "fail", "passed", "Lyon GOOD"),
        ("labels.jsonl:5", "pass", "failed", "Paris"),
        ("labels.jsonl:10", "fail", "passed", "Nice GOOD"),
    ]
    assert result["disagreements"][0]["reason"] == "judged Lyon GOOD"
    (error,) = result["errors"]
    assert error["where"] == "labels.jsonl:9" and error["judge"] == "error" and "verdict" in error["reason"]


def test_the_table_and_the_min_kappa_gate(calibrated, server):
    folder, _, _ = calibrated
    passed = calibrate(folder, server, "--min-kappa", "0.3")
    assert passed.returncode == 0, passed.stderr
    out = passed.stdout
    assert "overall" in out and "agreement  66.7%" in out and "kappa  0.34" in out
    assert "tpr  75.0%  tnr  60.0%  undecided 1" in out
    assert 'labels.jsonl:5 capital llm #1: human pass, judge failed: "Paris"' in out
    assert "reason: judged Paris" in out
    gated = calibrate(folder, server, "--json", "--min-kappa", "0.5")
    assert gated.returncode == 1 and "kappa 0.34 is below --min-kappa 0.5" in gated.stderr
    assert json.loads(gated.stdout)["kappa"] == 0.3415  # the report still prints


def test_a_bad_labels_file_names_each_bad_line_and_exits_2(tmp_path, server):
    project(
        tmp_path,
        [
            "\ufeff" + json.dumps({"case": "capital", "output": "Paris", "human": "pass"}),  # a BOM: fine
            json.dumps({"case": "nope", "output": "x", "human": "pass"}),
            json.dumps({"case": "capital", "human": "pass"}),
            json.dumps({"case": "capital", "output": "x", "human": "yes"}),
            json.dumps({"case": "plain", "output": "hi", "human": "pass"}),
            "{not json",
        ],
    )
    server.requests.clear()
    proc = calibrate(tmp_path, server)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert 'labels.jsonl:2:1: unknown case "nope"' in err
    assert "labels.jsonl:3:1: missing field `output`" in err
    assert 'labels.jsonl:4:1: `human` must be "pass" or "fail", not "yes"' in err
    assert "labels.jsonl:5:1: case 'plain' has no model-backed assertion" in err
    assert "labels.jsonl:6:1: not JSON" in err
    assert "labels.jsonl:1:" not in err and err.count("labels.jsonl:") == 5
    assert "Traceback" not in err and not server.requests  # nothing judged before the file is right


BOT = """
def answer(messages, ctx):
    return {"What is the capital of France?": "Paris GOOD", "Say hello": "Hello"}.get(messages[-1].text, "hi")
"""


async def label_in_viewer(root: Path, choices: dict[str, str], origin: str | None = None) -> list[int]:
    """Press I agree / I disagree (``choices``: case id -> verdict) on the latest run's page of
    ``specrun view``; the statuses of the answers. Every label form is on a judged assertion."""
    history = History.open(root, {})
    runner, url = await serve(Viewer(Store(history), root, "127.0.0.1"), 0)
    statuses = []
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}run", params={"id": str(history.runs(1)[0]["id"])}) as page:
                forms = re.findall(r'<form class="label".*?</form>', await page.text())
            assert len(forms) == 2  # the llm assertions of capital and tone; not contains, nor plain's
            for case_id, verdict in choices.items():
                form = next(f for f in forms if f'name="case" value="{case_id}"' in f)
                fields = {k: v for k, v in re.findall(r'name="(\w+)" value="([^"]*)"', form) if k != "verdict"}
                headers = {"Origin": origin} if origin else {}
                async with http.post(f"{url}label", data={**fields, "verdict": verdict}, headers=headers) as done:
                    statuses.append(done.status)
                    if done.status == 200:
                        assert f"Labelled: {case_id} llm #" in await done.text()
            async with http.post(f"{url}label", data={**fields, "token": "stale", "verdict": "agree"}) as stale:
                statuses.append(stale.status)
    finally:
        await runner.cleanup()
        history.close()
    return statuses


def kept_labels(root: Path) -> list[dict]:
    history = History.open(root, {})
    try:
        return list(history.labels())
    finally:
        history.close()


def test_labels_given_in_the_viewer_are_what_calibrate_reads_without_labels(tmp_path, server):
    project(tmp_path)
    (tmp_path / "bot.py").write_text(BOT)
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
    assert run_cli(["suite.yaml"], tmp_path, env).returncode == 1  # tone's judge fails "Hello"
    foreign = asyncio.run(label_in_viewer(tmp_path, {"capital": "agree"}, origin="http://evil.example"))
    assert foreign == [403, 403] and kept_labels(tmp_path) == []
    # capital: the judge passed "Paris GOOD", the person disagrees (fail); tone: the judge failed, agreed (fail)
    assert asyncio.run(label_in_viewer(tmp_path, {"capital": "disagree", "tone": "agree"})) == [200, 200, 403]
    rows = kept_labels(tmp_path)
    assert [(r["case_id"], r["assertion"], r["human"], r["output"]) for r in rows] == [
        ("capital", 1, "fail", "Paris GOOD"),
        ("tone", 2, "fail", "Hello"),
    ]
    done = run_cli(["calibrate", "suite.yaml", "--json"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["labels"] == "the run history" and result["matrix"] == {"tp": 0, "tn": 1, "fp": 1, "fn": 0}
    assert (result["agreement"], result["kappa"], result["tpr"], result["tnr"]) == (0.5, 0.0, None, 0.5)
    assert [a["assertion"] for a in result["assertions"]] == ["llm #1", "llm #2"]  # tone's contains: not judged
    # the person changes their mind: the new label replaces the old one
    assert asyncio.run(label_in_viewer(tmp_path, {"capital": "agree"}))[0] == 200
    result = json.loads(run_cli(["calibrate", "suite.yaml", "--json"], tmp_path, env).stdout)
    assert result["matrix"] == {"tp": 1, "tn": 1, "fp": 0, "fn": 0} and result["kappa"] == 1.0


def test_without_labels_anywhere_calibrate_says_where_they_come_from(tmp_path, server):
    project(tmp_path)
    History.open(tmp_path, {}, create=True).close()
    proc = calibrate(tmp_path, server)  # --labels given: the history is not read
    assert proc.returncode == 0
    env = {**os.environ, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key-not-secret-123"}
    bare = run_cli(["calibrate", "suite.yaml"], tmp_path, env)
    assert bare.returncode == 2 and "no labels for these suites in the run history" in bare.stderr
    assert "specrun view" in bare.stderr and "--labels FILE" in bare.stderr


def test_a_label_may_give_the_conversation_its_output_answers_and_who_wrote_it(tmp_path, server):
    label = {"case": "capital", "output": "Rome", "human": "pass", "input": "And of Italy?", "agent": "bot-v2"}
    project(tmp_path, [json.dumps(label)])
    server.requests.clear()
    proc = calibrate(tmp_path, server, "--json")
    assert proc.returncode == 0, proc.stderr
    (request,) = server.requests
    conversation = data_section(request["messages"][1]["content"])[0]["conversation"]
    assert conversation == [{"role": "user", "content": "And of Italy?"}]  # not the case's own input
    (disagreement,) = json.loads(proc.stdout)["disagreements"]
    assert disagreement["agent"] == "bot-v2" and disagreement["judge"] == "failed"


def test_a_bad_line_deep_in_a_long_labels_file_stops_it_before_any_judge_call(tmp_path, server):
    good = json.dumps({"case": "capital", "output": "Paris GOOD", "human": "pass"})
    lines = [good] * 5000
    lines[4999] = json.dumps({"case": "capital", "output": "Paris", "human": "maybe"})
    project(tmp_path, lines)
    server.requests.clear()
    proc = calibrate(tmp_path, server)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'labels.jsonl:5000:1: `human` must be "pass" or "fail", not "maybe"' in proc.stderr
    assert proc.stderr.count("labels.jsonl:") == 1 and not server.requests  # every line checked first


def test_labels_are_read_line_by_line_and_only_json_line_ends_split_them(tmp_path):
    """Memory stays flat in the file's size (tracemalloc's peak while both passes read 10 MB),
    and an output may hold U+2028 and U+0085 as they are: JSON Lines end at \\n only."""
    import tracemalloc

    from specrun._core.data import Assertion, Case, Location
    from specrun._judges.calibration import read_labels

    case = Case("capital", Location("suite.yaml"), assertions=[Assertion("llm")])
    path = tmp_path / "labels.jsonl"
    odd = {"case": "capital", "output": "Paris\u2028GOOD\x85", "human": "pass"}
    line = json.dumps({"case": "capital", "output": "x" * 32000, "human": "fail"})
    path.write_text(json.dumps(odd, ensure_ascii=False) + "\n" + "\n".join([line] * 300) + "\n", encoding="utf-8")
    tracemalloc.start()
    try:
        labels = read_labels(path, {"capital": case}, {"capital": [("llm #1", case.assertions[0])]})
        first = next(labels)
        assert sum(1 for _ in labels) == 300
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < path.stat().st_size / 20, f"peak {peak:,} bytes reading {path.stat().st_size:,}"
    assert (first.output, first.where) == ("Paris\u2028GOOD\x85", f"{path}:1")


def test_a_label_line_past_the_reply_bound_is_a_bad_line_never_held(tmp_path, monkeypatch):
    """A line longer than any reply (64 MiB; 1 MiB here, to write less) is a bad line at its
    number, read past without being held: a 200 MB line took 830 MB, an endless one
    (``--labels /dev/zero``) all memory. The lines after it are still checked."""
    from specrun._core.data import Assertion, Case, Location
    from specrun._core.errors import SuiteError
    from specrun._judges import calibration
    from specrun._judges.calibration import read_labels

    monkeypatch.setattr(calibration, "LINE_LIMIT", 2**20, raising=False)

    case = Case("capital", Location("suite.yaml"), assertions=[Assertion("llm")])
    path = tmp_path / "labels.jsonl"
    with path.open("wb") as f:
        f.write(b'{"case": "capital", "human": "pass", "output": "' + b"x" * (2**21) + b'"}\n')
        f.write(b'{"case": "capital", "human": "maybe", "output": "x"}\n')
    with pytest.raises(SuiteError) as raised:
        read_labels(path, {"capital": case}, {"capital": [("llm #1", case.assertions[0])]})
    shown = [(p.line, p.message) for p in raised.value.problems]
    assert shown == [
        (1, "a line over 1 MiB, the bound of a reply"),
        (2, '`human` must be "pass" or "fail", not "maybe"'),
    ]


def test_a_labels_file_that_is_a_device_is_refused_before_any_judge_call(tmp_path, server):
    """``--labels /dev/zero`` read for ever (Ctrl-C ignored while reading): the file is read
    twice, checked and then judged, so it must be a regular file."""
    project(tmp_path, [])
    (tmp_path / "labels.jsonl").unlink()
    (tmp_path / "labels.jsonl").symlink_to("/dev/zero")
    server.requests.clear()
    proc = calibrate(tmp_path, server)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--labels labels.jsonl: not a regular file" in proc.stderr and not server.requests
