"""A toy order-support agent: it finds the order number in the question and uses the tools of
its MCP server (the case's mocked tools, at ctx.mcp_url) through the official SDK.
A real agent would let its model choose the tools; the calls it makes are what the suite checks."""

import re

from mcp import Client


async def answer(messages, ctx):
    question = messages[-1].text
    found = re.search(r"\d+", question)
    if found is None:
        return "Which order? Please give me its number."
    order = int(found.group())
    async with Client(ctx.mcp_url) as tools:
        looked_up = await tools.call_tool("lookup_order", {"id": order})
        if looked_up.is_error:
            return f"I could not find order {order}: {looked_up.content[0].text}"
        status = looked_up.structured_content["status"]
        if "refund" not in question.lower():
            return f"Order {order} is {status}."
        refunded = await tools.call_tool("refund", {"id": order})
        if refunded.is_error:
            return f"Order {order} is {status}, but I could not refund it: {refunded.content[0].text}"
        return f"Order {order} is {status}; it is refunded."
