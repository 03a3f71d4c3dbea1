"""Tool-call expectations on the agent's last reply (``Test.expect_tool_called`` and
``Test.expect_tool_not_called``).

They are the suite assertions ``tool_called`` and ``tool_not_called``, run by the installed
assertion types on the reply's ``Response``, so a name matches exactly and ``arguments`` is a
deep subset match, as in a suite. A reply that reports no tool calls (every reply of a CLI
agent, a function's bare string) leaves what it called unknown, so an expectation on it is an
``EvaluationError``, never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._core.data import Assertion, Case, Context, Location, Response
from .._core.errors import EvaluationError

_CASE_ID = "specrun.testing"


def tool_params(name: str | Sequence[str], arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The assertion's parameters; ``TypeError`` for a name or arguments of the wrong type."""
    names = [name] if isinstance(name, str) else list(name) if isinstance(name, list | tuple) else []
    if not names or not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"name must be a tool name or a list of tool names, not {name!r}")
    params: dict[str, Any] = {"name": name if isinstance(name, str) else names}
    if arguments is not None:
        if not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping of the arguments expected, not {type(arguments).__name__}")
        params["arguments"] = dict(arguments)
    return params


async def expect_tools(response: Response | None, kind: str, params: dict[str, Any], cli: bool) -> None:
    """Run the ``kind`` assertion (``tool_called`` or ``tool_not_called``) on ``response``:
    ``AssertionError`` with its message when it fails, ``EvaluationError`` when it cannot decide."""
    __tracebackhide__ = True
    from .._core.kinds import Check
    from .._project.plugin_manager import default_plugins
    from .._run.verdicts import evaluate

    if response is None:
        raise AssertionError("no reply to check: call send() first")
    if cli:
        raise EvaluationError(
            f"{kind} cannot be judged: a CLI agent reports no tool calls (test it with a target that"
            " returns them: python:module:function, http with tool_calls, a litellm model)"
        )
    check = Check(response, Case(_CASE_ID, Location("<python>")), Context(case_id=_CASE_ID))
    result = await evaluate(Assertion(kind, params), check, default_plugins().registry)
    if result.status == "error":
        raise EvaluationError(f"{kind} reached no verdict: {result.message}")
    if result.status != "passed":
        raise AssertionError(f"{kind} failed: {result.message}\n  reply: {response.text[:500]!r}")
