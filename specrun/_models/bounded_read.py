"""Reading an HTTP reply's body (aiohttp) within the bound on every reply (:mod:`specrun._core.bounds`).

``ClientResponse.read()`` keeps whatever the server sends: a 2 GB body, or a chunked one that
never ends, would grow memory without end. Here a Content-Length over the bound fails before
anything is read, and the body is taken chunk by chunk as it arrives (decompressed: aiohttp
inflates a compressed body in bounded steps), counted, and abandoned past the bound; leaving the
request's ``async with`` then closes the connection, so the rest is never read.
"""

from __future__ import annotations

from typing import Any

from .._core.bounds import REPLY_LIMIT, over_bound


class ReplyTooLarge(Exception):
    """A reply past the bound; its text is :func:`~specrun._core.bounds.over_bound`'s."""


async def read_body(reply: Any, limit: int = REPLY_LIMIT) -> bytes:
    """The whole body of ``reply`` (an ``aiohttp.ClientResponse``), at most ``limit`` bytes;
    raises :class:`ReplyTooLarge` past it."""
    declared = reply.content_length
    if declared is not None and declared > limit:
        raise ReplyTooLarge(over_bound(declared, "declared by its Content-Length", limit))
    chunks, seen = [], 0
    async for chunk in reply.content.iter_any():
        seen += len(chunk)
        if seen > limit:
            raise ReplyTooLarge(over_bound(seen, "read", limit))
        chunks.append(chunk)
    return b"".join(chunks)
