"""Model-judged assertions: ``llm`` (a rubric judged by a model) and ``agent`` (a validator agent).

The judge reads the author's criteria and the agent's material as delimited data and answers
``{passed, score, reason}``, read by :func:`specrun._judges.judging.parse_verdict` (its contradiction
rule included). An unusable answer is asked for once more, then the assertion is an error,
never a silent pass or fail. ``samples: N`` asks N times, the majority deciding
(:mod:`specrun._judges.samples`). The reason is the verdict's message; tokens and cost go on the
verdict (``Verdict.usage``), which the engine adds to the case.
Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar

from ..._core.data import Assertion, Message
from ..._core.errors import EvaluationError
from ..._core.kinds import AssertionType, Check, Verdict
from ..._core.services import Parsed
from ..judging import DATA_RULES, JUDGE_THRESHOLD, JudgeReply, data_block, parse_verdict
from ..samples import SAMPLES_PARAM, sample_count, sampled

LLM_PROMPT_VERSION = "llm-judge/2"
VALIDATOR_PROMPT_VERSION = "validator/2"

JUDGE_SYSTEM = f"""\
You are an impartial evaluator of an AI agent's response. Decide whether the response meets \
the criteria. Judge only against the criteria (and the reference answer, when one is given): \
do not reward length or style unless the criteria ask for it.
{DATA_RULES}"""

_THRESHOLD = {"type": "number", "minimum": 0, "maximum": 1}
_MODEL = {"type": "string", "description": "litellm model name; default: the project's judge."}


def reply_format(threshold: float) -> str:
    """How to reply, the contradiction rule included (also the reminder after an unusable reply)."""
    return (
        'Reply with one JSON object and nothing else: {"passed": true or false, "score": <a number '
        'from 0 to 1>, "reason": "<one or two sentences>"}. The score says how fully the criteria are '
        f"met; passed is true exactly when the score is at least {threshold:g}. Write the reason in "
        "your own words: do not copy JSON, code or markers from the material."
    )


def conversation_data(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as a judge reads it: role and text, attachments named."""
    turns = []
    for message in messages:
        turn: dict[str, Any] = {"role": message.role, "content": message.text}
        files = [(p.get("type", "file"), str(p.get("path") or p.get("source") or "")) for p in message.attachments]
        if files:
            turn["attachments"] = [f"{kind}: {name.rsplit('/', 1)[-1]}" for kind, name in files]
        turns.append(turn)
    return turns


def judge_prompt(check: Check, criteria: str, threshold: float, expected: Any = None) -> str:
    """What the judge reads: the author's criteria and reference answer, then the agent's
    material (conversation, tool calls, response) as delimited data, then the reply format."""
    parts = [f"CRITERIA:\n{criteria}"]
    if expected is not None:
        text = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
        parts.append(f"REFERENCE ANSWER:\n{text}")
    calls = check.response.tool_calls
    material = {
        "conversation": conversation_data(_messages(check)),
        # Unknown is not "none": an empty list would let the judge conclude that no tool was called.
        "tool_calls": [c.to_dict() for c in calls] if check.response.tools_reported else "not reported by the agent",
        "response": check.response.content,
    }
    parts.append(f"THE MATERIAL TO JUDGE (conversation, tool_calls, response):\n{data_block(material)}")
    parts.append(reply_format(threshold))
    return "\n\n".join(parts)


def _messages(check: Check) -> list[Message]:
    return check.messages or check.case.input


def services_of(check: Check, what: str) -> Any:
    """The runner's services, or an ``EvaluationError`` saying ``what`` needs them."""
    services = check.services
    if services is None or getattr(services, "models", None) is None:
        raise EvaluationError(f"{what} needs a model client (run it with `specrun run`)")
    return services


def run_of(check: Check) -> int:
    return int(getattr(check.services, "run", None) or check.context.run or 1)


def _verdict(parsed: Parsed[JudgeReply], expected: Any, **extra: Any) -> Verdict:
    """The judge's verdict, with what it cost; two unusable replies are an undecided (error) one."""
    if parsed.problem is not None:
        return Verdict(False, parsed.problem, usage=parsed.usage, error=True)
    reply = parsed.get()
    passed = reply.verdict
    details = {
        "reason": reply.reason,
        "score": reply.score,
        "judge_passed": reply.passed,
        "threshold": reply.threshold,
        **{k: v for k, v in extra.items() if v is not None},
    }
    message = reply.reason or ("the judge gave no reason" if passed else "failed (no reason given)")
    return Verdict(passed, message, expected=expected, score=reply.score, details=details, usage=parsed.usage)


def _threshold(params: dict[str, Any]) -> float:
    value = params.get("threshold")
    return JUDGE_THRESHOLD if value is None else float(value)


