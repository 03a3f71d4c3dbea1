"""The run's mock MCP server: the ``mcp`` SDK's server on loopback, one path per case.

Each case that declares ``tools:`` is given ``http://127.0.0.1:PORT/mcp/<token>``, the token
random (128 bits): a case cannot reach another's mocks, and its calls are its own. Every
protocol detail is the SDK's: one low-level ``mcp.server.lowlevel.Server`` behind a stateless
``StreamableHTTPSessionManager`` with JSON replies (its protocol versions, the initialize
handshake and ``server/discover``, notifications, errors, the body bound), served by uvicorn
(an ``mcp`` dependency) on the socket the ``Listener`` bound. specrun gives it the
``tools/list`` and ``tools/call`` handlers, which answer from the case of the request's path
(``CaseMocks``): one server for every case, no server object per case. The SDK is the ``mcp``
extra, imported when the first case with ``tools:`` runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._core.data import ToolCall, to_json
from .._core.listening import Listener
from . import NOT_MOCKED, answer

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp_types import CallToolRequestParams, PaginatedRequestParams
    from starlette.types import Receive, Scope, Send

INVALID_PARAMS, INVALID_REQUEST = -32602, -32600  # JSON-RPC's codes (CaseMocks answers without the SDK)
MAX_BODY = 4 * 1024 * 1024  # bytes of a request body; the SDK answers a longer one 413
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
            self._bind()
            await self.serve_asgi(self._app())

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

    def _app(self) -> Any:
        """The ASGI app: ``/mcp/<token>`` served by the SDK as that case's, anything else 404."""
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.routing import Route

        from .. import __version__

        sdk: Server[Any] = Server(
            "specrun-mocks",
            version=__version__,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=_input_schema,
        )
        sdk.middleware = []  # no OpenTelemetry span per message: a traced case's spans are its agent's
        manager = StreamableHTTPSessionManager(
            sdk,
            json_response=True,  # one JSON reply per request: the handlers send nothing else
            stateless=True,  # a case's state is its CaseMocks, found by path; no session id to keep
            max_request_body_size=MAX_BODY,
            security_settings=TransportSecuritySettings(  # loopback only: what the SDK sets for 127.0.0.1
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
            ),
        )
        route = Route("/mcp/{token}", _Dispatch(self.cases, manager))
        return Starlette(routes=[route], lifespan=lambda _: manager.run())

    def _mocks(self, ctx: ServerRequestContext[Any, Any]) -> CaseMocks:
        """The mocks of the case whose path the request came by (the SDK hands handlers the request)."""
        from mcp.shared.exceptions import MCPError

        mocks = None if ctx.request is None else self.cases.get(ctx.request.path_params.get("token", ""))
        if mocks is None:  # the case ended while its request was on the way
            raise MCPError(INVALID_REQUEST, "specrun: no case's mocks are served here (the case ended?)")
        return mocks

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], _: PaginatedRequestParams | None) -> Any:
        import mcp_types

        # The SDK's model, its defaults filled (the 2026 revision's cache hints): each version's
        # reply is cut from it by the SDK.
        return mcp_types.ListToolsResult.model_validate({"tools": self._mocks(ctx).listing()})

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> Any:
        import mcp_types
        from mcp.shared.exceptions import MCPError

        result, error = self._mocks(ctx).call(params.name, {} if params.arguments is None else params.arguments)
        if error is not None:
            raise MCPError(error["code"], error["message"])
        return mcp_types.CallToolResult.model_validate(result)


_serving: contextvars.ContextVar[CaseMocks] = contextvars.ContextVar("specrun_mocks_serving")
"""The case whose request is being served, for ``_input_schema``, which the SDK gives only a name."""


def _input_schema(name: str) -> Mapping[str, Any] | None:
    """The input schema of the served case's tool ``name`` (listed as ``tools/list`` lists it),
    for the SDK's checks of a call's ``Mcp-Param-*`` headers without running ``tools/list``."""
    mocks = _serving.get(None)
    tool = None if mocks is None else mocks.tools.get(name)
    return None if tool is None else tool.get("input_schema") or {"type": "object"}


class _Dispatch:
    """ASGI endpoint of ``/mcp/{token}``: a token of a running case is handed to the SDK's
    session manager (the case set for the request), any other is answered 404."""

    def __init__(self, cases: dict[str, CaseMocks], manager: Any):
        self.cases, self.manager = cases, manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        mocks = self.cases.get(scope["path_params"]["token"])
        if mocks is None:
            from starlette.responses import PlainTextResponse

            reply = PlainTextResponse("no case's mocks are served here (the case ended?)", status_code=404)
            await reply(scope, receive, send)
            return
        serving = _serving.set(mocks)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            _serving.reset(serving)
