"""The tool calls of a conversation's turns: each call knows its turn, and a case's calls are
the union over its turns, reported only when every turn reported its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeVar

from .._core.data import Message, Response, ToolCall, _NotReported
from .._core.errors import TargetError

_R = TypeVar("_R", bound=Response | None)


def turn_of(messages: Sequence[Message]) -> int:
    """The user turn that a reply to ``messages`` belongs to: how many user messages they hold
    (a history input ``user, assistant, user`` is answered in turn 2), at least 1."""
    users = 0
    for m in messages:  # a loop, not sum() over a generator: this runs for every case
        users += m.role == "user"
    return max(1, users)


def in_turn(response: _R, turn: int) -> _R:
    """``response`` (None as is), each of its tool calls that names no turn given ``turn``.

    ``tool_calls=None`` reads as not reported; a call that is no ``ToolCall`` is a ``TargetError``.
    """
    if response is None:
        return response
    if response.tool_calls is None:  # the agent said "unknown" its own way
        response.tool_calls = _NotReported()
    for call in response.tool_calls:
        if not isinstance(call, ToolCall):
            raise TargetError(
                f"the agent's tool_calls hold a {type(call).__name__}, not a specrun.ToolCall: {call!r:.200}"
            )
        if call.turn is None:
            call.turn = turn
    return response


class Trajectory:
    """The tool calls of every turn so far, or unknown once one turn reported none."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] | None = []

    def add(self, response: Response) -> None:
        if self.calls is None:
            return
        if response.tools_reported:
            self.calls.extend(response.tool_calls)
        else:  # one turn whose calls are unknown makes the case's unknown: [] would claim "none"
            self.calls = None

    def response(self, last: Response | None) -> Response | None:
        """``last`` (the last turn's answer) carrying the calls of every turn."""
        if last is None:
            return None
        calls = _NotReported() if self.calls is None else list(self.calls)
        return dataclasses.replace(last, tool_calls=calls)
