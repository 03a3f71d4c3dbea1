"""The run's mock MCP server: streamable HTTP on loopback, one path per case.

Each case that declares ``tools:`` is given ``http://127.0.0.1:PORT/mcp/<token>``, the token
random (128 bits): a case cannot reach another's mocks, and its calls are its own. The server
speaks the part of MCP (streamable HTTP transport, JSON replies, no session id) that a client
needs to use tools: ``initialize``, ``ping``, ``tools/list`` and ``tools/call``. It is written
here over aiohttp rather than mounted from the ``mcp`` SDK so that an agent in any language
(a process or http target) can be tested without the ``mcp`` extra, and so that one listener
serves every case's tools as they are declared, with no server object per case.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._core.data import ToolCall, to_json
from .._core.listening import Listener
from . import NOT_MOCKED, answer

if TYPE_CHECKING:
    from aiohttp import web

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # the initialize handshake's
METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR = -32601, -32602, -32600, -32700
MAX_BODY = 4 * 1024 * 1024
MAX_CALLS = 10_000  # tool calls one case may make: an agent calling in a loop is bounded, and fails


class UnmockedCall(ToolCall):
    """A call the agent made that no mock of the case answers: it fails the case."""

    hint = ": declare it under tools: (or a when: that matches)"


class TooManyCalls(UnmockedCall):
    """The call past ``MAX_CALLS``: refused, and it fails the case (the later ones are refused only)."""

    hint = ""


@dataclass
class CaseMocks:
    """One case's tools (their declarations by name) and the calls made to them, in order."""

    tools: dict[str, dict[str, Any]]
    url: str = ""
    calls: list[ToolCall] = field(default_factory=list)

    def take(self, start: int) -> list[ToolCall]:
        """The calls made since the ``start``-th."""
        return self.calls[start:]

    def listing(self) -> list[dict[str, Any]]:
        """``tools/list``'s tools."""
        return [
            {
                "name": name,
                "description": tool.get("description", ""),
                "inputSchema": tool.get("input_schema") or {"type": "object"},
            }
            for name, tool in self.tools.items()
        ]

    def call(self, name: Any, arguments: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A ``tools/call``'s result, or the JSON-RPC error that answers it; recorded either way."""
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None, {"code": INVALID_PARAMS, "message": "tools/call needs a name and arguments (an object)"}
        if len(self.calls) >= MAX_CALLS:
            message = f"specrun: the case made more than {MAX_CALLS:,} tool calls; the rest are refused"
            if len(self.calls) == MAX_CALLS:  # recorded once: the case fails, naming the bound
                self.calls.append(TooManyCalls(name, arguments, message, status="error"))
            return None, {"code": INVALID_PARAMS, "message": message}
        tool = self.tools.get(name)
        if tool is not None and (rejected := _rejected(tool, arguments)):  # as a real tool would refuse them
            message = f"arguments do not match the input_schema of {name}: {rejected}"
            self.calls.append(ToolCall(name, arguments, message, status="error"))
            return {"content": [{"type": "text", "text": message}], "isError": True}, None
        entry = answer(tool, arguments) if tool is not None else NOT_MOCKED
        if entry is NOT_MOCKED:
            why = "no tool of that name is mocked" if tool is None else "no `when` of its mock matches the arguments"
            message = f"specrun: tool call {name} {to_json(arguments)} is not mocked ({why})"
            self.calls.append(UnmockedCall(name, arguments, message, status="error"))
            return None, {"code": INVALID_PARAMS, "message": message}
        assert isinstance(entry, dict)
        if "error" in entry:
            self.calls.append(ToolCall(name, arguments, entry["error"], status="error"))
            return {"content": [{"type": "text", "text": entry["error"]}], "isError": True}, None
        value = entry["returns"]
        self.calls.append(ToolCall(name, arguments, value, status="ok"))
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": value if isinstance(value, str) else to_json(value)}],
            "isError": False,
        }
        if isinstance(value, dict):
            result["structuredContent"] = value
        return result, None


def _rejected(tool: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``tool``'s ``input_schema`` rejects ``arguments`` (its first reason), or None."""
    if "input_schema" not in tool:
        return None
    import jsonschema_rs

    error = next(jsonschema_rs.validator_for(tool["input_schema"]).iter_errors(arguments), None)
    return None if error is None else error.message


class MockServer(Listener):
    """The loopback listener that serves every case's mocks (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.cases: dict[str, CaseMocks] = {}
        self.port = 0
        self._starting: asyncio.Lock | None = None

    async def start(self) -> None:
        """Serve the bound socket from the running event loop (once; cheap afterwards): a
        client that connected before waits in the socket's backlog until then."""
        if self.started:
            return
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if self.started:
                return
            from aiohttp import web

            app = web.Application(client_max_size=MAX_BODY)
            app.router.add_route("*", "/mcp/{token}", self.handle)
            self._bind()
            await self.serve(app)

    def _bind(self) -> socket.socket:
        if self.sock is None:
            sock = self.sock = socket.create_server(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        return self.sock

    def open(self, tools: list[dict[str, Any]]) -> CaseMocks:
        """A case's mocks, served under a new path of the listener (bound now, the first time)."""
        self._bind()
        token = secrets.token_urlsafe(16)
        mocks = CaseMocks({tool["name"]: tool for tool in tools}, f"http://127.0.0.1:{self.port}/mcp/{token}")
        self.cases[token] = mocks
        return mocks

    def close_case(self, mocks: CaseMocks) -> None:
        self.cases.pop(mocks.url.rsplit("/", 1)[-1], None)

    async def close(self) -> None:
        await super().close()
        self.cases.clear()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        mocks = self.cases.get(request.match_info["token"])
        if mocks is None:
            return web.Response(status=404, text="no case's mocks are served here (the case ended?)")
        if request.method != "POST":  # no server-sent stream, no session to end: MCP lets a server say so
            return web.Response(status=405, headers={"Allow": "POST"})
        try:
            message = json.loads(await request.read())
        except ValueError:
            return _error(None, PARSE_ERROR, "the body is not JSON", status=400)
        if isinstance(message, list):
            replies = [r for r in (self._reply(mocks, m) for m in message) if r is not None]
            return web.json_response(replies) if replies else web.Response(status=202)
        reply = self._reply(mocks, message)
        return web.Response(status=202) if reply is None else web.json_response(reply)

    def _reply(self, mocks: CaseMocks, message: Any) -> dict[str, Any] | None:
        """The JSON-RPC reply to one message; None for a notification or a response."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "id" in message and "method" not in message:
                return None  # a response to a request of ours: we send none
            return {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": INVALID_REQUEST, "message": "not a JSON-RPC request"},
            }
        if "id" not in message:
            return None  # a notification (notifications/initialized, cancelled...)
        method, params = message["method"], message.get("params") or {}
        result: dict[str, Any] | None
        error = None
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            result = {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "specrun-mocks", "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": mocks.listing()}
        elif method == "tools/call" and isinstance(params, dict):
            arguments = params.get("arguments")
            result, error = mocks.call(params.get("name"), {} if arguments is None else arguments)
        else:
            result, error = None, {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
        if error is not None:
            return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _error(ident: Any, code: int, message: str, status: int = 200) -> web.Response:
    from aiohttp import web

    return web.json_response(
        {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}, status=status
    )
