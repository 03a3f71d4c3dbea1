"""Read suite, agent and config files as data while keeping the file:line:col of every node.

JSON and JSONL are parsed with the standard library (fast); positions inside a record are
found only when an error needs them, by scanning that record's text (``json_positions``; the
rare text that YAML reads otherwise is read again with ruamel.yaml). YAML is read once with
ruamel.yaml's round-trip loader, which records positions as it goes.

Every file is read within limits, so that no file can exhaust memory, time or the stack: at
most ``MAX_DEPTH`` nested lists and mappings, integers of at most ``MAX_INT_DIGITS`` digits,
and YAML aliases (``*name``) that stand for at most ``MAX_ALIAS_VALUES`` values in all, or
``ALIAS_FACTOR`` times the values written out in the file if that is more (a few hundred
bytes of nested aliases otherwise expand to gigabytes). Past one, the file is a
``DocumentError`` at the place where it passed the limit, found before the rest is read.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.errors import Problem
from .json_positions import JsonPositions, json_items, reads_as_yaml

SUITE_EXTENSIONS = (".jsonl", ".yaml", ".yml", ".json")
MAX_DEPTH = 100
MAX_INT_DIGITS = 1000
MAX_ALIAS_VALUES = 100_000
ALIAS_FACTOR = 10


class DocumentError(Exception):
    """A file that cannot be read as data; carries the problem with its position."""

    def __init__(self, problem: Problem, *more: Problem):
        self.problem = problem
        self.problems = [problem, *more]
        super().__init__("\n".join(str(p) for p in self.problems))


class PastLimit(Exception):
    """A document past one of the limits, at 0-based ``line`` and ``column``."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line, self.column = line, column


def read_text(path: Path, display: str) -> str:
    """The file's text; empty, binary, or non-UTF-8 files are a ``DocumentError``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(Problem(display, 1, 1, f"cannot read file: {exc.strerror}")) from None
    data = _without_bom(data, display)
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise DocumentError(_binary(display, line))
    text = _decode(data, display)
    if not text.strip():
        raise DocumentError(_empty(display))
    return text


def _without_bom(data: bytes, display: str) -> bytes:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(Problem(display, 1, 1, "file is UTF-16 (byte-order mark found); save it as UTF-8"))
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data  # a UTF-8 byte-order mark is harmless


def _decode(data: bytes, display: str, first_line: int = 1) -> str:
    """``data`` (the file, or its line ``first_line``) as text; not UTF-8 is a ``DocumentError``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + first_line
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded; save the file as UTF-8"
        raise DocumentError(Problem(display, line, col, message)) from None


def _binary(display: str, line: int) -> Problem:
    return Problem(display, line, 1, "binary file (NUL byte found): not a suite")


def _empty(display: str) -> Problem:
    return Problem(display, 1, 1, "empty file: expected a list of cases or a mapping with 'cases'")


def _walk(node: Any, path: list[Any], at_key: bool) -> tuple[int, int] | None:
    """0-based (line, col) of ``path`` inside a ruamel node; the deepest known point."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    pos = (lc.line, lc.col)
    for i, step in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, dict) and step in node:
            marks: Any = getattr(node, "lc")  # noqa: B009  # ruamel records where each key and value is
            pos = marks.key(step) if (last and at_key) else marks.value(step)
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            marks = getattr(node, "lc")  # noqa: B009
            pos = marks.item(step)
            node = node[step]
        else:
            break
    return pos


# JSON has these only inside strings (or \r as whitespace); YAML counts them as line breaks,
# which would put every position after one a line off.
_NOT_JSON_BREAKS = str.maketrans("\r\x85\u2028\u2029", "    ")


@dataclass(slots=True)  # one per case read, three reads a run
class Record:
    """One top-level node of a document (a case, or the suite mapping) and how to locate in it."""

    data: Any
    line: int  # 1-based line where the record starts
    column: int = 1
    node: Any = None  # ruamel node when already parsed (YAML)
    segment: str | None = None  # the record's source text (JSON, JSONL), parsed on demand
    _parsed: bool = field(default=False, repr=False)
    _json: JsonPositions | None = field(default=None, repr=False)

    def position(self, path: list[Any], at_key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of ``path`` inside this record."""
        if self.node is None and self.segment is not None and not self._parsed:
            self._parsed = True
            # ruamel.yaml only for the rare text it reads otherwise than JSON: it is slow.
            if reads_as_yaml(self.segment):
                self._json = JsonPositions(self.segment)
            else:
                from .yaml_documents import bounded_yaml

                try:
                    self.node = bounded_yaml().load(self.segment.translate(_NOT_JSON_BREAKS))
                except Exception:
                    self.node = None
        if self._json is not None:
            pos = self._json.find(path, at_key)
        else:
            pos = _walk(self.node, path, at_key) if self.node is not None else None
        if pos is None:
            return self.line, self.column
        line, col = pos
        if self.segment is not None:  # segment positions are relative to where it starts
            return self.line + line, (col + self.column if line == 0 else col + 1)
        return line + 1, col + 1


