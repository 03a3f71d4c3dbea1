"""The ``state`` assertion: how the agent's protocol said the turn ended.

A target that speaks a protocol with outcomes reports one as the response's ``state``: an MCP
tool result is ``ok`` or ``error`` (``isError``), an A2A task ``completed``, ``failed``,
``rejected``, ``input-required``... Such a target declares which states are a success; a case
that does not check the state itself gets this assertion with them (``state_param``), so a
tool error or a failed task fails a case that expected success. Registered by the family's
register_assertion_types hook.
"""

from __future__ import annotations

from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, EvaluationError, Verdict, shorten

from ._common import NAME_LIST_SCHEMA, as_list


class State(AssertionType):
    name = "state"
    description = "The state the target reported (an MCP tool result's ok or error, an A2A task's) is one of these."
    state_param = "equals"
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "equals": {
                **NAME_LIST_SCHEMA,
                "x-expect": "a state or a list of states",
                "description": "The state, or a list of states any of which passes (mcp: ok, error;"
                " a2a: completed, failed, rejected, canceled, input-required, auth-required, working, submitted).",
            },
        },
        "required": ["equals"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        state, wanted = check.response.state, as_list(assertion.params["equals"])
        if state is None:
            raise EvaluationError("the target reported no state (mcp and a2a targets do; a plain reply has none)")
        if state in wanted:
            return Verdict(True, f"state {state!r}", expected=wanted, actual=state)
        said = check.response.text
        message = f"state {state!r}, expected {' or '.join(map(repr, wanted))}" + (
            f": {shorten(said, 300)}" if said else ""
        )
        return Verdict(False, message, expected=wanted, actual=state)
