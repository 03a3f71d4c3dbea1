"""The ``llm`` simulator: a model plays the user from a built-in prompt; no project agent needed.

``simulator: {type: llm, persona: ..., goal: ..., model: ...}`` (``model`` defaults to the
project's simulator model, else its default model). The reply is JSON ``{message,
goal_achieved, reasoning}``; an unusable one is asked for once more, then it is an error.
Registered by the family's register_simulators hook.
"""

from __future__ import annotations

from typing import Any, ClassVar

from specrun.errors import EvaluationError
from specrun.kinds import Simulator, SimulatorState, SimulatorTurn

from ._reply import REMINDER, REPLY_FORMAT, parse_reply

PROMPT_VERSION = "simulator/1"

PROMPT = """\
You are simulating a user with the following characteristics:
Persona: {persona}
Goal: {goal}

Current conversation:
{conversation}

This is turn {turn} of at most {max_turns}.{pending}
Generate the next user message to continue toward the goal. Write only what the user would \
say, in character; never play the assistant.
If the goal has been achieved, set goal_achieved to true.

Respond in JSON format:
{reply_format}"""


def render_prompt(state: SimulatorState, persona: str, goal: str) -> str:
    """The simulator prompt for this state (the V2 seed's example prompt, filled in)."""
    lines = [f"{m.role}: {m.text}" for m in state.conversation]
    conversation = "\n".join(lines) or "(nothing yet: you speak first)"
    pending = ""
    if state.pending:
        wanted = {c.id: c.description or c.id for c in state.case.checkpoints}
        items = "\n".join(f"- {wanted.get(i, i)}" for i in state.pending)
        pending = (
            "\n\nThe test still waits for the assistant to do the following (for your information "
            f"only: never mention it, behave as the user would):\n{items}\n"
        )
    return PROMPT.format(
        persona=persona or "an ordinary user",
        goal=goal,
        conversation=conversation,
        turn=state.turn,
        max_turns=state.max_turns,
        pending=pending,
        reply_format=REPLY_FORMAT,
    )


class LlmSimulator(Simulator):
    name = "llm"
    description = "A model plays the user with the built-in simulator prompt (persona, goal)."
    needs_model: ClassVar[bool] = True
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "goal": {"type": "string", "minLength": 1, "description": "What the simulated user wants done."},
            "persona": {"type": "string", "description": "Who the simulated user is."},
            "model": {"type": "string", "description": "litellm model name; default: the project's simulator model."},
        },
        "required": ["goal"],
    }

    async def next_turn(self, state: SimulatorState) -> SimulatorTurn:
        client = getattr(state.services, "models", None)
        if client is None:
            raise EvaluationError("the llm simulator needs a model client (run it with `specrun run`)")
        prompt = render_prompt(state, str(self.config.get("persona") or ""), str(self.config["goal"]))
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "Your next message, as JSON."}]
        turn, usage = await client.complete_json(
            messages,
            parse_reply,
            reminder=REMINDER,
            model=self.config.get("model"),
            purpose="simulator",
            run=getattr(state.services, "run", 1),
            version=PROMPT_VERSION,
        )
        turn.usage = usage if usage.total_tokens or usage.cost else None
        return turn
