"""An ASGI app (an MCP server's, an A2A agent's) served on a free loopback port, in a thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def serving(make: Callable[[int], Any]) -> Iterator[int]:
    """Serve ``make(port)`` (an ASGI app that may need its own address) with uvicorn on
    127.0.0.1 while the block runs; yields the port."""
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make(port), host="127.0.0.1", port=port, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True, name="test-asgi")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:  # uvicorn says when it listens: poll that, never a fixed wait
        assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.005)
    try:
        yield port
    finally:
        server.should_exit = server.force_exit = True  # a request still hanging (on purpose) is dropped
        thread.join(10)


FLOOD = 65 * 2**20  # past the mcp and a2a targets' 64 MiB bound, and finite: a failing test ends


def flooding(inner: Any, floods: dict[bytes, bytes]) -> Any:
    """``inner``, except that a POST whose body holds a key of ``floods`` is answered with 65 MiB
    of that content type (``text/event-stream``: one ``data:`` line; else an unclosed JSON
    string), without a Content-Length: a reply only counting its bytes can bound."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await inner(scope, receive, send)
        received, body = [], b""
        while True:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        kind = next((kind for key, kind in floods.items() if key in body), None)
        if kind is None:

            async def replay() -> Any:
                return received.pop(0) if received else await receive()

            return await inner(scope, replay, send)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        start = b"data: " if kind == b"text/event-stream" else b'{"jsonrpc": "2.0", "id": 1, "result": "'
        await send({"type": "http.response.body", "body": start, "more_body": True})
        chunk = b"x" * 2**20
        for _ in range(FLOOD // len(chunk)):  # a client gone: uvicorn drops the rest at once
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app
