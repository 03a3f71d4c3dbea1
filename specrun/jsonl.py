"""JSONL suites: a sequence of JSON values, one per line or spread over lines, with ``//`` comments.

One value per line is the common case and the fast one: each line is parsed on its own with the
standard library, and every broken line is reported. A value whose first line is incomplete
(V2's suites are written as pretty-printed objects) is read on from there, from the whole text
at once; its errors keep their exact file:line:col, and a broken one is skipped to its closing
bracket so that its inner lines are not reported as more broken values.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

from .documents import (
    MAX_DEPTH,
    Document,
    DocumentError,
    PastLimit,
    Record,
    load_json,
    parse_int,
    past_limit,
    syntax_error,
    too_deep,
)
from .errors import Problem


def jsonl_lines(text: str) -> list[str]:
    r"""The lines of a JSONL text: split at ``\n`` only (a ``\r`` before it is JSON whitespace).

    Not ``str.splitlines``, which also splits at U+2028, U+0085, ``\f`` and more: characters a
    JSON string may hold as they are.
    """
    return text.split("\n")


def parse_jsonl(path: Path, display: str, text: str) -> Document:
    """A sequence of JSON values, one per line (parsed line by line, the fast path) or spread
    over lines, as V2's suites are written (a value whose first line is incomplete is read on
    from there); blank lines and ``//`` comment lines between (or inside) values are skipped."""
    cases = []
    broken: list[Problem] = []  # every broken value is reported, not just the first
    lines = jsonl_lines(text)
    spread: _Spread | None = None  # the whole text, made when the first value spans lines
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            data = load_json(line)
        except json.JSONDecodeError as exc:
            if stripped[0] in "[{" and exc.pos >= len(line.rstrip()):  # the value goes on below
                spread = spread or _Spread(lines, display)
                record, number = spread.read(number, exc, broken)
                if record is not None:
                    cases.append(record)
            else:
                broken.append(syntax_error(display, number, exc.colno, "JSON", exc.msg).problem)
            continue
        except PastLimit as exc:
            broken.append(Problem(display, number, exc.column + 1, str(exc)))
            continue
        cases.append(Record(data, number, _indent(line), segment=stripped))
    if broken:
        raise DocumentError(*broken)
    if not cases:
        raise DocumentError(Problem(display, 1, 1, "no cases: every line is blank or a // comment"))
    return Document(path, display, "jsonl", None, cases, None)


def _indent(line: str) -> int:
    """The 1-based column of a line's first character that is not whitespace."""
    return len(line) - len(line.lstrip()) + 1


class _Spread:
    """A JSONL text read as one string (comment lines blanked), for values spread over lines."""

    def __init__(self, lines: list[str], display: str):
        self.display = display
        kept = ["" if line.lstrip().startswith("//") else line for line in lines]
        self.lines = kept  # a comment line inside a value is blank here
        self.text = "\n".join(kept)
        self.starts = [0]
        for line in kept[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def read(self, number: int, first: json.JSONDecodeError, broken: list[Problem]) -> tuple[Record | None, int]:
        """The value that starts on line ``number`` (``first``: why that line alone is not
        one) and the number of the line to read on after; a broken value goes to ``broken``."""
        line = self.lines[number - 1]
        try:
            return self._value(number - 1)
        except PastLimit as limit:
            broken.append(Problem(self.display, limit.line + 1, limit.column + 1, str(limit)))
            return None, self._end_line(number - 1) or len(self.lines)
        except json.JSONDecodeError as exc:
            at, col, message = exc.lineno, exc.colno, exc.msg
        below = self.lines[at - 1] if at > number else ""
        end = self._end_line(number - 1)
        if below.lstrip()[:1] in ("{", "[") and col == _indent(below) == _indent(line):
            # a new value starts where this one should go on: this line lacks its end, as a broken
            # line of one-per-line JSONL does (reported as such, and the next line is read)
            at, col, message, end = number, first.colno, first.msg, number
        elif end is None:  # nothing closes it: say where it starts (on the last line: what is wrong)
            if any(rest.strip() for rest in self.lines[number:]):
                at, col = number, _indent(line)
                message = f"{line.strip()[0]} is never closed: the value that starts here has no end"
            else:
                at, col, message = number, first.colno, first.msg
        broken.append(syntax_error(self.display, at, col, "JSON", message).problem)
        return None, max(end or len(self.lines), at)  # its inner lines are not read as more values

    def _value(self, index: int) -> tuple[Record, int]:
        """The value that starts on 0-based line ``index``, and the 1-based number of its last
        line; ``JSONDecodeError`` (positions in the file) or ``PastLimit`` when it is not one."""
        text = self.text
        start = self.starts[index] + _indent(self.lines[index]) - 1
        try:
            data, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                raise
            raise self._past(start) from None
        segment = text[start:end]
        if segment.count("[") + segment.count("{") > MAX_DEPTH and too_deep(data):
            raise self._past(start)
        last = bisect.bisect_right(self.starts, end - 1) - 1
        line_end = text.find("\n", end)
        rest = text[end : len(text) if line_end < 0 else line_end]
        if rest.strip():
            raise json.JSONDecodeError("Extra data", text, end + len(rest) - len(rest.lstrip()))
        return Record(data, index + 1, start - self.starts[index] + 1, segment=segment), last + 1

    def _end_line(self, index: int) -> int | None:
        """The 1-based line where the brackets opened on 0-based line ``index`` are all closed
        (strings skipped), or None when the text ends first."""
        depth = 0
        for token in _BRACKETS.finditer(self.text, self.starts[index]):
            value = token.group()
            if value in "[{":
                depth += 1
            elif value in "]}":
                depth -= 1
                if depth == 0:
                    return bisect.bisect_right(self.starts, token.start())
        return None

    def _past(self, start: int) -> PastLimit:
        """Where the value at ``start`` passes a limit, in 0-based file positions (the first
        place past one from ``start`` on is inside that value)."""
        found = past_limit(self.text[start:])
        line = bisect.bisect_right(self.starts, start) - 1
        if found.line == 0:
            return PastLimit(str(found), line, start - self.starts[line] + found.column)
        return PastLimit(str(found), line + found.line, found.column)


_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')

# A value spread over lines is read with the same limits as a one-line value: integers of at
# most MAX_INT_DIGITS digits (the hook), nesting checked after reading.
_DECODER = json.JSONDecoder(parse_int=parse_int)
