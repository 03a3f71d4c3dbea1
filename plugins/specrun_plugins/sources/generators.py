"""Sources that make cases: a generator agent (``agents:``) or a Python function (``scripts:``).

Implements the ``agents`` source (``-i "agents:workers.test.gen?count=10&focus=edge-cases"``)
and the ``scripts`` source (``-i "scripts:gen.cases?count=3"``). Query parameters are passed on
(numbers and true/false as such). Generated cases are data only: the loader rejects hooks,
targets, code-running assertions and ``file://`` parts, naming the case. Cases without an
``id`` get ``gen-001``, ``gen-002``, ... A generator that fails or returns garbage is a usage
error (exit 2) saying what came back. Registered by the family's register_sources hook.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from specrun.plugin import (
    MISSING,
    Context,
    Message,
    Response,
    Source,
    SourceContext,
    SpecrunError,
    Suite,
    UsageError,
    load_callable,
)


def _value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"gen.cases?count=3&focus=edge"`` → ``("gen.cases", {"count": 3, "focus": "edge"})``."""
    ref, _, query = spec.partition("?")
    if not ref.strip():
        raise UsageError(f"nothing to generate from {spec!r}: expected an id before '?'")
    return ref.strip(), {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True)}


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return repr(" ".join(text.split())[:200])


def case_list(value: Any, what: str) -> list[Any]:
    """The cases in a generator's answer: a list, ``{cases: [...]}``, or JSON text holding one."""
    data = Response(value).json if isinstance(value, str) else value  # JSON fenced or in prose
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if data is MISSING or not isinstance(data, list | tuple):
        raise UsageError(
            f'{what} returned no cases (expected a JSON array of cases or {{"cases": [...]}}); got {_excerpt(value)}'
        )
    if not data:
        raise UsageError(f"{what} returned an empty list of cases")
    return list(data)


def with_ids(cases: list[Any]) -> list[Any]:
    """Cases with an ``id`` each: missing ones become ``gen-001``, ... (skipping ids in use)."""
    taken = {c["id"] for c in cases if isinstance(c, dict) and isinstance(c.get("id"), str)}
    n = 0
    out = []
    for case in cases:
        if isinstance(case, dict) and "id" not in case:
            n += 1
            while f"gen-{n:03d}" in taken:
                n += 1
            case = {"id": f"gen-{n:03d}", **case}
        out.append(case)
    return out


def generated_suite(cases: list[Any], origin: str, context: SourceContext) -> Suite:
    """Validate generated case data (data only) as one suite marked ``generated``."""
    suite = context.loader.load_data(with_ids(cases), origin=origin, base_dir=context.root, generated=True)
    suite.generated = True
    return suite


class AgentsSource(Source):
    name = "agents"
    description = "A generator agent writes the cases: agents:<id>?count=10&focus=edge-cases."

    async def load(self, spec: str, context: SourceContext) -> list[Suite]:
        agent_id, params = split_spec(spec)
        agent_id = agent_id.removeprefix("agents:")
        if context.services is None:
            raise UsageError(f"generator agent {agent_id!r} cannot be called here (no project agents)")
        request = {"test_mode": "generator", "target_agent": context.target_agent, **params}
        ctx = Context(case_id=f"generator:{agent_id}", metadata=dict(request), options={"metadata": dict(request)})
        what = f"generator agent {agent_id!r}"
        try:
            response = await context.services.call_agent(
                agent_id, [Message("user", json.dumps(request, ensure_ascii=False))], ctx
            )
        except UsageError:
            raise
        except Exception as exc:
            detail = str(exc) if isinstance(exc, SpecrunError) else f"{type(exc).__name__}: {exc}"
            raise UsageError(f"{what} failed: {detail}") from exc
        value = response.content if isinstance(response.content, list | dict) else response.text
        return [generated_suite(case_list(value, what), f"agents:{spec}", context)]


class ScriptsSource(Source):
    name = "scripts"
    description = "A Python function returns the cases: scripts:module.func?count=3 (params as kwargs)."

    async def load(self, spec: str, context: SourceContext) -> list[Suite]:
        ref, params = split_spec(spec)
        func = load_callable(ref, [Path.cwd(), context.root])
        what = f"script {ref!r}"
        try:
            value = func(**params)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise UsageError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        return [generated_suite(case_list(value, what), f"scripts:{spec}", context)]
