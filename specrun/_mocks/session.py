"""A case's session with its mocked tools: the target's session, made after the case's mocks
are served (``context.mcp_url`` set, so that each target can hand the URL to its agent), whose
replies carry the calls the agent made to them (reported: ``[]`` when it made none)."""

from __future__ import annotations

from typing import Any

from .._core.data import Context, Message, Response, ToolCall
from .._core.errors import TargetError
from .._core.kinds import Session
from .._core.results import Verdict
from .._core.wrapping import WrappingSession
from .server import CaseMocks, MockServer, UnmockedCall


class MockedSession(WrappingSession):
    """``inner``'s conversation, its evidence completed with the case's mock calls."""

    def __init__(self, inner: Session, server: MockServer, mocks: CaseMocks):
        super().__init__(inner)
        self.server, self.mocks = server, mocks

    async def send(self, messages: list[Message]) -> Response:
        await self.server.start()
        start = len(self.mocks.calls)
        try:
            response = Response.of(await self.inner.send(messages))
        except TargetError as exc:
            calls = self.mocks.take(start)
            if not any(isinstance(c, UnmockedCall) for c in calls):
                if exc.response is not None:
                    exc.response = merge(exc.response, calls)
                raise
            # The agent failed on the MCP error of a call no mock answers: that call fails the
            # case (see ``verdicts``); the agent's failure is said alongside.
            response = merge(exc.response or Response(content=None), calls)
            response.warnings.append(f"after a call no mock answers, the agent failed: {exc}")
            return response
        return merge(response, self.mocks.take(start))

    def finished(self) -> None:
        self.server.close_case(self.mocks)


def merge(response: Response, calls: list[ToolCall]) -> Response:
    """``response`` with ``calls`` among its tool calls, which are then reported. A call the
    target reported too (same name and arguments, as a framework that uses the MCP server
    reports it) is kept once, with the mock's result and status where it had none."""
    reported = list(response.tool_calls) if response.tools_reported else []
    unmatched = list(reported)
    for call in calls:
        twin = next((c for c in unmatched if c.name == call.name and c.arguments == call.arguments), None)
        if twin is None:
            reported.append(call)
            continue
        unmatched.remove(twin)
        if isinstance(call, UnmockedCall):
            reported[reported.index(twin)] = call
            continue
        twin.result = call.result if twin.result is None else twin.result
        twin.status = twin.status or call.status
    response.tool_calls = reported
    return response


def verdicts(response: Response | None) -> list[Verdict]:
    """A failed verdict for each call of ``response`` that no mock answered."""
    if response is None:
        return []
    return [
        Verdict.settled("tools", "failed", f"{call.result}{call.hint}")
        for call in response.tool_calls
        if isinstance(call, UnmockedCall)
    ]


def open_case(server: MockServer, tools: list[dict[str, Any]], context: Context) -> CaseMocks:
    """Serve a case's mocks and set their URL on ``context`` (before its target's session is made)."""
    mocks = server.open(tools)
    context.mcp_url = mocks.url
    return mocks
