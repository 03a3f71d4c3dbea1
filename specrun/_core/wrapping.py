"""A session around a target's own: how the engine adds evidence (traces, mocked tools) to any
target without the target knowing."""

from __future__ import annotations

from typing import Any

from .kinds import Session


class WrappingSession(Session):
    """``inner``'s conversation. What the target's own session offers (``agent_name``,
    ``process``) is the inner one's; ``close`` closes it once, then calls ``finished``."""

    def __init__(self, inner: Session):
        self.inner = inner
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being made): never the inner one's
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.inner.close()
        finally:
            self.finished()

    def finished(self) -> None:
        """Release what the wrapper holds for the conversation, once the inner session is closed."""
