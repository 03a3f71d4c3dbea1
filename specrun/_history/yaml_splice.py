"""Replace one value in a YAML file's text and leave every other byte as it was.

ruamel.yaml's round-trip dump keeps comments and key order, but not everything: it re-spaces
flow mappings (``{a:  1}``), re-indents, and can move or drop comments next to a document
marker. So ``replace_value`` never dumps the file: it finds the exact span of the old value in
the text (the marks of ruamel's composer), renders the new value for that place, and splices
it in. In a block mapping the value goes after ``key:`` (multi-line text as a literal ``|``
block indented past the key, a comment after the old value kept on the key's line); inside a
flow mapping, or where the old value was flow-style, on one line. The new text is read back
and must equal the old document with that one value changed, or nothing is returned.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from typing import Any

HUGE_WIDTH = 1 << 30  # never fold a line


class SpliceError(ValueError):
    """The value cannot be replaced in place (not found, an alias, or no rendering reads back)."""


def replace_value(text: str, locate: Callable[[Any], list[str | int]], value: Any) -> str:
    """``text`` with one value replaced by ``value`` (JSON-like data), every byte outside it
    kept. ``locate`` is given the document's data and returns the value's path (mapping keys
    and list indexes, the last step a key); it may raise ``SpliceError``."""
    root, data = _read(text)
    path = locate(data)
    key, node, holder = _locate(root, path)
    start, end = _span(text, key, node)
    line_end = text.find("\n", end)
    if line_end < 0:  # the value is on the last line, which has no line break
        line_end, newline = len(text), "\r\n" if "\r\n" in text else "\n"
    elif line_end > end and text[line_end - 1] == "\r":
        line_end, newline = line_end - 1, "\r\n"
    else:
        newline = "\n"
    expected = copy.deepcopy(data)
    _set(expected, path, value)
    old_flow = bool(getattr(node, "flow_style", False)) and isinstance(value, dict | list)
    for one_line in [True] if holder.flow_style else [old_flow, True]:  # one line: the fallback that always reads back
        spliced = _splice(text, start, end, line_end, _render(value, one_line, key.start_mark.column), newline)
        try:
            if _read(spliced)[1] == expected:
                return spliced
        except SpliceError:
            pass
    raise SpliceError("no rendering of the new value reads back as that value in place")


def _read(text: str) -> tuple[Any, Any]:
    """The document's node tree (with marks) and its data, read within the loader's limits."""
    from ruamel.yaml.error import YAMLError

    from .._load.documents import PastLimit
    from .._load.yaml_documents import bounded_yaml, plain

    yaml = bounded_yaml()
    try:
        root = yaml.compose(text)
        return root, plain(yaml.constructor.construct_document(root))
    except (YAMLError, PastLimit) as exc:
        raise SpliceError(f"cannot read it as YAML: {exc}") from None


def _set(data: Any, path: list[str | int], value: Any) -> None:
    for step in path[:-1]:
        data = data[step]
    data[path[-1]] = value


def _locate(root: Any, path: list[str | int]) -> tuple[Any, Any, Any]:
    """The key node, the value node and the mapping node of the last step of ``path``."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    node, key, holder = root, None, None
    for step in path:
        if isinstance(step, int) and isinstance(node, SequenceNode) and 0 <= step < len(node.value):
            node = node.value[step]
            continue
        pairs = node.value if isinstance(node, MappingNode) else []
        found = [(k, v) for k, v in pairs if isinstance(k, ScalarNode) and k.value == step]
        if len(found) != 1:
            raise SpliceError(f"no {step!r} written out at that place (a merge key or an alias?)")
        holder, (key, node) = node, found[0]
    if key is None or holder is None:
        raise SpliceError("the path must end with a key")
    return key, node, holder


def _span(text: str, key: Any, node: Any) -> tuple[int, int]:
    """Where the old value is in ``text``, ``[start, end)``: from just after the key's colon
    when only spaces and line breaks came between, empty there when nothing was written
    (``value:``), and without the blank lines and comment lines that follow it."""
    start = node.start_mark.index
    if start < key.end_mark.index or node.anchor is not None:
        raise SpliceError("the value is an alias or has an anchor: write it out to have it rewritten")
    colon = text.index(":", key.end_mark.index)
    if _empty(node):
        return colon + 1, colon + 1
    if not text[colon + 1 : start].strip():
        start = colon + 1
    return start, _end(text, node)


def _empty(node: Any) -> bool:
    from ruamel.yaml.nodes import ScalarNode

    return isinstance(node, ScalarNode) and node.value == "" and node.style is None


def _end(text: str, node: Any) -> int:
    """Where ``node``'s text ends. A block collection's mark runs on to the next token, over
    blank lines and comments: it ends with its last value (a comment after that stays)."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    start, end = node.start_mark.index, node.end_mark.index
    block_scalar = isinstance(node, ScalarNode) and node.style in ("|", ">")
    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1][1] if isinstance(node, MappingNode) else node.value[-1]
        if not _empty(last):
            return _end(text, last)
    elif not block_scalar:
        return end  # a plain or quoted scalar, a flow collection: its mark is exact
    lines = text[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or (not block_scalar and lines[-1].lstrip().startswith("#"))):
        lines.pop()  # spacing and comments before what follows
    kept = "\n".join(lines)
    return start + len(kept.rstrip("\r") if block_scalar else kept.rstrip())


def _splice(text: str, start: int, end: int, line_end: int, rendered: str, newline: str) -> str:
    """``rendered`` in place of ``text[start:end]``; a multi-line rendering's first line goes
    on the key's line, followed by what came after the old value there (a comment)."""
    pad = " " if start and text[start - 1] == ":" and not rendered.startswith("\n") else ""
    if "\n" not in rendered:
        return text[:start] + pad + rendered + text[end:]
    first, more = rendered.split("\n", 1)
    rest = text[end:line_end]
    return text[:start] + pad + first + rest + newline + more.replace("\n", newline) + text[line_end:]


def _render(value: Any, one_line: bool, column: int) -> str:
    """``value`` as YAML for a value's place: on one line (flow style), or else as the text
    after ``key:`` in a block mapping whose keys are at ``column``."""
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    yaml = YAML(typ="rt", pure=True)
    yaml.width = HUGE_WIDTH
    yaml.brace_single_entry_mapping_in_flow_sequence = True
    out = io.StringIO()
    if one_line:
        yaml.default_flow_style = True
        yaml.dump([_quoted(value)], out)
        return out.getvalue().strip()[1:-1]  # the value inside the one-item list dumped
    if isinstance(value, str) and "\n" in value and all(c in "\n\t" or c.isprintable() for c in value):
        shown: Any = LiteralScalarString(value)
    elif isinstance(value, dict | list) and value:
        shown = _quoted(value)
    else:
        return _render(value, True, column)
    yaml.default_flow_style = False
    yaml.dump({"value": shown}, out)
    body = out.getvalue().removeprefix("value:").removesuffix("...\n").rstrip("\n").removeprefix(" ")
    lines = body.split("\n")
    return "\n".join([lines[0], *(" " * column + line if line else line for line in lines[1:])])


def _quoted(value: Any) -> Any:
    """``value`` with every string that is not all printable double-quoted: plain and single
    quotes would write a line break (or U+2028) as is, which YAML reads back differently."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, str):
        return value if value.isprintable() else DoubleQuotedScalarString(value)
    if isinstance(value, dict):
        return {_quoted(k): _quoted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_quoted(v) for v in value]
    return value