@dataclass
class Document:
    """A parsed file: its top-level shape and the records (cases) in it."""

    path: Path
    display: str
    kind: str  # "jsonl", "json" or "yaml"
    top: Record | None  # the whole document (None for JSONL)
    cases: list[Record]  # JSON and YAML: read whole; JSONL's are in ``lines``
    case_key: str | None  # "cases" when the document is a mapping holding them
    lines: Iterator[Record] | None = None  # JSONL: each case read as it is reached

    def records(self) -> Iterator[Record]:
        """The case records, in file order (a JSONL file's once: they are read as they come)."""
        return self.lines if self.lines is not None else iter(self.cases)


def syntax_error(display: str, line: int, col: int, what: str, msg: str) -> DocumentError:
    return DocumentError(Problem(display, line, col, f"invalid {what}: {msg}"))


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def parse_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS + digits.startswith("-"):
        raise ValueError("integer too large")  # located by past_limit
    return int(digits)


# The C scanner json.loads reads with, called directly: json.loads first matches a whitespace
# regex on each side of the value, about a third of its cost on a case's line (read twice a run).
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a decoder it is


def _loads(text: str) -> Any:
    """``json.loads(text)``: a text that is one value with nothing around it is read by the
    scanner alone; any other (whitespace, a BOM, extra data, a mistake) by ``json.loads``
    itself, which says what is wrong exactly as before."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def load_json(text: str) -> Any:
    """``json.loads`` within the limits; ``PastLimit`` (0-based position in ``text``) past one."""
    try:
        # Only a text longer than the limit can hold a too long integer: the others skip the hook.
        data = json.loads(text, parse_int=parse_int) if len(text) > MAX_INT_DIGITS else _loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError):  # the integer hook, or nesting deeper than the stack
        raise past_limit(text) from None
    # Fewer brackets than the limit cannot nest past it: most records need no walk.
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep(data):
        raise past_limit(text)
    return data


def too_deep(data: Any) -> bool:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, dict | list):
                if depth == MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?', re.ASCII)


def past_limit(text: str) -> PastLimit:
    """Where valid JSON ``text`` first nests too deep or holds a too large integer."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        value = token.group()
        if value in ("[", "{"):
            depth += 1
            message = f"nested more than {MAX_DEPTH} lists or mappings deep"
            if depth <= MAX_DEPTH:
                continue
        elif value in ("]", "}"):
            depth -= 1
            continue
        elif len(value.lstrip("-")) > MAX_INT_DIGITS and value.lstrip("-").isdigit():
            message = f"integer too large: more than {MAX_INT_DIGITS} digits"
        else:
            continue
        line, col = _line_col(text, token.start())
        return PastLimit(message, line - 1, col - 1)
    return PastLimit(f"nested more than {MAX_DEPTH} lists or mappings deep")


def parse(path: Path, display: str) -> Document:
    """Parse a suite file into records; syntax errors are a ``DocumentError`` with the position.

    A JSONL file is read as its records are iterated (``Document.records``), one line at a
    time, so that a file of any size is never held whole: a mistake in it is raised when the
    iteration reaches it (every broken line at the end, together).
    """
    if path.suffix.lower() == ".jsonl":
        return _parse_jsonl(path, display)
    text = read_text(path, display)
    if path.suffix.lower() == ".json":
        return _parse_json(path, display, text)
    from .yaml_documents import parse_yaml

    return parse_yaml(path, display, text)


