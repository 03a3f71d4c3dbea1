"""Agent text made safe to show in a report: control characters visible, Markdown inert.

Shared by the Markdown and HTML reporters and ``specrun diff``, so that agent text is
escaped the same way everywhere. (The console strips control codes instead: see console.py.)
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL and C1: an ESC would replay ANSI codes when the report
# is printed, a NUL makes tools take the file for binary.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` escapes (carriage returns as newlines)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


# Inline text never starts a line, so only characters that matter anywhere in a line are escaped.
_MD = {c: "\\" + c for c in "\\`*_[]~$"}
_MD.update({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|"})
_MD_TABLE = str.maketrans(_MD)


def md_text(value: Any, limit: int = 0) -> str:
    """Text made inert for a Markdown line or table cell: one line, no markup, no HTML."""
    text = visible(" ".join(str(value).split()))
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.translate(_MD_TABLE)


def md_block(text: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in ``text``."""
    text = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"
