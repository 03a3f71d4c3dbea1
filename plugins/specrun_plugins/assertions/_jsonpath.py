"""JSON paths for assertions: ``$.a.b[0]``, ``a.b``, ``$['a key']``, or any JMESPath expression.

A simple path (keys and indexes only) is walked directly, so a missing key is told apart from
an explicit ``null``. Anything else (``items[*].name``, ``length(items)``, filters) is compiled
with JMESPath after dropping the leading ``$``; JMESPath cannot tell a missing value from
``null``, so a null result counts as not found there.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specrun.plugin import MISSING

if TYPE_CHECKING:
    from jmespath.exceptions import JMESPathError

_KEY = r"[^\W\d][\w-]*|\d+"
_DOTTED = re.compile(rf"\.({_KEY})")
_BARE = re.compile(rf"({_KEY})")
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_QUOTED = re.compile(r"""\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]""")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Step = str | int


class InvalidPath(ValueError):
    """A path that is neither a simple path nor a valid JMESPath expression."""


@dataclass(frozen=True)
class JsonPath:
    """A compiled path: ``find(document)`` returns the value there, or ``MISSING``."""

    source: str
    expression: str
    steps: tuple[Step, ...] | None = None
    compiled: Any = None

    def find(self, document: Any) -> Any:
        if self.steps is not None:
            return _walk(document, self.steps)
        found = self.compiled.search(document)
        return MISSING if found is None else found


def simple_steps(path: str) -> tuple[Step, ...] | None:
    """The keys (str) and indexes (int) of a simple path, or None when it is not one."""
    text = path.strip()
    pos, steps = 0, []
    if text.startswith("$"):
        pos = 1
    elif (bare := _BARE.match(text)) is not None:
        steps.append(bare.group(1))
        pos = bare.end()
    while pos < len(text):
        if m := _DOTTED.match(text, pos):
            steps.append(m.group(1))
        elif m := _INDEX.match(text, pos):
            steps.append(int(m.group(1)))
        elif m := _QUOTED.match(text, pos):
            raw = m.group(1) if m.group(1) is not None else m.group(2)
            steps.append(re.sub(r"\\(.)", r"\1", raw))
        else:
            return None
        pos = m.end()
    return tuple(steps) if text else None


def to_jmespath(path: str) -> str:
    """The JMESPath expression for ``path``: ``$.a.b[0]`` → ``a.b[0]``, ``$`` → ``@``."""
    steps = simple_steps(path)
    if steps is None:
        text = path.strip()
        if text.startswith(("$.", "$[")):
            return text[2:] if text.startswith("$.") else text[1:]
        return text
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            key = step if _IDENTIFIER.fullmatch(step) else json.dumps(step)
            out += f".{key}" if out else key
    return out or "@"


@functools.lru_cache(maxsize=1024)
def compile_path(path: str) -> JsonPath:
    """The compiled ``path``; raises ``InvalidPath`` with the parser's reason."""
    steps = simple_steps(path)
    expression = to_jmespath(path)
    if steps is not None:
        return JsonPath(path, expression, steps)
    import jmespath  # here: a run whose paths are all simple never imports it
    from jmespath.exceptions import JMESPathError

    try:
        return JsonPath(path, expression, compiled=jmespath.compile(expression))
    except JMESPathError as exc:
        reason = _reason(exc)
        if ".." in path:
            reason = "recursive descent (..) is not supported; write it in JMESPath"
        raise InvalidPath(f"invalid path {path!r} (as JMESPath {expression!r}): {reason}") from None


def _reason(exc: JMESPathError) -> str:
    msg, column = getattr(exc, "msg", None), getattr(exc, "lex_position", None)
    if not msg or column is None:
        return str(exc).splitlines()[0]
    if getattr(exc, "token_type", None) == "NUMBER":
        return f"{msg} at column {column} (JMESPath writes literals in backticks: `1`)"
    return f"{msg} at column {column}"


def _walk(document: Any, steps: tuple[Step, ...]) -> Any:
    for step in steps:
        if isinstance(step, int):
            if not isinstance(document, list) or not -len(document) <= step < len(document):
                return MISSING
            document = document[step]
        elif isinstance(document, dict) and step in document:
            document = document[step]
        elif isinstance(document, list) and step.isdigit() and int(step) < len(document):
            document = document[int(step)]  # a.0: the dotted index some users write
        else:
            return MISSING
    return document
