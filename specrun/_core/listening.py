"""A loopback listener of the run's (the OTLP receiver, the mocked tools' MCP server): an aiohttp
app served on a socket bound beforehand, so that the port is known (and a busy one reported)
before anything runs."""

from __future__ import annotations

import socket
from typing import Any


class Listener:
    """``sock`` is bound by the subclass; ``serve(app)`` serves it from the running event loop,
    once; ``close`` stops serving and closes the socket."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self._runner: Any = None

    @property
    def started(self) -> bool:
        return self._runner is not None

    async def serve(self, app: Any) -> None:
        from aiohttp import web

        assert self.sock is not None, "bind the socket first"
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.SockSite(runner, self.sock).start()
        self._runner = runner

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
