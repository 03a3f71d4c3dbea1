"""What a target tells of a case before the run: the part of the ``Target`` kind that checks
cases against the agent (an MCP server's tools) and lists what the agent offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from .data import Case


class TargetChecks:
    """Mixed into ``Target``.

    ``success_states`` names the response ``state`` values that are a success (an MCP tool
    result's ``ok``, an A2A task's ``completed``): a case whose response has another state
    fails, unless the case checks the state itself. The check is the installed assertion type
    that sets ``state_param``: a case without one gets ``{type: <name>, <state_param>:
    [the success states]}``. ``mock_tools`` is True for a target whose agent is given a case's
    mocked tools (``ctx.mcp_url``, ``SPECRUN_MCP_URL``, the ``X-Specrun-MCP-URL`` header): a case
    with ``tools:`` against any other is refused before the run, never left unreached.
    """

    name: ClassVar[str]
    success_states: ClassVar[tuple[str, ...]] = ()
    mock_tools: ClassVar[bool] = False

    def case_problems(self, case: Case) -> Iterable[tuple[str, str]]:
        """Yield ``(field, message)`` for what this target cannot run in ``case``, found before
        the run (after ``problems``), such as an unknown tool. This one refuses a tool-call input
        (``input: {tool, arguments}``): a target that calls tools overrides it. (Mocked tools a
        target's agent is not given, ``mock_tools`` False, the engine refuses itself.)"""
        for message in case.input:  # a loop, not any(): this runs for every case as it is planned
            if message.tool_request:
                yield (
                    "input.tool",
                    (
                        f"the {self.name} target cannot call a tool directly: input {{tool, arguments}} needs a"
                        " target that calls tools (such as mcp); give this one a message"
                    ),
                )
                return

    def catalog(self) -> str | None:
        """What the agent offers that a case can name, as text for a person writing cases (an
        MCP server's tools and their arguments), or None; ``specrun validate --tools`` shows it."""
        return None
