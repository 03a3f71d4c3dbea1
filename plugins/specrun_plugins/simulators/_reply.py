"""What a simulated user's reply must be, and the state it is shown; shared by the simulators."""

from __future__ import annotations

from typing import Any

from specrun.plugin import MISSING, Response, SimulatorState, SimulatorTurn

REPLY_FORMAT = '{"message": "<what the user says next>", "goal_achieved": true or false, "reasoning": "<why>"}'
REMINDER = f"Reply with a JSON object only: {REPLY_FORMAT}."


def parse_reply(value: Any) -> SimulatorTurn:
    """A ``SimulatorTurn`` from a reply (a dict, or text holding JSON, fenced or in prose).

    ``input`` is accepted for ``message``. Raises ``ValueError`` saying what is wrong.
    """
    data = value if isinstance(value, dict) else Response(str(value)).json  # JSON fenced or in prose
    if data is MISSING:
        raise ValueError("no JSON object found")
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got a {type(data).__name__}")
    message = data.get("message", data.get("input"))
    goal = data.get("goal_achieved", False)
    if isinstance(goal, str) and goal.lower() in ("true", "false"):
        goal = goal.lower() == "true"
    if not isinstance(goal, bool):
        raise ValueError(f"'goal_achieved' must be true or false, not {goal!r}")
    if message is None:
        message = ""
    if not isinstance(message, str):
        raise ValueError(f"'message' must be a string, not {type(message).__name__}")
    if not goal and not message.strip():
        raise ValueError("'message' is missing or empty (and goal_achieved is false)")
    reasoning = data.get("reasoning")
    return SimulatorTurn(message, goal, str(reasoning) if reasoning is not None else None)


def _described(state: SimulatorState, ids: list[str]) -> list[dict[str, Any]]:
    descriptions = {c.id: c.description for c in state.case.checkpoints}
    return [{"id": i, "description": descriptions.get(i)} for i in ids]


def state_dict(state: SimulatorState, persona: Any, goal: Any) -> dict[str, Any]:
    """The state a simulated user is shown, as JSON-ready data."""
    return {
        "test_mode": "simulator",
        "persona": persona,
        "goal": goal,
        "conversation": [{"role": m.role, "content": m.text} for m in state.conversation],
        "turn_number": state.turn,
        "max_turns": state.max_turns,
        "checkpoints_reached": _described(state, state.reached),
        "checkpoints_pending": _described(state, state.pending),
    }
