"""The judge model clients of the Python test API: one per event loop and settings, shared.

A model client's HTTP connections belong to the event loop that opened them. A pytest session
keeps one loop for many ``expect()`` calls, while ``Test.compare`` from synchronous code runs
in a loop of its own: so each loop gets its own client, kept open while anything in that loop
uses it (a started :class:`~specrun.testing.Test`, a comparison in progress) and closed when the
last user lets go. Closing it after every comparison made the next one in the same loop fail
with "the client has been closed".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

from .._models.client import ModelClient


class _LoopClients:
    """The clients of one event loop and how many users hold them."""

    def __init__(self) -> None:
        self.users = 0
        self.clients: dict[str, ModelClient] = {}


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()


def _of_loop() -> _LoopClients:
    loop = asyncio.get_running_loop()
    held = _loops.get(loop)
    if held is None:
        held = _loops[loop] = _LoopClients()
    return held


def hold() -> None:
    """Keep this loop's clients open until the matching :func:`release` (a started ``Test``)."""
    _of_loop().users += 1


async def release() -> None:
    """Let go of this loop's clients; the last user closes them."""
    held = _of_loop()
    held.users -= 1
    if held.users <= 0:
        clients, held.clients, held.users = list(held.clients.values()), {}, 0
        for client in clients:
            await client.aclose()


@contextlib.asynccontextmanager
async def judge_client(model: str, params: dict[str, Any], retries: int | None) -> AsyncIterator[ModelClient]:
    """This loop's client for ``model`` and ``params`` (no disk cache), held while in use."""
    held = _of_loop()
    key = json.dumps([model, params, retries], sort_keys=True, default=str)
    client = held.clients.get(key)
    if client is None:
        client = held.clients[key] = ModelClient(model, params=params, cache_dir=None)
        if retries is not None:
            client.retries = max(0, retries)
    hold()
    try:
        yield client
    finally:
        await release()
