"""The ``agent`` simulator: a project agent plays the user (the V2 seed's simulator agent).

``simulator: {use: <agent id>, options: {metadata: {persona, goal}}}`` (``type: agent`` is
implied). Each turn the agent gets one user message holding the state as JSON (persona, goal,
conversation, turn_number, max_turns, checkpoints reached and pending, ``test_mode:
"simulator"``, the reply format); ``ctx.metadata`` and ``ctx.options["metadata"]`` carry the
same. It replies ``{message, goal_achieved, reasoning}`` (``input`` accepted for ``message``;
fenced or in prose is fine). An unusable reply is asked for once more, then it is an error.
Registered by the family's register_simulators hook.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar

from specrun.plugin import EvaluationError, Message, Simulator, SimulatorState, SimulatorTurn

from ._reply import REMINDER, REPLY_FORMAT, parse_reply, state_dict


class AgentSimulator(Simulator):
    name = "agent"
    description = "A project agent (use: <agent id>) plays the user; options.metadata gives persona and goal."
    needs_model: ClassVar[bool] = True
    agent_params: ClassVar[tuple[str, ...]] = ("use",)  # calls that agent: generated cases need it allowed
    label_params: ClassVar[tuple[str, ...]] = ("use",)  # `--dry-run` shows the agent it is
    shorthand: ClassVar[str | None] = "use"  # `simulator: {use: id}` and `--simulator ID` mean this simulator
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "use": {"type": "string", "minLength": 1, "description": "The simulator agent's id (no prefix needed)."},
            "options": {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"persona": {"type": "string"}, "goal": {"type": "string"}},
                    }
                },
                "description": "Options passed to the simulator agent; metadata.persona and metadata.goal.",
            },
        },
        "required": ["use"],
    }

    async def next_turn(self, state: SimulatorState) -> SimulatorTurn:
        agent_id = str(self.config["use"]).removeprefix("agents:")
        if state.services is None:
            raise EvaluationError(f"simulator agent {agent_id!r} cannot be called outside a run")
        options = dict(self.config.get("options") or {})
        metadata = dict(options.get("metadata") or {})
        shown = {**state_dict(state, metadata.get("persona"), metadata.get("goal")), "reply_format": REPLY_FORMAT}
        metadata.update(shown)
        context = dataclasses.replace(state.context, metadata=metadata, options={**options, "metadata": metadata})
        messages = [Message("user", json.dumps(shown, ensure_ascii=False, indent=1))]
        parsed = await state.services.ask_agent(
            agent_id, messages, context, parse_reply, REMINDER, role="simulator agent"
        )
        turn = parsed.get()
        turn.usage = parsed.usage if parsed.usage.total_tokens or parsed.usage.cost else None
        return turn
