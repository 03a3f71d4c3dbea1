"""Conversation-level judges: a model judges the whole conversation against a built-in rubric.

``task_completion``, ``knowledge_retention``, ``role_adherence``, ``conversation_completeness``
and ``trajectory_quality`` are one implementation (:class:`ConversationJudge`) parametrised by
a rubric (:data:`RUBRICS`, documented in docs/models.md). The judge reads the rubric and what
the test's author gave (a goal, a role, a reference trajectory) as instructions, and the
conversation and every tool call with its result as delimited data (``data_block``), and
answers ``{passed, score, reason}`` like the ``llm`` judge, whose call, verdict and ``samples``
logic these reuse. The conversation is a case's message history and the agent's answer, or,
in a dynamic case's checkpoint, the turns so far with every turn's tool calls.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ..._core.data import Assertion, Message
from ..._core.errors import EvaluationError
from ..._core.kinds import AssertionType, Check, Verdict
from ..judging import DATA_RULES, data_block
from ..samples import SAMPLES_PARAM, sampled
from .judge import _MODEL, _THRESHOLD, _threshold, _verdict, conversation_data, model_judge, reply_format

PROMPT_VERSION = "conversation-judge/1"

SYSTEM = f"""\
You are an impartial evaluator of a conversation between a user and an AI agent. Score the \
conversation against the rubric you are given, from 0 (not at all) to 1 (fully), and judge \
only what the rubric asks: do not reward length or style.
{DATA_RULES}"""

RUBRICS: dict[str, str] = {
    "task_completion": (
        "Did the agent achieve the user's goal? Work out the goal from the conversation (or take "
        "the GOAL given below), then check from the agent's messages and its tool calls and their "
        "results whether it was actually achieved: an action the agent claims but no tool call "
        "shows, or a tool call that failed, does not count. Score 1 when the goal is fully "
        "achieved, 0 when not at all, in between for partial completion."
    ),
    "knowledge_retention": (
        "Does the agent keep the facts the user gave earlier in the conversation? List the facts "
        "the user stated (names, numbers, preferences, constraints). Score the share of the "
        "agent's later messages and tool arguments that stay consistent with them: asking again "
        "for a fact already given, contradicting it or using a different value lowers the score. "
        "With no fact to retain, score 1."
    ),
    "role_adherence": (
        "Does the agent stay in the ROLE given below throughout the conversation? Score the share "
        "of the agent's messages that stay in that role (its persona, its scope, its tone, what it "
        "must and must not do), including when the user tries to move it out of the role."
    ),
    "conversation_completeness": (
        "List every intention the user expressed in the conversation (each request, question or "
        "need). For each, decide whether the agent satisfied it by the end of the conversation. "
        "The score is the number satisfied divided by the number listed (1 when the user "
        "expressed none); the reason names the intentions left unsatisfied."
    ),
    "trajectory_quality": (
        "Judge the agent's tool calls (the trajectory): were they necessary (no redundant or "
        "irrelevant call), in a sensible order (a call that needs another's result comes after "
        "it), with sound arguments (taken correctly from the conversation and earlier results)? "
        "When a REFERENCE TRAJECTORY is given below, compare with it: other calls that reach the "
        "same end soundly are acceptable. Score 1 for a trajectory with no flaw, lower for each."
    ),
}

_DESCRIPTIONS = {
    "task_completion": "A model judges whether the agent achieved the user's goal (conversation and tool calls).",
    "knowledge_retention": "A model judges whether the agent keeps the facts the user gave earlier.",
    "role_adherence": "A model judges whether the agent stays in its role (`role:` or the system prompt).",
    "conversation_completeness": "A model scores the share of the user's intentions the agent satisfied.",
    "trajectory_quality": "A model judges the agent's tool calls: necessary, in order, sound arguments.",
}

# A string is a tool's name; the object keywords apply to objects only.
_STEP = {
    "type": ["string", "object"],
    "minLength": 1,
    "properties": {"name": {"type": "string", "minLength": 1}, "arguments": {"type": "object"}},
    "required": ["name"],
    "additionalProperties": False,
}

# What the author may add to each rubric: instructions, so they stand outside the data markers.
_EXTRA_PARAMS: dict[str, dict[str, Any]] = {
    "task_completion": {"goal": {"type": "string", "minLength": 1, "description": "The user's goal."}},
    "role_adherence": {
        "role": {"type": "string", "minLength": 1, "description": "The role; default: the case's system prompt."}
    },
    "trajectory_quality": {
        "expected": {
            "type": "array",
            "items": _STEP,
            "description": "A reference trajectory: tool names or {name, arguments}, in order.",
        }
    },
}

_LABELS = {"goal": "GOAL", "role": "ROLE", "expected": "REFERENCE TRAJECTORY"}


class ConversationJudge(AssertionType):
    """A model scores the whole conversation against the rubric of :attr:`name` (see the module)."""

    needs_model: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.description = _DESCRIPTIONS[cls.name]
        cls.params_schema = {
            "properties": {
                **_EXTRA_PARAMS.get(cls.name, {}),
                "threshold": {**_THRESHOLD, "description": "Pass when score >= threshold (default 0.5)."},
                "model": _MODEL,
                "samples": SAMPLES_PARAM,
            },
        }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        threshold = _threshold(params)
        prompt = self.prompt(params, check, threshold)

        async def judge(sample: int) -> Verdict:
            reply = await model_judge(
                check,
                RUBRICS[self.name],
                threshold,
                expected=None,
                model=params.get("model"),
                version=f"{PROMPT_VERSION}:{self.name}",
                what=f"the {self.name} assertion",
                sample=sample,
                system=SYSTEM,
                prompt=prompt,
            )
            return _verdict(reply, None, rubric=self.name, model=params.get("model"))

        return await sampled(check, params, judge)

    def prompt(self, params: dict[str, Any], check: Check, threshold: float) -> str:
        """The rubric and the author's additions, the conversation as data, the reply format."""
        parts = [f"CRITERIA ({self.name}):\n{RUBRICS[self.name]}"]
        for key, label in _LABELS.items():
            value = self.authored(key, params, check)
            if value is not None:
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                parts.append(f"{label}:\n{text}")
        parts.append(f"THE CONVERSATION TO JUDGE (conversation, tool_calls):\n{data_block(material(check))}")
        parts.append(reply_format(threshold))
        return "\n\n".join(parts)

    def authored(self, key: str, params: dict[str, Any], check: Check) -> Any:
        """What the author gave for ``key``; a role defaults to the case's own system prompt."""
        if key not in _EXTRA_PARAMS.get(self.name, {}):
            return None
        if key == "role" and params.get("role") is None:
            # The case's input is the author's, so its system prompt may stand outside the data.
            system = "\n".join(m.text for m in check.case.input if m.role == "system").strip()
            if not system:
                raise EvaluationError("role_adherence needs `role:` or a system message in the case's input")
            return system
        return params.get(key)


def material(check: Check) -> dict[str, Any]:
    """The conversation (with the agent's last answer) and every tool call, as a judge reads them."""
    whole = check.conversation
    messages = list(check.messages or check.case.input)
    if whole is None:  # a case's input and the answer to it; a dynamic history holds its answers
        messages.append(Message("assistant", check.response.text))
    response = whole or check.response
    # Unknown is not "none": an empty list would let the judge conclude that no tool was called.
    calls: Any = [c.to_dict() for c in response.tool_calls] if response.tools_reported else "not reported by the agent"
    return {"conversation": conversation_data(messages), "tool_calls": calls}


class TaskCompletion(ConversationJudge):
    name = "task_completion"


class KnowledgeRetention(ConversationJudge):
    name = "knowledge_retention"


class RoleAdherence(ConversationJudge):
    name = "role_adherence"


class ConversationCompleteness(ConversationJudge):
    name = "conversation_completeness"


class TrajectoryQuality(ConversationJudge):
    name = "trajectory_quality"

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        # A trajectory judged without its tool calls would be a guess.
        if not (check.conversation or check.response).tools_reported:
            raise EvaluationError("trajectory_quality cannot judge: the agent did not report its tool calls")
        return await super().evaluate(assertion, check)
