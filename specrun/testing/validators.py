"""A validator agent judging a response from Python: V2's ``t.assert.Agent(response, validator, options)``.

The judgement is the ``agent`` assertion's (the type that declares ``validator_param``), run
outside a suite: the validator is an agent of the specrun project around the working
directory, called with ``options.metadata`` (``criteria``, ``conversation``, ...) and
``test_mode: validator``, and answers a verdict with a score. Without a validator the built-in
one (the configured judge model, see :mod:`specrun.testing.config`) judges
``options.metadata.criteria``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core.data import DEFAULT_TIMEOUT, Assertion, Case, Context, Location, Message, Response
from .._core.errors import EvaluationError, UsageError
from .config import TestConfig, load_config

_CASE_ID = "specrun.testing"


def _conversation(metadata: Mapping[str, Any], user_input: str | None) -> list[Message]:
    """The messages the response answered: ``metadata.conversation``, else ``user_input``."""
    history = metadata.get("conversation")
    if isinstance(history, list) and history:
        from .._load.loader import to_messages

        try:
            return to_messages(history, Path.cwd())
        except Exception as exc:
            raise UsageError(f"options.metadata.conversation: {exc}") from None
    return [Message("user", user_input)] if user_input else []


async def judge_with_agent(
    actual: Any,
    validator: str | None,
    options: Mapping[str, Any] | None = None,
    *,
    threshold: float | None = None,
    user_input: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    config: TestConfig | None = None,
) -> tuple[bool, float, str]:
    """Have ``validator`` judge ``actual``; ``AssertionError`` when it rejects it, ``EvaluationError``
    when no verdict could be reached. Returns ``(passed, score, reason)``."""
    __tracebackhide__ = True
    from .._core.kinds import Check
    from .._core.services import Services
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project
    from .._run.verdicts import evaluate_all
    from .clients import judge_client

    registry = default_plugins().registry
    kind = registry.declaring("assertion", "validator_param")
    if kind is None:
        raise UsageError("no installed assertion type runs validator agents (declares validator_param)")
    options = dict(options or {})
    params: dict[str, Any] = {"options": options}
    if validator:
        params[kind.validator_param] = "agents:" + validator.removeprefix("agents:")
    if threshold is not None:
        params["threshold"] = float(threshold)
    assertion = Assertion(kind.name, params)
    problems = list(kind().problems(assertion, Path.cwd()))
    if problems:
        raise UsageError("; ".join(f"{name}: {message}" for name, message in problems))
    config = config or load_config()
    model = config.llm.litellm_model
    if not validator and not model:
        raise EvaluationError("the built-in validator needs a judge model: set llm.model in test-config.yaml")
    messages = _conversation(options.get("metadata") or {}, user_input)
    project = Project.discover(Path.cwd(), registry)
    if validator:
        project.agent(validator.removeprefix("agents:"))  # an unknown agent is a UsageError naming the known ones
    context = Context(case_id=_CASE_ID, options=options)
    case = Case(_CASE_ID, Location("<python>"), input=messages)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(project.aclose)
        client = None
        if model:
            client = await stack.enter_async_context(judge_client(model, config.llm.litellm_params, config.llm.retries))
        services = Services(models=client, agent_caller=project.call_agent, config=project.config)
        check = Check(Response.of(actual), case, context, services, messages)
        (result,) = await evaluate_all([assertion], check, registry, timeout)
    who = f"validator agent {validator!r}" if validator else "the built-in validator"
    if result.status == "error":
        raise EvaluationError(f"{who} reached no verdict: {result.message}")
    score = float(result.score if result.score is not None else (1.0 if result.passed else 0.0))
    if not result.passed:
        received = Response.of(actual).text
        raise AssertionError(f"{who} rejected the response: {result.message}\n  received: {received!r}")
    return True, score, result.message
