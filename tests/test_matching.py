"""specrun._judges.matching: Agent Kernel's score, llm and fallback modes."""

from __future__ import annotations

import json

import pytest
from support.llm_server import LLMServer, data_section

from specrun._core.data import Usage
from specrun._core.errors import EvaluationError
from specrun._judges.matching import Judgement, compare, normalize, quasi_exact
from specrun._models.client import ModelClient


class FakeJudge:
    """Scores from a table keyed on the expected alternative; records what it was asked."""

    def __init__(self, scores: dict[str, float]):
        self.scores = scores
        self.asked: list[tuple[str, str, str | None]] = []

    async def __call__(self, actual: str, expected: str, user_input: str | None) -> Judgement:
        self.asked.append((actual, expected, user_input))
        return Judgement(self.scores[expected], f"judged {expected}", Usage(10, 5, 15, 0.001))


def test_normalize_is_deepeval_quasi_exact():
    assert normalize("  The Capital, is: PARIS!  ") == "capital is paris"
    assert normalize("An apple a day") == "apple day"
    assert normalize("¿Qué?") == "qué"
    assert normalize("Sri-Lanka") == "srilanka"  # punctuation dropped, as DeepEval does


def test_quasi_exact_is_all_or_nothing():
    assert quasi_exact("Sri Lanka won the 1996 cricket world cup.", "sri lanka won 1996 cricket world cup") == 1.0
    assert quasi_exact("Sri Lanka won", "Sri Lanka won the 1996 cricket world cup") == 0.0


def test_containment_is_opt_in_and_matches_whole_words():
    assert quasi_exact("The capital is Paris.", "Paris") == 0.0
    assert quasi_exact("The capital is Paris.", "Paris", contains=True) == 1.0
    assert quasi_exact("Parisian food", "Paris", contains=True) == 0.0
    assert quasi_exact("anything", "The", contains=True) == 0.0  # nothing left to contain


async def test_score_mode_passes_on_any_alternative():
    result = await compare(
        "The 1996 cricket world cup was won by Sri Lanka.",
        ["Sri Lanka won the 1996 cricket world cup", "The 1996 cricket world cup was won by Sri Lanka"],
        mode="score",
        threshold=0.8,
    )
    assert result.passed and result.decided_by == "score" and result.score == 1.0
    assert [(a.stage, a.score, a.passed) for a in result.attempts] == [("score", 0.0, False), ("score", 1.0, True)]


async def test_score_mode_fails_without_calling_a_judge():
    result = await compare("The capital is Paris.", ["Paris"], mode="score", judge=FakeJudge({}))
    assert not result.passed and result.decided_by == "score" and result.usage is None


async def test_paris_passes_against_a_sentence_with_containment():
    result = await compare("The capital is Paris.", "Paris", mode="score", containment=True)
    assert result.passed and result.attempts[0].reason == "matches (contains)"


async def test_a_bare_string_is_one_alternative_not_characters():
    judge = FakeJudge({"Paris": 0.2})
    result = await compare("Lyon", "Paris", mode="fallback", judge=judge)
    assert [a.expected for a in result.attempts] == ["Paris", "Paris"]  # one score, one llm
    assert [e for _, e, _ in judge.asked] == ["Paris"]


async def test_llm_mode_judges_each_alternative_until_one_passes():
    judge = FakeJudge({"a": 0.2, "b": 0.9, "c": 1.0})
    result = await compare("answer", ["a", "b", "c"], mode="llm", threshold=0.5, judge=judge, user_input="q?")
    assert result.passed and result.decided_by == "llm" and result.score == 0.9
    assert judge.asked == [("answer", "a", "q?"), ("answer", "b", "q?")]
    assert result.reason == "judged b"
    assert result.usage.total_tokens == 30 and result.usage.cost == pytest.approx(0.002)


async def test_llm_mode_fails_when_no_alternative_reaches_the_threshold():
    result = await compare("answer", ["a", "b"], mode="llm", threshold=0.5, judge=FakeJudge({"a": 0.4, "b": 0.1}))
    assert not result.passed and result.score == 0.4 and result.reason == "judged a"


async def test_fallback_stops_at_a_score_match():
    judge = FakeJudge({})
    result = await compare("Sri Lanka", ["Sri Lanka", "The winner was Sri Lanka"], threshold=0.5, judge=judge)
    assert result.passed and result.decided_by == "score" and result.mode == "fallback"
    assert judge.asked == []


async def test_fallback_asks_the_judge_when_no_score_matches():
    judge = FakeJudge({"Sri Lanka": 0.9, "The winner was Sri Lanka": 1.0})
    result = await compare(
        "It was Sri Lanka, in Lahore.", ["Sri Lanka", "The winner was Sri Lanka"], threshold=0.5, judge=judge
    )
    assert result.passed and result.decided_by == "llm"
    assert [(a.stage, a.expected) for a in result.attempts] == [
        ("score", "Sri Lanka"),
        ("score", "The winner was Sri Lanka"),
        ("llm", "Sri Lanka"),
    ]
    assert result.to_dict()["attempts"][2] == {
        "stage": "llm",
        "expected": "Sri Lanka",
        "score": 0.9,
        "passed": True,
        "reason": "judged Sri Lanka",
    }


async def test_the_llm_stage_without_a_judge_is_an_error_not_a_fail():
    with pytest.raises(EvaluationError, match="needs a model"):
        await compare("Lyon", ["Paris"], mode="fallback")


async def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown compare mode"):
        await compare("a", "a", mode="fuzzy")
    with pytest.raises(ValueError, match="threshold"):
        await compare("a", "a", mode="score", threshold=1.5)
    with pytest.raises(ValueError, match="at least one"):
        await compare("a", [], mode="score")


async def test_llm_mode_with_a_model_client_over_http(tmp_path):
    with LLMServer() as server:
        server.script({"content": '{"score": 0.8, "reason": "same winner"}'})
        client = ModelClient(
            "openai/gpt-4o-mini", params={"api_base": server.base_url, "api_key": "test-key"}, cache_dir=tmp_path
        )
        result = await compare(
            "Sri Lanka took the title.",
            ["Sri Lanka won the 1996 cricket world cup"],
            mode="llm",
            threshold=0.5,
            user_input="Who won the 1996 cricket world cup?",
            judge=client,
            run=3,
        )
        assert result.passed and result.reason == "same winner" and result.usage.total_tokens == 15
        body = server.requests[0]
        assert body["temperature"] == 0 and body["response_format"] == {"type": "json_object"}
        prompt = body["messages"][-1]["content"]
        data, authored = data_section(prompt)
        assert data == {"question": "Who won the 1996 cricket world cup?", "answer": "Sri Lanka took the title."}
        assert authored.startswith("EXPECTED ANSWER:\nSri Lanka won the 1996 cricket world cup\n")
        again = await compare(
            "Sri Lanka took the title.",
            ["Sri Lanka won the 1996 cricket world cup"],
            mode="llm",
            threshold=0.5,
            user_input="Who won the 1996 cricket world cup?",
            judge=client,
            run=3,
        )
        assert again.passed and len(server.requests) == 1  # the cache answered
        json.dumps(again.to_dict())
