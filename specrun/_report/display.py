"""Agent text made safe to show: control characters visible in reports, gone on a terminal.

The one sanitiser of agent text: the Markdown and HTML reporters and ``specrun diff`` show
control characters as escapes (``visible``), the console and direct mode (``-i``) remove them
with the escape sequences they start (``terminal_text``). Also Markdown escaping, and the one
text truncation (``shorten``).
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL and C1 (an ESC would replay ANSI codes when a report is
# printed, a NUL makes tools take a file for binary), and the bidi controls that reorder what
# is shown ("Trojan Source": U+202A-202E, U+2066-2069).
_CONTROL_CHARS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_CONTROL = re.compile(_CONTROL_CHARS)
# On a terminal the whole sequence goes, or its parameters would still be printed: CSI (colours,
# cursor moves, also as the 8-bit C1 CSI), terminated OSC/DCS/SOS/PM/APC strings (window
# titles, links), two-byte escapes; then any control character left.
_TERMINAL = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
    "|" + _CONTROL_CHARS
)


def visible(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN``/``\\uNNNN`` escapes (carriage returns as newlines)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: escape sequences and control characters removed
    (tab and newline kept)."""
    # Every sequence removed starts with a control character. Looking for one is seven times
    # faster than trying every branch of _TERMINAL at each character: most text has none.
    return _TERMINAL.sub("", text) if _CONTROL.search(text) else text


# What starts a sequence of more than one character; any other match is one control character.
_SEQUENCE_START = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")


def terminal_line(text: str, limit: int, marker: str = "...") -> str:
    """``terminal_text(text)`` on one line (whitespace runs made one space), cut to ``limit``
    characters ending in ``marker``.

    A long text (an agent's 5 MB answer) costs a scan of all of it (0.3 s for 5 MB) for the
    few characters shown: only its head is cleaned when that is enough and no escape sequence
    in it could run past it. Then the head's line starts the whole text's, so both cut alike.
    """
    head = text[: max(4 * limit, 4096)]
    if len(head) < len(text) and not _SEQUENCE_START.search(head):
        line = " ".join(terminal_text(head).split())
        if len(line) > limit:
            return shorten(line, limit, marker)
    return shorten(" ".join(terminal_text(text).split()), limit, marker)


# Inline text never starts a line, so only characters that matter anywhere in a line are escaped.
_MD = {c: "\\" + c for c in "\\`*_[]~$"}
_MD.update({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|"})
_MD_TABLE = str.maketrans(_MD)


def md_text(value: Any, limit: int = 0) -> str:
    """Text made inert for a Markdown line or table cell: one line, no markup, no HTML."""
    text = visible(" ".join(str(value).split()))
    if limit:
        text = shorten(text, limit)
    return text.translate(_MD_TABLE)


def md_block(text: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in ``text``."""
    text = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def shorten(text: str, limit: int, marker: str = "…") -> str:
    """``text`` cut to at most ``limit`` characters, ``marker`` ending a cut one."""
    return text if len(text) <= limit else text[: max(0, limit - len(marker))] + marker
