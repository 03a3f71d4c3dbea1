"""The ``scripted`` simulator: a deterministic, offline user who says the listed turns in order.

When the list is exhausted it declares its goal achieved (with an empty message), so the
conversation ends there: passed when every required checkpoint was reached, else failed with
the missing ones. Registered by the family's register_simulators hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import Simulator, SimulatorState, SimulatorTurn


class ScriptedSimulator(Simulator):
    name = "scripted"
    description = "Says the listed turns in order; when they run out, the user is done."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "turns": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "minLength": 1},
                "description": "The user's messages, one per turn.",
            }
        },
        "required": ["turns"],
    }

    def __init__(self, config: dict[str, Any], base_dir: Path):
        super().__init__(config, base_dir)
        self.turns = list(config.get("turns") or [])
        self.said = 0

    async def next_turn(self, state: SimulatorState) -> SimulatorTurn:
        if self.said >= len(self.turns):
            return SimulatorTurn("", goal_achieved=True, reasoning=f"all {len(self.turns)} scripted turns said")
        self.said += 1
        return SimulatorTurn(self.turns[self.said - 1], reasoning=f"scripted turn {self.said} of {len(self.turns)}")
