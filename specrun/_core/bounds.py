"""The bound on one reply from outside the run: an agent's (every target), a protocol server's
message (``mcp``, ``a2a``), a model server's answer. What an agent or server sends must not grow
memory without end: a 2 GB body or an endless line fails its case (an ``error`` naming the
bound and the size reached) and the run goes on. Plugins reach it as ``Target.reply_limit`` and
``Target.over_bound``.
"""

from __future__ import annotations

REPLY_LIMIT = 64 * 1024 * 1024
"""Bytes one reply may take (67,108,864): room for a large image a tool or an agent returns."""


def over_bound(seen: int, how: str = "read", limit: int = REPLY_LIMIT) -> str:
    """The failure: the bound and the size reached (``a reply over the 64 MiB bound (N bytes read)``)."""
    return f"a reply over the {limit // 2**20} MiB bound ({seen:,} bytes {how})"
