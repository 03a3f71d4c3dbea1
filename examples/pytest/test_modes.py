"""Agent Kernel's comparison-mode examples (score, llm, fallback), unchanged but for the import line.

llm mode is judged by the loopback model server that conftest.py starts.
"""

import pytest
import pytest_asyncio

from specrun.testing import Mode, Test

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def test_client():
    test = Test("demo.py")
    await test.start()
    try:
        yield test
    finally:
        await test.stop()


@pytest.mark.order(1)
async def test_score_matching(test_client):
    await test_client.send("Who won the 1996 cricket world cup?")
    # Use score mode with an 0.8 threshold
    # expected is a list - test passes if ANY match scores above threshold
    Test.compare(
        actual=test_client.last_agent_response,
        expected=[
            "Sri Lanka won the 1996 cricket world cup",
            "Sri Lanka won the 1996 world cup",
            "The 1996 cricket world cup was won by Sri Lanka",
        ],
        threshold=0.8,
        mode=Mode.SCORE,
    )


@pytest.mark.order(2)
async def test_llm_evaluation(test_client):
    await test_client.send("Who won the 1996 cricket world cup?")
    # Use llm mode for semantic evaluation
    # expected is a list - test passes if ANY has sufficient semantic similarity
    Test.compare(
        actual=test_client.last_agent_response,
        expected=[
            "Sri Lanka won the 1996 cricket world cup",
            "Sri Lanka was the winner of the 1996 world cup",
            "The 1996 cricket world cup was won by Sri Lanka",
        ],
        user_input="Who won the 1996 cricket world cup?",
        threshold=0.5,
        mode=Mode.LLM,
    )


@pytest.mark.order(3)
async def test_fallback_mode(test_client):
    await test_client.send("Who won the 1996 cricket world cup?")
    # Fallback mode (default) - multiple expected answers
    Test.compare(
        actual=test_client.last_agent_response,
        expected=["Sri Lanka", "Sri Lanka won the 1996 cricket world cup", "The winner was Sri Lanka"],
        user_input="Who won the 1996 cricket world cup?",
        threshold=0.5,
        mode=Mode.FALLBACK,  # or None to use config default
    )


@pytest.mark.order(4)
async def test_fallback_reaches_the_judge(test_client):
    # No expected answer matches word for word, so the judge decides (and says why).
    await test_client.send("Which countries hosted the tournament?")
    passed, _score, reason = Test.compare(
        actual=test_client.last_agent_response,
        expected=["India, Pakistan and Sri Lanka hosted it"],
        user_input="Which countries hosted the tournament?",
        threshold=0.5,
    )
    assert passed and reason.startswith("llm")


@pytest.mark.order(5)
async def test_a_wrong_answer_fails_with_both_texts(test_client):
    await test_client.send("Who won the 1996 cricket world cup?")
    # A bare string is one expected answer (not a list of characters).
    with pytest.raises(AssertionError, match="received: 'Sri Lanka won") as failure:
        Test.compare(test_client.last_agent_response, expected="Australia", mode=Mode.SCORE)
    assert "'Australia'" in str(failure.value)
