"""Rules for one case that its schema cannot state, checked by the loader before anything runs.

- Nothing a case says is left unread: an ``expected`` that no assertion checks, ``assertions`` on
  a dynamic case (judged by its checkpoints only), ``max_turns`` on a standard case. Each would
  let a wrong answer pass unnoticed, so each is a mistake, reported at its field.
- Generated cases (``-i agents:``, ``scripts:``) stay data only: no assertion type or simulator
  that runs code, no project agent named with ``use:`` unless ``specrun.yaml`` lists it under
  ``generated.agents``, and the run's limits (timeout, pass-rate gate, turns) only tightened.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.data import DEFAULT_MAX_TURNS, DEFAULT_TIMEOUT, Assertion, format_duration, parse_duration
from .._core.durations import seconds_limit
from .._core.errors import UsageError
from .._core.kinds import AssertionType
from .._project.registry import Registry
from .problems import did_you_mean


@dataclass(frozen=True)
class GeneratedLimits:
    """What a run lets generated cases do: name with ``use:`` only ``agents``; tighten, never
    loosen, the run's timeout, pass-rate gate, ``max_turns`` and ``limits`` (specrun.yaml's)."""

    agents: frozenset[str] = frozenset()  # ids, without the agents: prefix
    timeout: float = DEFAULT_TIMEOUT
    min_pass_rate: float | None = None  # the run's gate; None: every run must pass
    max_turns: int = DEFAULT_MAX_TURNS
    case_limits: Mapping[str, float] = field(default_factory=dict)  # specrun.yaml's `limits`


def to_assertion(data: dict[str, Any]) -> Assertion:
    """An assertion mapping as an ``Assertion``: its envelope fields apart from its parameters."""
    params = dict(data)  # in C, not a comprehension: every case's assertions are made twice a run
    kind, negate, message = params.pop("type"), params.pop("negate", False), params.pop("message", None)
    return Assertion(kind, params, bool(negate), message)


def expected_assertion(expected: Any, registry: Registry) -> Assertion:
    """The assertion a case's bare ``expected`` means, from the installed type that declares
    ``expected_param`` (``equals``)."""
    cls = registry.declaring("assertion", "expected_param")
    if cls is None:
        raise UsageError("no installed assertion type checks a case's bare 'expected'")
    return Assertion(cls.name, {cls.expected_param: expected})


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


def assertion_problems(
    case: dict[str, Any], registry: Registry, base_dir: Path, generated: bool, config: Mapping[str, Any]
) -> Iterator[tuple[list[Any], str]]:
    """What each assertion type's ``problems`` finds in the case's assertions, each checked as it
    will run: a parameter it leaves out that ``specrun.yaml`` sets (``config_defaults``) given."""
    for path, data in assertions_of(case):
        cls = registry.get("assertion", data["type"])
        if (generated and not cls.data_only) or (cls.problems is AssertionType.problems and not cls.ref_params):
            continue  # refused by generated_problems, or the type checks nothing beyond its schema
        assertion = to_assertion(data)
        for param, key in cls.config_defaults.items():
            if param not in assertion.params and config.get(key) is not None:
                assertion.params[param] = config[key]
        for field_name, message in cls().problems(assertion, base_dir):
            yield [*path, field_name], message


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


def generated_problems(
    case: dict[str, Any], registry: Registry, limits: GeneratedLimits
) -> Iterator[tuple[list[Any], str]]:
    """Why a generated case is more than data, or loosens the run's limits: (field, message)."""
    who = f"generated case {case['id']!r}"
    named = [("assertion", path, a) for path, a in assertions_of(case)]
    if isinstance(case.get("simulator"), dict):
        named.append(("simulator", ["simulator"], case["simulator"]))
    for kind, path, config in named:
        cls = registry.simulator_for(config) if kind == "simulator" else registry.get(kind, config["type"])
        name = cls.name
        if not cls.data_only:
            yield path, f"{who} may not use a {name!r} {kind} (it runs code)"
            continue
        if cls.needs_model and "model" in config:  # the user's keys pay for it: the suite chooses models
            yield [*path, "model"], f"{who} may not choose a model ({config['model']!r}): the suite and specrun.yaml do"
        for param in cls.agent_params:
            agent = config.get(param)
            if isinstance(agent, str) and agent.removeprefix("agents:") not in limits.agents:
                listed = ", ".join(sorted(limits.agents)) or "none"
                yield (
                    [*path, param],
                    (
                        f"{who} may not call agent {agent!r}: generated cases may call only the agents"
                        f" listed under generated.agents in specrun.yaml (listed: {listed})"
                    ),
                )
    tighten = "generated cases may only tighten the run's limits"
    try:
        timeout = parse_duration(case["timeout"]) if "timeout" in case else 0.0
    except (ValueError, TypeError, AttributeError):
        timeout = 0.0  # reported as a bad duration already
    if timeout > limits.timeout:
        run = format_duration(limits.timeout)
        yield ["timeout"], f"{who} may not raise its timeout to {case['timeout']!r}, above the run's {run}: {tighten}"
    if case.get("max_turns", 0) > limits.max_turns:
        turns = f"{case['max_turns']}, above the run's {limits.max_turns}"
        yield ["max_turns"], f"{who} may not raise max_turns to {turns}: {tighten}"
    run_limits = seconds_limit(limits.case_limits)
    for key, value in seconds_limit(case.get("limits") or {}).items():
        run_limit = run_limits.get(key)
        if isinstance(value, int | float) and isinstance(run_limit, int | float) and value > run_limit:
            raised = f"limits.{key} to {value:g}, above the run's {run_limit:g}"
            yield ["limits", key], f"{who} may not raise {raised}: {tighten}"
    gate = 100.0 if limits.min_pass_rate is None else limits.min_pass_rate
    if case.get("min_pass_rate", gate) < gate:
        lowered = f"{case['min_pass_rate']:g}%, below the run's {gate:g}%"
        yield ["min_pass_rate"], f"{who} may not lower its pass-rate gate to {lowered}: {tighten}"


