"""The llm, agent and match assertions, judged over HTTP by the loopback model server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.llm_server import LLMServer, data_section

from specrun._core.data import MISSING, Assertion, Case, Context, Location, Message, Response, ToolCall, Usage
from specrun._core.errors import EvaluationError, TargetError
from specrun._core.kinds import Check
from specrun._core.services import Services
from specrun._judges.assertions.judge import AgentJudge, LlmJudge
from specrun._judges.assertions.match import Match
from specrun._models.client import ModelClient
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run.verdicts import evaluate

QUESTION = "What is the capital of France?"


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def make_check(
    server: LLMServer | None,
    answer: str = "The capital is Paris.",
    *,
    cache_dir: Path | None = None,
    run: int = 1,
    expected=MISSING,
    agent_caller=None,
    compare_mode: str | None = None,
) -> Check:
    models = None
    if server is not None:
        params = {"api_base": server.base_url, "api_key": "test-key"}
        models = ModelClient("openai/gpt-4o-mini", params=params, cache_dir=cache_dir, base_delay=0.01)
    case = Case(id="c1", location=Location("suite.yaml", 3), input=[Message("user", QUESTION)], expected=expected)
    response = Response(answer, tool_calls=[ToolCall("search", {"q": "France"})])
    return Check(
        response=response,
        case=case,
        context=Context(case_id="c1", run=run),
        services=Services(
            models=models,
            run=run,
            agent_caller=agent_caller,
            config={"compare_mode": compare_mode} if compare_mode else {},
        ),
        messages=case.input,
    )


def verdict_json(passed: bool, score: float, reason: str) -> dict:
    return {"content": json.dumps({"passed": passed, "score": score, "reason": reason})}


# -- llm --------------------------------------------------------------------------------------


async def test_llm_judge_pass_shows_the_reason_and_usage(server):
    server.script(verdict_json(True, 0.9, "It names Paris."))
    assertion = Assertion("llm", {"criteria": "Names the capital correctly", "expected": "Paris"})
    verdict = await LlmJudge().evaluate(assertion, make_check(server))
    assert verdict.passed and verdict.score == 0.9 and verdict.message == "It names Paris."
    assert verdict.details["reason"] == "It names Paris." and verdict.details["threshold"] == 0.5
    assert verdict.usage.total_tokens == 15 and verdict.usage.cost > 0
    body = server.requests[0]
    assert body["temperature"] == 0 and body["response_format"] == {"type": "json_object"}
    data, authored = data_section(body["messages"][1]["content"])
    assert data == {
        "conversation": [{"role": "user", "content": QUESTION}],
        "tool_calls": [{"name": "search", "arguments": {"q": "France"}}],
        "response": "The capital is Paris.",
    }
    assert authored.startswith("CRITERIA:\nNames the capital correctly\n\nREFERENCE ANSWER:\nParis\n")
    assert "passed is true exactly when the score is at least 0.5" in authored


async def test_llm_judge_fail(server):
    server.script(verdict_json(False, 0.1, "It names Lyon."))
    check = make_check(server, "Lyon.")
    verdict = await LlmJudge().evaluate(Assertion("llm", {"criteria": "Names Paris"}), check)
    assert not verdict.passed and verdict.message == "It names Lyon."


async def test_the_threshold_decides_a_score_and_is_told_to_the_judge(server):
    server.script({"content": '{"score": 0.6, "reason": "Mostly."}'}, verdict_json(False, 0.6, "Mostly."))
    assertion = Assertion("llm", {"criteria": "c", "threshold": 0.7})
    for _ in range(2):
        verdict = await LlmJudge().evaluate(assertion, make_check(server))
        assert not verdict.passed and verdict.score == 0.6 and verdict.details["threshold"] == 0.7
    assert "passed is true exactly when the score is at least 0.7" in server.requests[0]["messages"][1]["content"]


async def test_llm_judge_garbage_is_an_error_after_exactly_one_retry(server):
    server.script({"content": "Looks good to me!"}, {"content": "Yes."})
    verdict = await LlmJudge().evaluate(Assertion("llm", {"criteria": "c"}), make_check(server))
    assert verdict.error and "unusable twice" in verdict.message  # undecided, never a fail
    assert len(server.requests) == 2
    assert verdict.usage.total_tokens == 30  # what was spent, on the verdict for the runner to count


async def test_llm_judge_garbage_then_json_passes(server):
    server.script({"content": "Looks good"}, verdict_json(True, 1, "ok"))
    verdict = await LlmJudge().evaluate(Assertion("llm", {"criteria": "c"}), make_check(server))
    assert verdict.passed and verdict.usage.total_tokens == 30


async def test_through_the_engine_garbage_is_an_error_result_never_a_fail(server):
    server.script({"content": "???"}, {"content": "!!!"})
    registry = get_plugin_manager().registry
    negated = Assertion("llm", {"criteria": "c"}, negate=True)  # not decided: negate changes nothing
    result = await evaluate(negated, make_check(server), registry)
    assert result.status == "error" and "unusable twice" in result.message
    assert result.details == {"usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30,
                                        "cost": pytest.approx(2 * (10 * 0.15e-6 + 5 * 0.6e-6))}}


async def test_through_the_engine_a_verdict_s_usage_reaches_the_result_details(server):
    server.script(verdict_json(True, 1, "ok"))
    registry = get_plugin_manager().registry
    result = await evaluate(Assertion("llm", {"criteria": "c"}), make_check(server), registry)
    assert result.status == "passed" and result.details["reason"] == "ok"
    assert result.details["usage"]["total_tokens"] == 15 and list(result.details)[-1] == "usage"


async def test_the_judge_uses_the_cache_per_run_index(server, tmp_path):
    server.script(verdict_json(True, 1, "a"), verdict_json(True, 1, "b"))
    assertion = Assertion("llm", {"criteria": "c"})
    first = await LlmJudge().evaluate(assertion, make_check(server, cache_dir=tmp_path, run=1))
    again = await LlmJudge().evaluate(assertion, make_check(server, cache_dir=tmp_path, run=1))
    other = await LlmJudge().evaluate(assertion, make_check(server, cache_dir=tmp_path, run=2))
    assert (first.message, again.message, other.message) == ("a", "a", "b")
    assert len(server.requests) == 2 and "usage" not in again.details  # a cache hit costs nothing


async def test_a_per_assertion_model_overrides_the_default(server):
    server.script(verdict_json(True, 1, "ok"))
    await LlmJudge().evaluate(Assertion("llm", {"criteria": "c", "model": "openai/other"}), make_check(server))
    assert server.requests[0]["model"] == "other"


async def test_no_model_client_is_an_error():
    with pytest.raises(EvaluationError, match="needs a model client"):
        await LlmJudge().evaluate(Assertion("llm", {"criteria": "c"}), make_check(None))


async def test_an_unreachable_judge_is_an_error_naming_the_model(server):
    server.script(*[{"status": 503}] * 2)
    check = make_check(server)
    check.services.models.retries = 1
    with pytest.raises(EvaluationError, match=r"openai/gpt-4o-mini \(judge\) failed after 2 attempts: HTTP 503"):
        await LlmJudge().evaluate(Assertion("llm", {"criteria": "c"}), check)


# -- agent ------------------------------------------------------------------------------------


class Validator:
    """A project validator agent: replies in turn, records what it was sent."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls: list[tuple[str, list[Message], Context]] = []

    async def __call__(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        self.calls.append((agent_id, messages, context))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Response(reply, usage=Usage(20, 10, 30, None))


SEED_OPTIONS = {"metadata": {"criteria": "Answers the question", "tone": "professional and friendly"}}


async def test_agent_assertion_runs_the_validator_agent_with_the_seed_metadata():
    validator = Validator({"passed": True, "score": 0.8, "reason": "Polite and right."})
    check = make_check(None, agent_caller=validator)
    assertion = Assertion("agent", {"use": "agents:workers.test.validator", "options": SEED_OPTIONS})
    verdict = await AgentJudge().evaluate(assertion, check)
    assert verdict.passed and verdict.message == "Polite and right."
    assert verdict.details["validator"] == "workers.test.validator"
    assert verdict.usage.total_tokens == 30
    agent_id, messages, context = validator.calls[0]
    assert agent_id == "workers.test.validator"
    metadata = context.options["metadata"]
    assert metadata["test_mode"] == "validator" and metadata["criteria"] == "Answers the question"
    assert metadata["tone"] == "professional and friendly" and metadata["output"] == "The capital is Paris."
    assert metadata["input"] == [{"role": "user", "content": QUESTION}]
    assert "CRITERIA:\nAnswers the question\nAlso:\n- tone: professional and friendly" in messages[0].text
    assert data_section(messages[0].text)[0]["response"] == "The capital is Paris."


async def test_a_validator_agent_replying_prose_is_asked_once_more_then_an_error():
    validator = Validator("Sure, it is fine.", "Really fine.")
    check = make_check(None, agent_caller=validator)
    verdict = await AgentJudge().evaluate(Assertion("agent", {"use": "agents:v", "options": SEED_OPTIONS}), check)
    assert verdict.error and "replied unusably twice" in verdict.message and "Really fine" in verdict.message
    assert verdict.usage.total_tokens == 60  # both replies
    assert len(validator.calls) == 2
    assert "could not be used" in validator.calls[1][1][-1].text


async def test_a_validator_agent_that_crashes_is_an_error():
    check = make_check(None, agent_caller=Validator(TargetError("boom")))
    with pytest.raises(EvaluationError, match="validator agent 'v' failed: TargetError: boom"):
        await AgentJudge().evaluate(Assertion("agent", {"use": "agents:v", "options": SEED_OPTIONS}), check)


async def test_agent_without_use_uses_the_built_in_validator(server):
    server.script(verdict_json(False, 0.2, "Curt."))
    verdict = await AgentJudge().evaluate(Assertion("agent", {"options": SEED_OPTIONS}), make_check(server))
    assert not verdict.passed and verdict.message == "Curt." and verdict.details["validator"] == "built-in"
    assert "tone: professional and friendly" in server.requests[0]["messages"][1]["content"]


def test_agent_without_use_needs_criteria():
    problems = list(AgentJudge().problems(Assertion("agent", {"options": {"metadata": {}}}), Path(".")))
    assert problems and problems[0][0] == "options"
    assert not list(AgentJudge().problems(Assertion("agent", {"use": "agents:v"}), Path(".")))


# -- match ------------------------------------------------------------------------------------


async def test_match_score_passes_offline_with_containment():
    check = make_check(None)
    assertion = Assertion("match", {"expected": "Paris", "mode": "score", "contains": True})
    verdict = await Match().evaluate(assertion, check)
    assert verdict.passed and verdict.details["decided_by"] == "score" and verdict.expected == ["Paris"]


async def test_match_falls_back_to_the_case_expected_and_the_llm_judge(server):
    server.script({"content": '{"score": 0.9, "reason": "Both say Paris."}'})
    check = make_check(server, "Paris, on the Seine, is the capital.", expected=["Paris is the capital of France"])
    verdict = await Match().evaluate(Assertion("match", {}), check)
    assert verdict.passed and verdict.message == "matched by llm: Both say Paris."
    assert verdict.details["mode"] == "fallback" and verdict.details["decided_by"] == "llm"
    assert [a["stage"] for a in verdict.details["attempts"]] == ["score", "llm"]
    assert verdict.usage.total_tokens == 15 and "usage" not in verdict.details
    assert data_section(server.requests[0]["messages"][1]["content"])[0]["question"] == QUESTION


async def test_match_mode_defaults_to_the_project_config(server):
    check = make_check(server, "Lyon", expected="Paris", compare_mode="score")
    verdict = await Match().evaluate(Assertion("match", {}), check)
    assert not verdict.passed and verdict.details["mode"] == "score" and server.requests == []
    assert "no expected answer matches" in verdict.message


async def test_match_llm_fail_reports_the_judges_reason(server):
    server.script({"content": '{"score": 0.1, "reason": "Lyon is not Paris."}'})
    verdict = await Match().evaluate(
        Assertion("match", {"expected": "Paris", "mode": "llm"}), make_check(server, "Lyon")
    )
    assert not verdict.passed and verdict.message == "no expected answer judged close enough: Lyon is not Paris."


async def test_match_without_expected_is_an_error():
    with pytest.raises(EvaluationError, match="needs `expected`"):
        await Match().evaluate(Assertion("match", {"mode": "score"}), make_check(None))


def test_the_types_are_registered_and_flag_that_they_need_a_model():
    registry = get_plugin_manager().registry
    for name in ("llm", "agent", "match"):
        assert registry.get("assertion", name).needs_model
    assert registry.get("target", "litellm").needs_model


@pytest.mark.parametrize(
    ("params", "config", "uses"),
    [
        ({"mode": "score"}, {}, False),
        ({}, {"compare_mode": "score"}, False),
        ({"mode": "fallback"}, {"compare_mode": "score"}, True),  # the assertion's own mode wins
        ({}, {}, True),  # fallback by default: its llm stage may run
        ({"mode": "llm"}, {}, True),
    ],
)
def test_match_says_before_the_run_whether_it_will_call_a_model(params, config, uses):
    registry = get_plugin_manager().registry
    assert registry.get("assertion", "match").uses_model(Assertion("match", params), config) is uses
    assert registry.get("assertion", "llm").uses_model(Assertion("llm", {"rubric": "x"}), config)
    assert not registry.get("assertion", "contains").uses_model(Assertion("contains", {"value": "x"}), config)
