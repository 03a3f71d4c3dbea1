"""What the runner lends to assertions and simulators: model calls and agents of the project."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .errors import EvaluationError
from .model import Context, Message, Response

AgentCaller = Callable[[str, list[Message], Context], Awaitable[Response]]


@dataclass
class Services:
    """Per case and run: ``models`` is the shared model client, ``run`` the run index (cache namespace)."""

    models: Any = None
    run: int = 1
    agent_caller: AgentCaller | None = None

    async def call_agent(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        """Send ``messages`` to the project's agent ``agent_id`` (``agents:`` prefix optional)."""
        if self.agent_caller is None:
            raise EvaluationError(f"cannot call agent {agent_id!r}: no project agents are available here")
        return await self.agent_caller(agent_id.removeprefix("agents:"), messages, context)
