"""A small MCP server for the mcp target's tests (mcp's MCPServer, formerly FastMCP).

``python mcp_tools.py`` serves over stdio; ``python mcp_tools.py http PORT`` over streamable
HTTP on 127.0.0.1, and ``app()`` is that HTTP app for a test to serve in process.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("calculator")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ToolError("division by zero")
    return a / b


@server.tool(structured_output=False)
def greet(name: str) -> str:
    """Greet someone, in text."""
    return f"Hello, {name}!"


@server.tool()
def lookup(city: str) -> dict[str, Any]:
    """Weather for a city, as structured content."""
    return {"city": city, "temperature": 21, "unit": "C"}


@server.tool()
def whoami() -> str:
    """What the server was started with (its environment)."""
    return os.environ.get("GREETING", "")


@server.tool()
async def stall(seconds: float) -> str:
    """Sleep, then answer (a tool that hangs)."""
    await asyncio.sleep(seconds)
    return "done"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