def _parse_jsonl(path: Path, display: str) -> Document:
    """The file checked for what makes it no text at all (a UTF-16 or binary file) first, as
    ``read_text`` does; its lines are read when the records are iterated."""
    try:
        with path.open("rb") as file:
            _without_bom(file.read(3), display)
            file.seek(0)
            line, chunk = 1, file.read(CHUNK)
            while chunk:
                if b"\x00" in chunk:
                    raise DocumentError(_binary(display, line + chunk[: chunk.index(b"\x00")].count(b"\n")))
                line += chunk.count(b"\n")
                chunk = file.read(CHUNK)
    except OSError as exc:
        raise DocumentError(Problem(display, 1, 1, f"cannot read file: {exc.strerror}")) from None
    return Document(path, display, "jsonl", None, [], None, _jsonl_records(path, display))


CHUNK = 1 << 20


def _jsonl_records(path: Path, display: str) -> Iterator[Record]:
    r"""The records of a JSONL file, line by line. Lines are split at ``\n`` only (a ``\r``
    before it is JSON whitespace): not as ``str.splitlines``, which also splits at U+2028,
    U+0085, ``\f`` and more, characters a JSON string may hold as they are."""
    broken = []  # every broken line is reported, not just the first: lines are independent
    found = written = False
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            data = raw[:-1] if raw.endswith(b"\n") else raw
            line = _decode(_without_bom(data, display) if number == 1 else data, display, number)
            stripped = line.strip()
            written = written or bool(stripped)
            if not stripped or stripped.startswith("//"):
                continue
            try:
                value = load_json(line)
            except json.JSONDecodeError as exc:
                if stripped[0] in "[{" and exc.pos >= len(line.rstrip()):
                    # A value spread over lines (V2's pretty-printed suites): the file is read
                    # whole from here on, by the parser of such files (it reports every broken
                    # value, those above included); the records above were already given.
                    from .jsonl import parse_jsonl

                    for record in parse_jsonl(path, display, read_text(path, display)).cases:
                        if record.line >= number:
                            yield record
                    return
                broken.append(syntax_error(display, number, exc.colno, "JSON", exc.msg).problem)
                continue
            except PastLimit as exc:
                broken.append(Problem(display, number, exc.column + 1, str(exc)))
                continue
            found = True
            yield Record(value, number, len(line) - len(line.lstrip()) + 1, segment=stripped)
    if not written:
        raise DocumentError(_empty(display))
    if broken:
        raise DocumentError(*broken)
    if not found:
        raise DocumentError(Problem(display, 1, 1, "no cases: every line is blank or a // comment"))


def _parse_json(path: Path, display: str, text: str) -> Document:
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise syntax_error(display, exc.lineno, exc.colno, "JSON", exc.msg) from None
    except PastLimit as exc:
        raise DocumentError(Problem(display, exc.line + 1, exc.column + 1, str(exc))) from None
    top = Record(data, 1, 1, segment=text)
    records: list[Record] = []
    start = len(text) - len(text.lstrip())
    container, key = None, None
    if isinstance(data, list):
        container = start
    elif isinstance(data, dict) and isinstance(data.get("cases"), list):
        for k, _, s, _ in json_items(text, start):
            if k == "cases":
                container, key = s, "cases"
    if container is not None:
        items = data if key is None else data["cases"]
        for (_, _, s, e), item in zip(json_items(text, container), items, strict=True):
            line, col = _line_col(text, s)
            records.append(Record(item, line, col, segment=text[s:e]))
    return Document(path, display, "json", top, records, key)


def load_mapping(path: Path, display: str) -> tuple[Any, Record]:
    """Read a YAML or JSON file holding one mapping (an agent file, a config file)."""
    doc = parse(path, display)
    assert doc.top is not None
    return doc.top.data, doc.top
