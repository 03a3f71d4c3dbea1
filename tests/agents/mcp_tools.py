"""A small MCP server for the mcp target's tests (mcp's MCPServer, formerly FastMCP).

``python mcp_tools.py`` serves over stdio; ``http_app(token)`` is its streamable HTTP app,
refusing (401) a request without ``Authorization: Bearer TOKEN``, for a test to serve.
"""

from __future__ import annotations

import asyncio
import os
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
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(structured_output=False)
def huge(megabytes: int) -> str:
    """A text of ``megabytes`` MiB: a reply past the mcp target's bound."""
    return "x" * (megabytes << 20)


@server.tool()
async def stall(seconds: float) -> str:
    """Sleep, then answer (a tool that hangs)."""
    await asyncio.sleep(seconds)
    return "done"


def http_app(token: str) -> Any:
    """The server over streamable HTTP at /mcp, for requests that carry the bearer ``token``."""
    inner = server.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (b"authorization", f"Bearer {token}".encode()) not in scope["headers"]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await inner(scope, receive, send)

    return app


if __name__ == "__main__":
    server.run()
