"""Tool-call expectations of the Python test API (specrun.testing.tools): ``expect_tool_called``
and ``expect_tool_not_called`` on the last reply, matched as the tool assertions match."""

from __future__ import annotations

import os
import sys

import pytest

from specrun._core.errors import EvaluationError
from specrun.testing import Test

SHOP = """
from specrun import Response, ToolCall


def agent(messages, ctx):
    text = messages[-1].text
    if "nothing" in text:
        return Response("Nothing to do.", tool_calls=[])  # no tool called, and it says so
    if "chat" in text:
        return "Just chatting."  # says nothing of tools
    order = text.split()[-1].rstrip("?")
    calls = [ToolCall("orders.lookup", {"order_id": order, "verbose": True, "items": [1, 2]})]
    if "json" in text:  # an agent passing the raw JSON text of the arguments
        calls = [ToolCall("orders.lookup", '{"order_id": "%s"}' % order)]
    return Response(f"Order {order} is on its way.", tool_calls=calls)
"""


@pytest.fixture
def shop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("SPECRUN_TEST"):
            monkeypatch.delenv(name)
    (tmp_path / "shop_tools_agent.py").write_text(SHOP)
    yield Test("python:shop_tools_agent:agent")
    sys.modules.pop("shop_tools_agent", None)


async def test_the_last_reply_matches_as_the_tool_assertions_do(shop):
    with pytest.raises(AssertionError, match="no reply to check: call send"):
        shop.expect_tool_called("orders.lookup")
    async with shop as t:
        await t.send("Where is order A17?")
        t.expect_tool_called("orders.lookup")
        t.expect_tool_called("orders.lookup", {"order_id": "A17"})  # a subset of the call's arguments
        t.expect_tool_called("orders.lookup", {"order_id": "A17", "items": [1, 2.0]})
        t.expect_tool_called(["refund", "orders.lookup"])  # any of them
        t.expect_tool_not_called("lookup")  # an exact name, never a substring
        t.expect_tool_not_called("refund")
        t.expect_tool_not_called("orders.lookup", {"order_id": "B2"})
        with pytest.raises(AssertionError) as failed:
            t.expect_tool_called("orders.lookup", {"order_id": "B2"})
        assert str(failed.value) == (
            'tool_called failed: expected a call to orders.lookup with arguments {"order_id": "B2"}; matched 0;'
            ' calls: orders.lookup({"order_id": "A17", "verbose": true, "items": [1, 2]})\n'
            "  reply: 'Order A17 is on its way.'"
        )
        with pytest.raises(AssertionError, match="items"):  # lists match whole: [1] is not [1, 2]
            t.expect_tool_called("orders.lookup", {"items": [1]})
        with pytest.raises(AssertionError, match="tool_not_called failed: expected no call to refund or orders"):
            t.expect_tool_not_called(["refund", "orders.lookup"])
        await t.send("json for C3")
        t.expect_tool_called("orders.lookup", {"order_id": "C3"})
        await t.send("nothing")  # only the last reply counts
        t.expect_tool_not_called("orders.lookup")
        with pytest.raises(AssertionError, match="matched 0; no tools were called"):
            t.expect_tool_called("orders.lookup")
        with pytest.raises(TypeError, match="name must be a tool name"):
            t.expect_tool_called(["orders.lookup", 3])
        with pytest.raises(TypeError, match="arguments must be a mapping"):
            t.expect_tool_called("orders.lookup", ["A17"])
        await t.send("chat")  # a bare string: what it called is not known
        with pytest.raises(EvaluationError, match=r"reports no tool calls \(it returned text only\)"):
            t.expect_tool_not_called("orders.lookup")


async def test_a_cli_agent_reports_no_tool_calls_so_nothing_is_judged():
    demo = os.path.join(os.path.dirname(__file__), "agents", "echo_cli.py")
    async with Test([sys.executable, demo]) as t:
        await t.send("hello")
        for expectation in (t.expect_tool_called, t.expect_tool_not_called):
            with pytest.raises(EvaluationError, match="cannot be judged: a CLI agent reports no tool calls"):
                expectation("lookup")
