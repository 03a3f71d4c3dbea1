"""Agent Kernel's multi-agent example (``!select``), unchanged but for the import line."""

import pytest
import pytest_asyncio

from specrun.testing import Test

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
async def test_agent_switching(test_client):
    # Switch to general agent
    await test_client.send("!select general")
    await test_client.send("Who won the 1996 cricket world cup?")
    await test_client.expect("Sri Lanka won the 1996 Cricket World Cup.")


@pytest.mark.order(2)
async def test_different_agent(test_client):
    # Test continues with the same session
    await test_client.send("Which countries hosted the tournament?")
    await test_client.expect("Co-hosted by India, Pakistan and Sri Lanka.")


@pytest.mark.order(3)
async def test_math_agent(test_client):
    # specrun tracks the agent the prompt names: (math) >>
    await test_client.send("!select math")
    assert test_client.agent_name == "math"
    await test_client.send("What is 6 * 7?")
    await test_client.expect("6 * 7 = 42")
    await test_client.send("!select general")
    assert test_client.agent_name == "general"
