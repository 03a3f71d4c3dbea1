"""Durations as suites write them (``30s``, ``500ms``, ``1m30s``) and as specrun shows them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(value: str | float | int) -> float:
    """Seconds from ``90``, ``"30s"``, ``"500ms"``, ``"2m"``, ``"1h"`` or ``"1m30s"``."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {value!r} (use e.g. 30s, 500ms, 2m, 1m30s)")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """``1.2s``, ``350ms``, ``2.5m``: short and human."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{seconds / 60:.1f}m"


def seconds_limit(limits: Mapping[str, Any]) -> dict[str, Any]:
    """``limits`` (a case's or ``specrun.yaml``'s ``limits:``) with ``seconds`` as a number of
    seconds: it may be written as a duration (``30s``). A bad one is left as it is, for the
    schema to report."""
    seconds = limits.get("seconds")
    if isinstance(seconds, str):
        try:
            return {**limits, "seconds": parse_duration(seconds)}
        except ValueError:
            pass
    return limits if isinstance(limits, dict) else dict(limits)  # no copy per case
