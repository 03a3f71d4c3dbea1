"""JSONL suites: a sequence of JSON values, one per line or spread over lines, with ``//`` comments.

One value per line is the common case and the fast one: each line is parsed on its own with the
standard library, and every broken line is reported. A value whose first line is incomplete
(V2's suites are written as pretty-printed objects) is read on from there, from the whole text
at once; its errors keep their exact file:line:col, and a broken one is skipped to its closing
bracket so that its inner lines are not reported as more broken values.
"""

from __future__ import annotations

import bisect
import codecs
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path

from .._core.errors import Problem
from .documents import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
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


def jsonl_lines(text: str) -> list[str]:
    r"""The lines of a JSONL text: split at ``\n`` only (a ``\r`` before it is JSON whitespace).

    Not ``str.splitlines``, which also splits at U+2028, U+0085, ``\f`` and more: characters a
    JSON string may hold as they are.
    """
    return text.split("\n")


def jsonl_file_lines(path: Path, limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
    r"""The lines of a JSONL file with their 1-based numbers, read one at a time: memory holds the
    longest line, not the file. Split as :func:`jsonl_lines` splits a text, at ``\n`` only; a
    UTF-8 byte order mark at the start (Windows editors write one) is dropped. The lines are not
    decoded, so that one that is not UTF-8 is the caller's problem on its line and the lines after
    it are read on. A line over ``limit`` bytes is None, read past a MiB at a time and never held
    (a line of gigabytes, or one that never ends, cannot fill memory). ``OSError`` when the file
    cannot be read.
    """
    with open(path, "rb") as f:
        for number in itertools.count(1):
            line = f.readline() if limit is None else f.readline(limit + 1)
            if not line:
                return
            if limit is not None and len(line) > limit and not line.endswith(b"\n"):
                while (rest := f.readline(2**20)) and not rest.endswith(b"\n"):
                    pass
                yield number, None
                continue
            yield number, (line.removeprefix(codecs.BOM_UTF8) if number == 1 else line).removesuffix(b"\n")


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
        self.starts = [0, *itertools.accumulate(len(line) + 1 for line in kept[:-1])]

    def read(self, number: int, first: json.JSONDecodeError, broken: list[Problem]) -> tuple[Record | None, int]:
        """The value that starts on line ``number`` (``first``: why that line alone is not
        one) and the number of the line to read on after; a broken value goes to ``broken``."""
        line = self.lines[number - 1]
        try:
            return self._value(number - 1)
        except PastLimit as limit:
            broken.append(Problem(self.display, limit.line + 1, limit.column + 1, str(limit)))
            return None, self._end_line(number - 1) or len(self.lines)
        except _Broken as exc:
            at, col, message = exc.line, exc.column, exc.message
        below = self.lines[at - 1] if at > number else ""
        if below.lstrip()[:1] in ("{", "[") and col == _indent(below) == _indent(line):
            # a new value starts where this one should go on: this line lacks its end, as a broken
            # line of one-per-line JSONL does (reported as such, and the next line is read). Found
            # before any scan for its end, so a file of such lines is read in linear time.
            broken.append(syntax_error(self.display, number, first.colno, "JSON", first.msg).problem)
            return None, number
        end = self._end_line(number - 1)  # each scan ends where reading goes on, or stops reading
        if end is None:  # nothing closes it: say where it starts (on the last line: what is wrong)
            if any(rest.strip() for rest in self.lines[number:]):
                at, col = number, _indent(line)
                message = f"{line.strip()[0]} is never closed: the value that starts here has no end"
            else:
                at, col, message = number, first.colno, first.msg
        broken.append(syntax_error(self.display, at, col, "JSON", message).problem)
        return None, max(end or len(self.lines), at)  # its inner lines are not read as more values

    def _value(self, index: int) -> tuple[Record, int]:
        """The value that starts on 0-based line ``index``, and the 1-based number of its last
        line; ``_Broken`` or ``PastLimit`` (positions in the file) when it is not one.

        It is read from a window of the lines below, doubled while the value goes on past it:
        work in proportion to the value, not to the rest of the file (an error's position is
        counted from the start of the text it was read from).
        """
        start = self.starts[index] + _indent(self.lines[index]) - 1
        span = _WINDOW
        while True:
            last = min(index + span, len(self.lines))
            window = self.text[start : self.starts[last] - 1 if last < len(self.lines) else len(self.text)]
            try:
                data, end = _PLAIN.raw_decode(window)
                if end > MAX_INT_DIGITS and _LONG_DIGITS.search(window, 0, end):  # maybe a too long integer
                    _BOUNDED.raw_decode(window[:end])
                break
            except json.JSONDecodeError as exc:
                if last < len(self.lines) and exc.pos >= len(window.rstrip()):
                    span *= 2  # the value goes on below the window
                    continue
                raise self._broken(start + exc.pos, exc.msg) from None
            except (ValueError, RecursionError):  # the integer hook, or nesting deeper than the stack
                raise self._past(start, index) from None
        segment = window[:end]
        if segment.count("[") + segment.count("{") > MAX_DEPTH and too_deep(data):
            raise self._past(start, index)
        rest = window[end:].split("\n", 1)[0]
        if rest.strip():
            raise self._broken(start + end + len(rest) - len(rest.lstrip()), "Extra data")
        last_line = bisect.bisect_right(self.starts, start + end - 1)
        return Record(data, index + 1, start - self.starts[index] + 1, segment=segment), last_line

    def _broken(self, offset: int, message: str) -> _Broken:
        line = bisect.bisect_right(self.starts, offset)
        return _Broken(line, offset - self.starts[line - 1] + 1, message)

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

    def _past(self, start: int, index: int) -> PastLimit:
        """Where the value at ``start`` (on 0-based line ``index``) passes a limit, in 0-based
        file positions: the first place past one from ``start`` to the value's end is inside it."""
        end = self._end_line(index)
        found = past_limit(self.text[start : self.starts[end] if end is not None and end < len(self.starts) else None])
        if found.line == 0:
            return PastLimit(str(found), index, start - self.starts[index] + found.column)
        return PastLimit(str(found), index + found.line, found.column)


class _Broken(Exception):
    """A value that is not JSON, at a 1-based line and column of the file."""

    def __init__(self, line: int, column: int, message: str):
        super().__init__(message)
        self.line, self.column, self.message = line, column, message


_WINDOW = 64  # lines a value spread over lines is first read from

_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')

# A value spread over lines is read with the same limits as a one-line value: integers of at
# most MAX_INT_DIGITS digits (the hook, run again on a value long enough to hold one), nesting
# checked after reading.
_PLAIN = json.JSONDecoder()
_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")
_BOUNDED = json.JSONDecoder(parse_int=parse_int)
