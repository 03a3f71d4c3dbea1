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
