"""Mocked tools for the agent under test (a case's or suite's ``tools:``), served over MCP.

This room owns: the answers a case's mocks give (here: which declaration answers a call), the
run's loopback MCP server that serves every case's mocks, each under a path of its own
(``server``, the ``mcp`` SDK's server: the ``mcp`` extra), and the session that lends a case its
server's URL and adds the calls the agent made to the case's evidence (``session``). Nothing here
is imported unless a case declares ``tools:``. Users' reference: docs/suite-format.md, "Mocked tools".
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from typing import Any

INSTALL = "pip install 'specrun[mcp]'"

NOT_MOCKED = object()
"""What ``answer`` gives for a call that no declaration answers."""


def missing_sdk() -> str | None:
    """Why mocked tools cannot be served here (the ``mcp`` extra is not installed), or None.
    Found without importing the SDK, which takes ~0.4 s."""
    try:
        found = importlib.util.find_spec("mcp")
    except (ImportError, ValueError):
        found = None
    return None if found is not None else f"mocked tools are served by the MCP SDK, which is not installed: {INSTALL}"


def subset(wanted: Any, given: Any) -> bool:
    """Whether ``given`` holds ``wanted``: every key of a mapping (recursively), else equality."""
    if isinstance(wanted, dict):
        return isinstance(given, dict) and all(k in given and subset(v, given[k]) for k, v in wanted.items())
    return bool(wanted == given) and isinstance(wanted, bool) == isinstance(given, bool)  # true is not 1


def answer(tool: dict[str, Any], arguments: dict[str, Any]) -> Any:
    """The entry of a tool's declaration that answers ``arguments`` (a mapping with ``returns``
    or ``error``): the tool itself, or its first ``when`` whose ``arguments`` are a subset of
    them; ``NOT_MOCKED`` when none does."""
    if "when" not in tool:
        return tool
    for branch in tool["when"]:
        if subset(branch.get("arguments") or {}, arguments):
            return branch
    return NOT_MOCKED


def _not_json(value: Any, path: list[Any]) -> tuple[list[Any], str] | None:
    """Where ``value`` (a ``returns``, plain data) holds a number JSON cannot carry to the agent:
    YAML reads ``.nan`` and ``.inf`` as numbers, which the server could only answer with a crash."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, f"{value!r} is not a JSON number: a tool cannot return it (quote it to return the text)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((found for key, item in items if (found := _not_json(item, [*path, key]))), None)


def problems(tools: list[dict[str, Any]]) -> Iterator[tuple[list[Any], str]]:
    """What the schema of ``tools:`` cannot say: each tool and each ``when`` answers one way
    (``returns``, ``error``; a tool may have ``when`` instead) with a value JSON can carry, a
    name is declared once, and an ``input_schema`` is a JSON Schema. Paths are from the
    ``tools`` field."""
    import jsonschema_rs

    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool["name"] in seen:
            yield [i, "name"], f"tool {tool['name']!r} is declared twice in this tools: list"
        seen.add(tool["name"])
        given = [key for key in ("returns", "error", "when") if key in tool]
        if len(given) != 1:
            what = " and ".join(given) if given else "none of them"
            yield [i], f"tool {tool['name']!r} needs one of returns, error or when (it has {what})"
        if "returns" in tool and (found := _not_json(tool["returns"], [i, "returns"])):
            yield found
        for j, branch in enumerate(tool.get("when") or []):
            if ("returns" in branch) == ("error" in branch):
                yield [i, "when", j], "a when: entry needs returns or error, one of them"
            if "returns" in branch and (found := _not_json(branch["returns"], [i, "when", j, "returns"])):
                yield found
        if "input_schema" in tool:
            try:
                jsonschema_rs.validator_for(tool["input_schema"])
            except jsonschema_rs.ValidationError as exc:
                yield [i, "input_schema"], f"not a valid JSON Schema: {str(exc).splitlines()[0]}"


def merged(defaults: list[dict[str, Any]], own: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A case's tools over its suite defaults': one of the same name replaces the default."""
    names = {tool.get("name") for tool in own}
    return [tool for tool in defaults if tool.get("name") not in names] + own
