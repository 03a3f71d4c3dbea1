"""YAML documents: ruamel.yaml's round-trip reader, bounded (``PastLimit`` as soon as a
document passes a limit of :mod:`specrun._load.documents`), and its objects as plain JSON data
(``plain``; a value JSON has no form for is ``NotData``, at its place)."""

from __future__ import annotations

import datetime
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path
from typing import Any

from .._core.errors import Problem
from .documents import (
    ALIAS_FACTOR,
    MAX_ALIAS_VALUES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    Document,
    DocumentError,
    PastLimit,
    Record,
    _walk,
    syntax_error,
)


def bounded_yaml() -> Any:
    """A round-trip ruamel ``YAML`` that refuses duplicate keys and stops past the limits."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    yaml.Scanner, yaml.Composer = _bounded(YAML)
    return yaml


@cache
def _bounded(loaded: type) -> tuple[Any, Any]:
    """ruamel.yaml's round-trip scanner and its composer, stopped (``PastLimit``) as soon as
    the document passes a limit.

    The scanner's work per token grows with the flow nesting (``[[[``), so it stops first.
    The composer sees each alias before anything expands it: the values and depth of what it
    names, measured once per node, are added up instead of being copied. Made once per ruamel
    ``loaded`` (its ``YAML`` class): a ruamel imported afresh (pytester forgets modules between
    its runs) gets classes built on its own, never on the first one's.
    """
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
    from ruamel.yaml.nodes import MappingNode, SequenceNode
    from ruamel.yaml.scanner import RoundTripScanner

    class BoundedScanner(RoundTripScanner):
        def fetch_flow_collection_start(self, *args: Any, **kwargs: Any) -> None:
            if len(self.flow_context) >= MAX_DEPTH:
                mark = self.reader.get_mark()
                raise PastLimit(f"nested more than {MAX_DEPTH} lists or mappings deep", mark.line, mark.column)
            super().fetch_flow_collection_start(*args, **kwargs)

    class BoundedComposer(Composer):
        def __init__(self, loader: Any = None) -> None:
            super().__init__(loader)
            self.measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth)
            self.aliased = 0  # values that aliases stand for, in all
            self.written = 0  # values written out (not through an alias)
            self.level = 0  # lists and mappings open around the current node

        def stop(self, message: str, event: Any) -> PastLimit:
            return PastLimit(message, event.start_mark.line, event.start_mark.column)

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.parser.peek_event()
            if isinstance(event, AliasEvent):
                target = self.anchors.get(event.anchor)
                if target is not None:  # else ruamel reports the undefined alias
                    if id(target) not in self.measured:
                        raise self.stop(f"alias *{event.anchor} is inside the value it names (a cycle)", event)
                    values, depth = self.measured[id(target)]
                    self.aliased += values
                    limit = max(MAX_ALIAS_VALUES, ALIAS_FACTOR * self.written)
                    if self.aliased > limit:
                        raise self.stop(f"aliases expand to more than {limit:,} values", event)
                    if self.level + depth > MAX_DEPTH:
                        raise self.stop(f"nested more than {MAX_DEPTH} lists or mappings deep", event)
                return super().compose_node(parent, index)
            opens = isinstance(event, SequenceStartEvent | MappingStartEvent)
            self.level += opens
            if self.level > MAX_DEPTH:
                raise self.stop(f"nested more than {MAX_DEPTH} lists or mappings deep", event)
            node = super().compose_node(parent, index)
            self.level -= opens
            self.written += 1
            if isinstance(node, SequenceNode | MappingNode):
                children = node.value if isinstance(node, SequenceNode) else [n for pair in node.value for n in pair]
                measures = [self.measured[id(child)] for child in children]
                values = 1 + sum(m[0] for m in measures)
                self.measured[id(node)] = (values, 1 + max((m[1] for m in measures), default=0))
            else:
                if node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
                    raise self.stop(f"integer too large: more than {MAX_INT_DIGITS} digits", event)
                self.measured[id(node)] = (1, 0)
            return node

    return BoundedScanner, BoundedComposer


class NotData(Exception):
    """A YAML value JSON has no form for (``!!set``, ``!!binary``), at ``path`` in its document."""

    def __init__(self, kind: str, path: list[Any]):
        super().__init__(kind)
        self.kind, self.path = kind, path


def plain(node: Any, path: list[Any] | None = None) -> Any:
    """ruamel.yaml's round-trip objects as plain JSON-like data; ``NotData`` for a set or bytes,
    which would reach an agent or a judge as Python's repr of them."""
    path = path if path is not None else []
    if isinstance(node, dict):
        return {str(k): plain(v, [*path, k]) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v, [*path, i]) for i, v in enumerate(node)]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, datetime.date | datetime.datetime):
        return node.isoformat()
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bytes | bytearray):
        raise NotData("a !!binary value (bytes)", path)
    if isinstance(node, AbstractSet):
        raise NotData("a !!set", path)
    return str(node)


def parse_yaml(path: Path, display: str, text: str) -> Document:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        node = bounded_yaml().load(text)
    except MarkedYAMLError as exc:
        lines = text.splitlines()
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot parse"
        if exc.context and exc.context_mark and (mark is None or mark.line >= len(lines)):
            # "got <stream end>" points past the last line; where the unclosed thing began helps
            mark, problem = exc.context_mark, f"{problem} ({exc.context} that starts here)"
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        if line <= len(lines) and "\t" in lines[line - 1][:col] and "\\t" in problem:
            problem += " (YAML indentation must use spaces, not tabs)"
        raise syntax_error(display, line, col, "YAML", problem) from None
    except YAMLError as exc:
        raise syntax_error(display, 1, 1, "YAML", str(exc)) from None
    except PastLimit as exc:
        raise DocumentError(Problem(display, exc.line + 1, exc.column + 1, str(exc))) from None
    try:
        data = plain(node)
    except NotData as exc:
        from .problems import pointer

        line, col = _walk(node, exc.path, False) or (0, 0)
        message = f"{exc.kind} is not JSON data: write a list or a string"
        raise DocumentError(Problem(display, line + 1, col + 1, message, pointer(exc.path))) from None
    top = Record(data, 1, 1, node=node)
    key, seq = None, None
    if isinstance(data, list):
        seq = node
    elif isinstance(data, dict) and isinstance(data.get("cases"), list):
        key, seq = "cases", node["cases"]
    records = []
    if seq is not None:
        items = data if key is None else data["cases"]
        for i, item in enumerate(items):
            line, col = seq.lc.item(i)
            records.append(Record(item, line + 1, col + 1, node=seq[i]))
    return Document(path, display, "yaml", top, records, key)


