"""A loopback listener of the run's (the OTLP receiver, the mocked tools' MCP server): an app
served on a socket bound beforehand, so that the port is known (and a busy one reported) before
anything runs. An aiohttp app (``serve``) or an ASGI one (``serve_asgi``, by uvicorn: the
``mcp`` SDK's server is a Starlette app)."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import Any


class Listener:
    """``sock`` is bound by the subclass; ``serve(app)`` or ``serve_asgi(app)`` serves it from
    the running event loop, once; ``close`` stops serving and closes the socket."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self._stop: Callable[[], Awaitable[None]] | None = None

    @property
    def started(self) -> bool:
        return self._stop is not None

    async def serve(self, app: Any) -> None:
        """Serve an aiohttp ``web.Application``."""
        from aiohttp import web

        assert self.sock is not None, "bind the socket first"
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.SockSite(runner, self.sock).start()
        self._stop = runner.cleanup

    async def serve_asgi(self, app: Any) -> None:
        """Serve an ASGI app, its lifespan run, with uvicorn: its startup and its shutdown without
        ``Server.serve``, which takes over SIGINT and SIGTERM (the run's own) and polls and
        sleeps at shutdown, ~0.2 s at the end of every run."""
        import uvicorn

        assert self.sock is not None, "bind the socket first"
        # asyncio sets TCP_NODELAY on an accepted connection only when its listening socket says
        # IPPROTO_TCP (socket.create_server's say 0); without it, each reply after a connection's
        # first (uvicorn writes its headers, then its body) waits ~40 ms for the peer's delayed
        # ACK. The same socket, its protocol said. (aiohttp sets TCP_NODELAY itself.)
        sock = self.sock
        self.sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
        config = uvicorn.Config(
            app, lifespan="on", log_config=None, access_log=False, server_header=False, date_header=False
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)  # as Server.serve sets it up before startup
        await server.startup(sockets=[self.sock])

        async def stop() -> None:
            for listening in server.servers:
                listening.close()
            for connection in list(server.server_state.connections):
                connection.shutdown()
            await server.lifespan.shutdown()
            for listening in server.servers:
                await listening.wait_closed()

        self._stop = stop

    async def close(self) -> None:
        if self._stop is not None:
            stop, self._stop = self._stop, None
            await stop()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
