"""Semantic similarity from Python: the ``similar`` assertion on one answer, outside a suite.

``assert_similar(actual, expected, threshold=0.5)`` embeds with the local WordLlama model (the
``specrun[similar]`` extra), or with ``model``, else the configured ``llm.embedding_model``
(Agent Kernel's setting, ``SPECRUN_TEST__LLM__EMBEDDING_MODEL``), through litellm with the
judge's ``llm.api_base`` and project ``model_params``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .._core.data import DEFAULT_TIMEOUT, Assertion, Case, Context, Location, Response
from .._core.errors import EvaluationError, UsageError
from .config import TestConfig, load_config


async def aassert_similar(
    actual: Any,
    expected: str | list[str],
    threshold: float,
    *,
    model: str | None = None,
    config: TestConfig | None = None,
) -> tuple[bool, float, str]:
    """:func:`assert_similar` for async code."""
    __tracebackhide__ = True
    from .._core.kinds import Check
    from .._core.services import Services
    from .._project.plugin_manager import default_plugins
    from .._run.verdicts import evaluate_all
    from .clients import judge_client

    config = config or load_config()
    model = model or config.llm.embedding_model
    registry = default_plugins().registry
    kind = registry.declaring("assertion", "meaning_param")
    if kind is None:
        raise UsageError("no installed assertion type compares meaning (declares meaning_param)")
    params: dict[str, Any] = {kind.meaning_param: expected, "threshold": threshold}
    if model:
        params["model"] = model
    assertion = Assertion(kind.name, params)
    schema_problems = [f"{k}: {v}" for k, v in kind().problems(assertion, Path.cwd())]
    texts = expected if isinstance(expected, list) else [expected]
    if not texts or not all(isinstance(t, str) and t for t in texts):
        schema_problems.append(f"expected: {expected!r} is not a text or a list of texts")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        schema_problems.append(f"threshold: {threshold!r} is not a number from 0 to 1")
    if schema_problems:
        raise UsageError("; ".join(schema_problems))
    case = Case("specrun.testing", Location("<python>"))
    async with contextlib.AsyncExitStack() as stack:
        client = None
        if model:
            llm = config.llm
            client = await stack.enter_async_context(judge_client(model, llm.litellm_params, llm.retries))
        check = Check(Response.of(actual), case, Context(case_id=case.id), Services(models=client), [])
        (result,) = await evaluate_all([assertion], check, registry, DEFAULT_TIMEOUT)
    if result.status == "error":
        raise EvaluationError(f"similar reached no verdict: {result.message}")
    if not result.passed:
        raise AssertionError(result.message)
    return True, float(result.score or 0.0), result.message


def assert_similar(
    actual: Any, expected: str | list[str], threshold: float, *, model: str | None = None
) -> tuple[bool, float, str]:
    """Assert that ``actual`` means what one of ``expected`` says: embedding cosine >= ``threshold``.

    ``AssertionError`` (with the score and the nearest text) when it does not, ``EvaluationError``
    when no verdict could be reached (a provider that fails); returns ``(passed, score, message)``.
    Synchronous; ``await aassert_similar(...)`` in async code.
    """
    __tracebackhide__ = True
    from .api import run_sync

    return run_sync(lambda: aassert_similar(actual, expected, threshold, model=model))