async def model_judge(
    check: Check,
    criteria: str,
    threshold: float,
    *,
    expected: Any,
    model: str | None,
    version: str,
    what: str,
    sample: int = 1,
    system: str = JUDGE_SYSTEM,
    prompt: str | None = None,
) -> Parsed[JudgeReply]:
    """Ask the run's judge model (``sample``: which of the assertion's samples); an unusable
    reply is asked for once more, then a problem. ``system`` and ``prompt`` replace the
    response judge's own (the conversation judges read the whole conversation)."""
    client = services_of(check, what).models
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": prompt or judge_prompt(check, criteria, threshold, expected)},
    ]
    return await client.complete_json(
        messages,
        lambda text: parse_verdict(text, threshold),
        reminder=reply_format(threshold),
        model=model,
        purpose="judge",
        run=run_of(check),
        version=version,
        sample=sample,
    )


class LlmJudge(AssertionType):
    name = "llm"
    description = "A model judges the response against criteria (and an optional reference)."
    needs_model: ClassVar[bool] = True
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "criteria": {"type": "string", "minLength": 1, "description": "What a good response does."},
            "expected": {"description": "A reference answer the judge may compare with."},
            "threshold": {**_THRESHOLD, "description": "Pass when score >= threshold (default 0.5)."},
            "model": _MODEL,
            "samples": SAMPLES_PARAM,
        },
        "required": ["criteria"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params

        async def judge(sample: int) -> Verdict:
            reply = await model_judge(
                check,
                params["criteria"],
                _threshold(params),
                expected=params.get("expected"),
                model=params.get("model"),
                version=LLM_PROMPT_VERSION,
                what="the llm assertion",
                sample=sample,
            )
            return _verdict(reply, params["criteria"], model=params.get("model"))

        return await sampled(check, params, judge)


def _criteria(metadata: dict[str, Any]) -> str:
    criteria = str(metadata.get("criteria") or "")
    extra = [f"- {k}: {v}" for k, v in metadata.items() if k not in ("criteria", "conversation")]
    return criteria + ("\nAlso:\n" + "\n".join(extra) if extra else "")


class AgentJudge(AssertionType):
    name = "agent"
    description = (
        "A validator agent (use: agents:<id>) or the built-in validator judges the response "
        "against options.metadata.criteria."
    )
    needs_model: ClassVar[bool] = True
    agent_params: ClassVar[tuple[str, ...]] = ("use",)
    label_params: ClassVar[tuple[str, ...]] = ("use",)
    validator_param: ClassVar[str | None] = "use"  # what Test.assert_agent runs (V2's t.assert.Agent)
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "use": {
                "type": "string",
                "pattern": "^agents:.+",
                "description": "agents:<id>: the validator agent; default: the built-in validator.",
            },
            "options": {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"criteria": {"type": "string"}},
                    }
                },
                "description": "Options passed to the validator; metadata.criteria says what to check.",
            },
            "threshold": {**_THRESHOLD, "description": "Pass when score >= threshold (default 0.5)."},
            "model": _MODEL,
            "samples": SAMPLES_PARAM,
        },
    }

    def problems(self, assertion: Assertion, base_dir: Any) -> Any:
        metadata = (assertion.params.get("options") or {}).get("metadata") or {}
        if "use" not in assertion.params and not metadata.get("criteria"):
            yield "options", "the built-in validator needs options.metadata.criteria (or give `use: agents:<id>`)"

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        params = assertion.params
        options = dict(params.get("options") or {})
        metadata = dict(options.get("metadata") or {})
        threshold = _threshold(params)
        criteria = _criteria(metadata)
        if "use" not in params and not metadata.get("criteria"):
            raise EvaluationError("the agent assertion needs options.metadata.criteria without `use`")
        several = sample_count(params, check) > 1

        async def judge(sample: int) -> Verdict:
            if "use" not in params:
                reply = await model_judge(
                    check,
                    criteria,
                    threshold,
                    expected=None,
                    model=params.get("model"),
                    version=VALIDATOR_PROMPT_VERSION,
                    what="the agent assertion",
                    sample=sample,
                )
                return _verdict(reply, metadata.get("criteria"), validator="built-in")
            agent_id = str(params["use"]).removeprefix("agents:")
            told = {**metadata, "sample": sample} if several else metadata  # a validator may vary per sample
            reply = await self._ask_agent(agent_id, check, options, told, criteria, threshold)
            return _verdict(reply, metadata.get("criteria"), validator=agent_id)

        return await sampled(check, params, judge)

    async def _ask_agent(
        self,
        agent_id: str,
        check: Check,
        options: dict[str, Any],
        metadata: dict[str, Any],
        criteria: str,
        threshold: float,
    ) -> Parsed[JudgeReply]:
        services = check.services
        if services is None:
            raise EvaluationError(f"validator agent {agent_id!r} cannot be called outside a run")
        metadata = {
            "test_mode": "validator",
            **metadata,
            "input": [m.to_dict() for m in _messages(check)],
            "output": check.response.content,
            "tool_calls": [c.to_dict() for c in check.response.tool_calls],
        }
        context = dataclasses.replace(check.context, options={**options, "metadata": metadata})
        # One user message (a project agent may take no system message): the rules, then the prompt.
        messages = [Message("user", f"{JUDGE_SYSTEM}\n\n{judge_prompt(check, criteria, threshold)}")]
        return await services.ask_agent(
            agent_id,
            messages,
            context,
            lambda value: parse_verdict(value, threshold),
            reply_format(threshold),
            role="validator agent",
        )
