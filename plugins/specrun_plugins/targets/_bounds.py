"""The bound on one message from a protocol server (``mcp``, ``a2a``), and an httpx client
that keeps each HTTP reply within it.

The SDKs read a reply whole (a JSON body, an SSE line) before they parse it, so a server that
answers with gigabytes, or a stream that never ends, would grow memory without end. The
client's response hook wraps each reply's stream (whatever transport or proxy served it) in one
that counts its bytes as they arrive and raises past ``MESSAGE_LIMIT``: an error the SDK
already turns into a failed request (the case is an ``error`` naming the bound; the connection
and the next case go on). The client asks for uncompressed replies and refuses a compressed
one: its bytes say nothing of the size the SDK would decode (a zip bomb). Both SDKs take a
client (``mcp`` on ``httpx2``, ``a2a`` on ``httpx``), so it is made of the module the SDK uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cache
from typing import Any

from specrun.plugin import Target

MESSAGE_LIMIT = Target.reply_limit
"""Bytes one message (an MCP stdio line, an HTTP reply) may take: the bound of every reply."""

IDENTITY = {"Accept-Encoding": "identity"}


def over_bound(seen: int, how: str = "read") -> str:
    """The failure: the bound and the size reached (the words of every target's)."""
    return Target.over_bound(seen, how)


def bounded_client(httpx: Any, **options: Any) -> Any:
    """An ``httpx.AsyncClient`` (of the module given: ``httpx`` or ``httpx2``) whose every reply,
    through any transport or proxy, stays within ``MESSAGE_LIMIT``."""
    headers = {**IDENTITY, **options.pop("headers", {})}
    return httpx.AsyncClient(headers=headers, event_hooks={"response": [_hook(httpx)]}, **options)


@cache
def _hook(httpx: Any) -> Callable[[Any], Awaitable[None]]:
    # A StreamError is what the MCP SDK expects of reading a JSON reply (it answers the request
    # with a JSON-RPC error); a TransportError (an SSEError for httpx2) is what both SDKs expect
    # of a stream that breaks. The error is both, so every reader reports it as a failed request.
    bases = (getattr(httpx, "SSEError", httpx.ReadError), httpx.StreamError)
    too_large = type("ReplyTooLarge", bases, {"__doc__": "A reply past MESSAGE_LIMIT."})

    class Bounded(httpx.AsyncByteStream):
        """The reply's body as it arrives (before it is decoded), counted."""

        def __init__(self, inner: Any, declared: str | None, encoding: str):
            self.inner, self.declared, self.encoding = inner, declared, encoding

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self.encoding not in ("", "identity"):
                raise too_large(f"a reply with Content-Encoding {self.encoding!r}, which was not asked for")
            if self.declared is not None and self.declared.isdigit() and int(self.declared) > MESSAGE_LIMIT:
                raise too_large(over_bound(int(self.declared), "declared by its Content-Length"))
            seen = 0
            async for chunk in self.inner:
                seen += len(chunk)
                if seen > MESSAGE_LIMIT:
                    raise too_large(over_bound(seen))
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def bound(response: Any) -> None:
        """A response hook: the body is not read yet, so its stream can still be wrapped."""
        headers = response.headers
        encoding = headers.get("content-encoding", "").strip().lower()
        response.stream = Bounded(response.stream, headers.get("content-length"), encoding)

    return bound