def checkpoint_problems(checkpoints: list[dict[str, Any]]) -> Iterator[tuple[list[Any], str]]:
    """Checkpoint ids unique, each ``after`` naming one of them, and no cycle among them."""
    if not checkpoints:
        return
    ids: dict[str, int] = {}
    for i, c in enumerate(checkpoints):
        if c["id"] in ids:
            yield ["checkpoints", i, "id"], f"duplicate checkpoint id {c['id']!r}"
        ids.setdefault(c["id"], i)
    # A suggestion is sought among a bounded number of ids, and at most SHOWN are listed, so
    # that a thousand unknown names cost a thousand short messages, not a million comparisons.
    hint = ids if len(ids) <= 100 else {}
    known = ", ".join(list(ids)[:SHOWN]) + (f", ... ({len(ids)} in all)" if len(ids) > SHOWN else "")
    for i, c in enumerate(checkpoints):
        for j, dep in enumerate(c.get("after") or []):
            if dep not in ids:
                yield (
                    ["checkpoints", i, "after", j],
                    f"checkpoint {c['id']!r} comes after unknown checkpoint {dep!r}{did_you_mean(dep, hint)}"
                    f" (known: {known})",
                )
    graph = {c["id"]: [d for d in c.get("after") or [] if d in ids] for c in checkpoints}
    for cycle in _cycles(graph):
        first = min(range(len(cycle)), key=lambda k: ids[cycle[k]])  # start where the file does
        cycle = cycle[first:] + cycle[:first]
        yield ["checkpoints", ids[cycle[0]], "after"], f"checkpoints form a cycle: {' → '.join([*cycle, cycle[0]])}"


SHOWN = 10


def _cycles(graph: dict[str, list[str]]) -> Iterator[list[str]]:
    """One cycle through each group of nodes that wait on each other; time linear in the graph.

    Nodes whose dependencies can all be met are peeled off first (Kahn's algorithm). Every
    node left waits on another one left, so a walk from it along such edges closes a cycle;
    each node is walked once.
    """
    waiting = {node: len(deps) for node, deps in graph.items()}
    dependents: dict[str, list[str]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            dependents[dep].append(node)
    ready = [node for node, count in waiting.items() if count == 0]
    while ready:
        for dependent in dependents[ready.pop()]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    walked: set[str] = set()
    for start in graph:
        if waiting[start] == 0 or start in walked:
            continue
        trail: dict[str, int] = {}  # node -> its place in this walk
        node = start
        while node not in walked:
            walked.add(node)
            trail[node] = len(trail)
            node = next(dep for dep in graph[node] if waiting[dep] > 0)
        if node in trail:
            yield list(trail)[trail[node] :]
