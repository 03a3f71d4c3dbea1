"""An agent that uses the case's mocked tools through the mcp client (ctx.mcp_url).

Its message is JSON: ``{"calls": [[name, arguments], ...], "catch": bool, "meet": bool}``; it
lists the tools, makes the calls in order and answers with their texts joined by ``|``. With
``catch``, an MCP error is part of the answer rather than raised; with ``meet``, it waits after
listing until another ``meet`` case has listed too, so that two cases' calls overlap.
"""

import asyncio
import json

from mcp import Client
from mcp.shared.exceptions import MCPError

MET: list[asyncio.Event] = []


async def agent(messages, ctx):
    plan = json.loads(messages[-1].text)
    async with Client(ctx.mcp_url) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        if plan.get("meet"):
            await _meet()
        texts = []
        for name, arguments in plan["calls"]:
            try:
                result = await client.call_tool(name, arguments)
            except MCPError as exc:
                if not plan.get("catch"):
                    raise
                texts.append(f"MCP error: {exc}")
                continue
            texts.append(("error: " if result.is_error else "") + result.content[0].text)
    return " | ".join([",".join(names), *texts])


async def _meet():
    """Both meeting cases have their tools listed before either calls one."""
    if not MET:
        MET.append(asyncio.Event())
        await MET[0].wait()
    else:
        MET.pop().set()
