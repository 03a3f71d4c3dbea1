"""Waiting for an event in an async test: poll a condition, with a deadline that only fails.

A test waits for what it needs (a line read, a request answered), never a fixed time: the
machine may be loaded, and a quiet one should not pay the worst case.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], limit: float = 20, what: str = "condition") -> None:
    """Return once ``condition()`` is true, polled every 10 ms; fail after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"{what} never happened within {limit}s"
        await asyncio.sleep(0.01)
