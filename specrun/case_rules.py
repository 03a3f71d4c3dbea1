"""Rules for one case that its schema cannot state, checked by the loader before anything runs.

Nothing a case says is left unread: an ``expected`` that no assertion checks, ``assertions`` on
a dynamic case (judged by its checkpoints only), ``max_turns`` on a standard case. Each would
let a wrong answer pass unnoticed, so each is a mistake, reported at its field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .model import Assertion
from .registry import Registry


def to_assertion(data: dict[str, Any]) -> Assertion:
    """An assertion mapping as an ``Assertion``: its envelope fields apart from its parameters."""
    params = {k: v for k, v in data.items() if k not in ("type", "negate", "message")}
    return Assertion(data["type"], params, bool(data.get("negate", False)), data.get("message"))


def as_list(assertions: Any) -> list[Any]:
    """``assertions`` (one mapping or a list of them) as a list."""
    return [assertions] if isinstance(assertions, dict) else list(assertions)


def assertions_of(case: dict[str, Any]) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Every assertion mapping of a case, its checkpoints' included, with its field path."""
    for key in ("assertions", "assert"):
        value = case.get(key)
        if isinstance(value, dict):
            yield [key], value
        elif isinstance(value, list):
            for i, a in enumerate(value):
                yield [key, i], a
    for i, c in enumerate(case.get("checkpoints") or []):
        yield ["checkpoints", i, "assertion"], c["assertion"]


def unread_fields(
    case: dict[str, Any], defaults: dict[str, Any], merged: dict[str, Any], registry: Registry
) -> Iterator[tuple[bool, list[Any], str]]:
    """Fields of ``case`` (``merged`` over ``defaults``) that nothing would read, as (inherited from
    the defaults?, field, message)."""
    name = repr(case["id"])
    dynamic = "simulator" in merged or "checkpoints" in merged
    if dynamic:
        for key in ("assertions", "assert"):
            if case.get(key) or defaults.get(key):
                own = bool(case.get(key))
                fix = "make them checkpoints" if own else "keep dynamic cases in a file of their own"
                yield (
                    not own,
                    [key],
                    f"{key!r} would never be checked: case {name} is dynamic (it has a simulator or"
                    f" checkpoints), and a dynamic case is judged by its checkpoints only; {fix}",
                )
    elif "max_turns" in merged:
        why = f"case {name} is not dynamic (it has no simulator or checkpoints)"
        yield "max_turns" not in case, ["max_turns"], f"'max_turns' would never be read: {why}"
    if "expected" not in merged:
        return
    if dynamic:
        checks = [c["assertion"] for c in merged.get("checkpoints") or []]
        why = "is dynamic, and none of its checkpoints reads it (as match and script do)"
        fix = "add a checkpoint with {type: match}"
    elif case.get("assertions", case.get("assert")):
        checks = as_list(merged["assertions"])
        why = "has assertions of its own, and none of them reads it (as match and script do)"
        fix = "add {type: equals, value: ...} or {type: match}"
    else:
        return  # `expected` alone is the case's equals check
    if not any(registry.get("assertion", a["type"]).reads_expected(to_assertion(a)) for a in checks):
        message = f"'expected' would never be checked: case {name} {why}; remove it, or {fix}"
        yield "expected" not in case, ["expected"], message
