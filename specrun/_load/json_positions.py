"""Where a path inside a JSON text starts, found with the standard library's decoder.

A mistake in a JSON or JSONL record is reported at the place in the record it is about. That
place used to be found by reading the record again with ruamel.yaml (JSON is YAML), which
records where every node is: exact, but ruamel.yaml is pure Python and takes seconds on a
record of a few hundred kB (one case with thousands of checkpoints). ``JsonPositions`` finds
the same places by scanning only the containers the path goes through, each once, skipping
their members with the C decoder.

The positions are ruamel.yaml's, which the reports have always given: a key's or a value's
first character, a list item's first character, and the deepest point the path reaches. A
text that ruamel.yaml does not read as the same JSON is refused (``reads_as_yaml`` is False)
and the caller reads it with ruamel.yaml as before, so that every position stays as it was:
characters YAML does not accept, a key YAML cannot take as one (over 1024 characters to its
colon, or its colon on a later line), a duplicate key, a surrogate escape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")

# What ruamel.yaml's reader refuses (its NON_PRINTABLE); U+0085, U+2028 and U+2029, which the
# caller makes spaces for YAML (not a line break there), so a key holding one is another key;
# U+FEFF, which YAML does not count in a column; and \u escapes of surrogates, which JSON
# pairs into one character and YAML does not.
_NOT_YAML = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]|\\\\u[dD][89abAB]"
)
_KEY_LINE_BREAK = re.compile(r'"[ \t\r]*\n[ \t\n\r]*:')  # a key, then its colon on a later line
# Matched from outside strings, each string is matched whole (the second branch when it is not
# a key): the first group is each key from its quote up to its colon, '' for any other string.
_KEYS = re.compile(r'("(?:[^"\\]|\\.)*"[ \t\n\r]*):|"(?:[^"\\]|\\.)*"')
YAML_KEY_SPAN = 1024  # ruamel.yaml's longest simple key, from its first character to its colon


def reads_as_yaml(text: str) -> bool:
    """Whether ruamel.yaml reads the valid JSON ``text`` as the same data with every node at
    the same place (when not, it fails or finds other keys)."""
    if _NOT_YAML.search(text) or _KEY_LINE_BREAK.search(text):
        return False
    around = text[: len(text) - len(text.lstrip())] + text[len(text.rstrip()) :]
    if "\t" in around:  # YAML takes tabs between the tokens of a list or mapping only
        return False
    if len(max(_KEYS.findall(text), key=len, default="")) > YAML_KEY_SPAN:
        return False
    try:
        json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey:
        return False
    return True


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _DuplicateKey
    return found


class JsonPositions:
    """The places of paths inside one valid JSON text that ``reads_as_yaml``."""

    def __init__(self, text: str):
        self.text = text
        self._members: dict[int, dict[str, tuple[int, int]] | list[int]] = {}  # by container start

    def find(self, path: list[Any], at_key: bool = False) -> tuple[int, int] | None:
        """0-based (line, column) of ``path`` (of its last key with ``at_key``), or of the
        deepest point of it that exists; None when the text is not a list or a mapping."""
        text = self.text
        node = _skip(text, 0)
        if text[node : node + 1] not in ("{", "["):
            return None
        offset = node
        for i, step in enumerate(path):
            members = self._container(node)
            if isinstance(members, dict):
                if step not in members:
                    break
                key, node = members[step]
                offset = key if at_key and i == len(path) - 1 else node
            elif members is not None and isinstance(step, int) and 0 <= step < len(members):
                offset = node = members[step]
            else:
                break
        line = text.count("\n", 0, offset)
        return line, offset - (text.rfind("\n", 0, offset) + 1)

    def _container(self, start: int) -> dict[str, tuple[int, int]] | list[int] | None:
        """Where the members of the list or mapping at ``start`` are; None for any other value."""
        if self.text[start] not in "{[":
            return None
        if start not in self._members:
            self._members[start] = _scan(self.text, start)
        return self._members[start]


def _scan(text: str, start: int) -> dict[str, tuple[int, int]] | list[int]:
    """(key start, value start) by key, or item starts, of the container at ``start``."""
    if text[start] == "{":
        return {key: (at, value) for key, at, value, _ in json_items(text, start)}
    return [value for _, _, value, _ in json_items(text, start)]


def json_items(text: str, start: int) -> Iterator[tuple[Any, int, int, int]]:
    """(key or index, key or item start, value start, value end) for each member of the valid
    JSON list or mapping at ``start``."""
    mapping = text[start] == "{"
    i = _skip(text, start + 1)
    index = 0
    while text[i] not in "]}":
        key: Any = index
        value = i
        if mapping:
            key, after = _DECODER.raw_decode(text, i)
            value = _skip(text, _skip(text, after) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, value)
        yield key, i, value, end
        index += 1
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)


def _skip(text: str, i: int) -> int:
    """The first index from ``i`` that is not JSON whitespace."""
    blank = _WHITESPACE.match(text, i)
    return blank.end() if blank else i
