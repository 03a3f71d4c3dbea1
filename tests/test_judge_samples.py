"""``samples: N`` on the judges: N calls over real HTTP to the loopback judge, the majority decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer

from specrun._core.data import Assertion, Case, Context, Location, Message, Response, Suite
from specrun._core.kinds import Check
from specrun._core.services import Services
from specrun._judges.assertions.judge import AgentJudge, LlmJudge
from specrun._judges.assertions.match import Match
from specrun._models.client import ModelClient
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run.verdicts import evaluate
from specrun.viewer.transcript import repetition

PASS = {"content": {"passed": True, "score": 0.9, "reason": "names Paris"}}
FAIL = {"content": {"passed": False, "score": 0.2, "reason": "names Lyon"}}
REFUSED = {"status": 401}  # not retried: that sample's call fails for good


@pytest.fixture(scope="module")
def server():
    with LLMServer() as srv:
        yield srv


CLIENTS: list[ModelClient] = []


@pytest.fixture
async def judge(server):
    server.unscript()
    server.requests.clear()
    server.max_in_flight = 0
    yield server
    while CLIENTS:
        await CLIENTS.pop().aclose()


def make_check(server: LLMServer, cache_dir: Path | None = None, *, suite_samples=None, config=None, agent_caller=None):
    params = {"api_base": server.base_url, "api_key": "test-key"}
    models = ModelClient("openai/gpt-4o-mini", params=params, cache_dir=cache_dir, retries=0)
    CLIENTS.append(models)
    suite = Suite(Path("suite.yaml"), samples=suite_samples)
    case = Case(id="c1", location=Location("suite.yaml", 3), input=[Message("user", "Capital of France?")], suite=suite)
    return Check(
        response=Response("Paris."),
        case=case,
        context=Context(case_id="c1"),
        services=Services(models=models, config=config or {}, agent_caller=agent_caller),
        messages=case.input,
    )


def llm(**params) -> Assertion:
    return Assertion("llm", {"criteria": "Names the capital", **params})


async def test_three_samples_are_three_concurrent_calls_and_the_majority_decides(judge, tmp_path):
    judge.script(*({**r, "delay": 0.05} for r in (PASS, FAIL, PASS)))
    verdict = await LlmJudge().evaluate(llm(samples=3), make_check(judge, tmp_path / "cache"))
    # the cache is on, and the three prompts are identical: only the sample index tells them apart
    assert len(judge.requests) == 3 and judge.max_in_flight == 3
    assert verdict.passed and not verdict.error and verdict.message == "2/3 passed: names Paris"
    assert verdict.details["agreement"] == {"passed": 2, "failed": 1, "undecided": 0, "samples": 3}
    samples = verdict.details["samples"]
    assert sorted(s["status"] for s in samples) == ["failed", "passed", "passed"]
    assert sorted((s["score"], s["reason"]) for s in samples) == [(0.2, "names Lyon"), *[(0.9, "names Paris")] * 2]
    assert verdict.score == 0.9  # the median: on the majority's side of the threshold
    assert verdict.usage.total_tokens == 45  # every sample's tokens


async def test_a_rerun_is_answered_by_the_cache_sample_by_sample(judge, tmp_path):
    cache = tmp_path / "cache"
    judge.script(PASS, FAIL, PASS)
    first = await LlmJudge().evaluate(llm(samples=3), make_check(judge, cache))
    again = await LlmJudge().evaluate(llm(samples=3), make_check(judge, cache))
    assert len(judge.requests) == 3 and len(list(cache.glob("*/*.json"))) == 3
    assert again.details["agreement"] == first.details["agreement"]
    judge.script(FAIL, FAIL)  # two more samples: 1 to 3 come from the cache, 4 and 5 are asked
    more = await LlmJudge().evaluate(llm(samples=5), make_check(judge, cache))
    assert len(judge.requests) == 5
    assert more.details["agreement"] == {"passed": 2, "failed": 3, "undecided": 0, "samples": 5}
    assert not more.passed and more.message.startswith("2/5 passed: names Lyon")


@pytest.mark.parametrize(
    ("replies", "why"),
    [
        ([PASS, FAIL], "the samples tie: 1 passed, 1 failed"),
        ([PASS, PASS, FAIL, FAIL], "the samples tie: 2 passed, 2 failed"),
        ([PASS, FAIL, REFUSED, REFUSED], "only 2 of 4 samples reached a verdict (a majority is 3)"),
        ([PASS, REFUSED, REFUSED], "only 1 of 3 samples reached a verdict (a majority is 2)"),
    ],
)
async def test_ties_and_too_few_decided_samples_are_errors(judge, replies, why):
    judge.script(*replies)
    verdict = await LlmJudge().evaluate(llm(samples=len(replies)), make_check(judge))
    assert verdict.error and verdict.message.startswith(why), verdict.message
    assert len(judge.requests) == len(replies)
    assert verdict.details["agreement"]["samples"] == len(replies)


async def test_a_majority_of_n_decided_is_enough(judge):
    judge.script(FAIL, REFUSED, FAIL)
    verdict = await LlmJudge().evaluate(llm(samples=3), make_check(judge))
    assert not verdict.error and not verdict.passed
    assert verdict.message == "0/2 passed, 1 of 3 undecided: names Lyon"
    error = next(s for s in verdict.details["samples"] if s["status"] == "error")
    assert "HTTP 401" in error["reason"]


async def test_unusable_replies_make_samples_undecided_and_the_result_keeps_them(judge):
    judge.responder = lambda body: {"content": "Looks fine to me."}
    try:
        check = make_check(judge)
        result = await evaluate(llm(samples=3), check, get_plugin_manager().registry)
    finally:
        judge.responder = None
    assert result.status == "error" and len(judge.requests) == 6  # each sample asked twice, then undecided
    assert result.message.startswith("only 0 of 3 samples reached a verdict")
    assert [s["status"] for s in result.details["samples"]] == ["error"] * 3
    assert result.details["usage"]["total_tokens"] == 90


async def test_the_suite_default_then_the_project_default(judge):
    judge.script(PASS, PASS, FAIL, PASS, PASS, PASS)
    by_suite = await LlmJudge().evaluate(llm(), make_check(judge, suite_samples=3, config={"samples": 5}))
    assert by_suite.details["agreement"]["samples"] == 3
    by_config = await LlmJudge().evaluate(llm(), make_check(judge, config={"samples": 2}))
    assert by_config.details["agreement"]["samples"] == 2
    own = await LlmJudge().evaluate(llm(samples=1), make_check(judge, suite_samples=3))
    assert "agreement" not in own.details and len(judge.requests) == 6  # one sample: as before


async def test_a_validator_agent_is_asked_once_per_sample_and_told_which(judge):
    seen = []

    async def validator(agent_id, messages, ctx):
        seen.append(ctx.options["metadata"]["sample"])
        ok = ctx.options["metadata"]["sample"] != 2
        return Response({"passed": ok, "score": 1.0 if ok else 0.0, "reason": f"sample {len(seen)}"})

    assertion = Assertion("agent", {"use": "agents:v", "samples": 3, "options": {"metadata": {"criteria": "c"}}})
    verdict = await AgentJudge().evaluate(assertion, make_check(judge, agent_caller=validator))
    assert sorted(seen) == [1, 2, 3] and verdict.passed
    assert verdict.details["agreement"] == {"passed": 2, "failed": 1, "undecided": 0, "samples": 3}


async def test_match_samples_its_llm_stage_but_not_an_offline_match(judge):
    judge.script({"content": {"score": 0.9, "reason": "same"}}, {"content": {"score": 0.1, "reason": "no"}})
    judge.script({"content": {"score": 0.95, "reason": "same"}})
    check = make_check(judge)
    judged = await Match().evaluate(Assertion("match", {"expected": "The capital is Paris", "samples": 3}), check)
    assert len(judge.requests) == 3 and judged.passed and judged.message.startswith("2/3 passed: matched by llm")
    offline = await Match().evaluate(Assertion("match", {"expected": "Paris.", "samples": 3}), check)
    assert offline.passed and "agreement" not in offline.details and len(judge.requests) == 3


def test_samples_must_be_a_whole_number_from_1_to_100(tmp_path):
    (tmp_path / "good.yaml").write_text(
        "samples: 3\ncases:\n  - {id: a, input: hi, assertions: [{type: llm, criteria: c}]}\n"
    )
    (tmp_path / "bad.yaml").write_text(
        "samples: 0\ncases:\n  - id: a\n    input: hi\n    assertions:\n"
        "      - {type: llm, criteria: c, samples: 2.5}\n      - {type: match, expected: x, samples: 101}\n"
    )
    assert run_cli(["validate", "good.yaml"], tmp_path).returncode == 0
    proc = run_cli(["validate", "bad.yaml"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[:3] == [
        "bad.yaml:1:10: samples: 0 is less than the minimum of 1 (at samples)",
        "bad.yaml:6:43: cases[0].assertions[0].samples must be an integer, not a number "
        "(at cases[0].assertions[0].samples)",
        "bad.yaml:7:45: cases[0].assertions[1].samples: 101 is greater than the maximum of 100 "
        "(at cases[0].assertions[1].samples)",
    ]
    (tmp_path / "specrun.yaml").write_text("samples: 0\n")
    proc = run_cli(["validate", "good.yaml"], tmp_path)
    assert proc.returncode == 2 and "specrun.yaml:1:10: samples: 0 is less than the minimum of 1" in proc.stderr


def by_criteria(passes: dict[str, int]):
    """A judge that passes the first ``passes[criteria]`` of the samples it is asked, then fails."""
    asked: dict[str, int] = {}

    def respond(body):
        criteria = body["messages"][1]["content"].split("\n")[1]
        asked[criteria] = asked.get(criteria, 0) + 1
        return PASS if asked[criteria] <= passes[criteria] else FAIL

    return respond


def test_samples_through_the_cli_reach_the_stream_the_console_and_the_reports(judge, tmp_path):
    (tmp_path / "specrun.yaml").write_text(
        f"model: openai/gpt-4o-mini\nsamples: 3\nmodel_params: {{api_base: '{judge.base_url}', api_key: k}}\n"
    )
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'Paris.'\n")
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - {id: capital, input: Capital of France?, assertions: [{type: llm, criteria: mostly yes}]}\n"
        "  - {id: city, input: Largest city?, assertions: [{type: llm, criteria: mostly no}]}\n"
        "  - {id: sure, input: Capital?, assertions: [{type: llm, criteria: sure, samples: 1}]}\n"
    )
    outputs = ["-o", "out.jsonl", "-o", "out.json", "-o", "out.md", "-o", "out.html"]
    try:
        judge.responder = by_criteria({"mostly yes": 2, "mostly no": 1, "sure": 1})
        proc = run_cli(["suite.yaml", *outputs, "-v"], tmp_path)
    finally:
        judge.responder = None
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(judge.requests) == 7  # 3 + 3 + the one sample `sure` asks for
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    record = {r.get("id"): r for r in lines if r["type"] == "result"}
    assert record["capital"]["assertions"][0]["details"]["agreement"] == {
        "passed": 2,
        "failed": 1,
        "undecided": 0,
        "samples": 3,
    }
    assert "✓ llm: 2/3 passed: names Paris" in proc.stdout and "✗ llm: 1/3 passed: names Lyon" in proc.stdout
    assert proc.stdout.count("[uncertain]") == 2 and "Uncertain: capital, city" in proc.stdout
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["uncertain_cases"] == 2
    markdown = (tmp_path / "out.md").read_text()
    assert "| Uncertain cases (a judge's samples disagreed) | 2 |" in markdown
    assert "· uncertain: a judge's samples disagreed" in markdown
    assert "- **llm** failed: 1/3 passed: names Lyon" in markdown
    assert markdown.count("  - sample ") == 3 and "failed (score 0.2): names Lyon" in markdown
    assert "passed (score 0.9): names Paris</div>" in (tmp_path / "out.html").read_text()
    shown = repetition(record["city"])  # the viewer's transcript of a run
    assert "1/3 passed: names Lyon" in shown and shown.count('class="judge sample"') == 3
