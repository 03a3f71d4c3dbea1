"""An expense assistant built with pydantic-ai, tested by specrun with no glue code.

``agent.yaml`` names the agent object itself (``target: python:expense_agent:agent``): specrun
runs it with each case's conversation and reads its tool calls, their results and its token
usage from pydantic-ai's own messages.

The model is pydantic-ai's ``FunctionModel`` running ``offline_model`` below, a few rules that
stand in for an LLM so the example runs offline and always the same way. With a real model
(``Agent("openai:gpt-4o", ...)``) the agent, its tools and the suites stay as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

KINDS = ("travel", "hotel", "meal", "taxi", "software")


@dataclass
class Employee:
    """The agent's dependencies: who files, their limit, what they filed (a case's ``options.deps``)."""

    name: str
    limit: float = 5000
    filed: list[dict] = field(default_factory=list)


def offline_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for the LLM: answers a tool's return, else acts on what the user said."""
    answered = [p for p in messages[-1].parts if p.part_kind in ("tool-return", "retry-prompt")]
    if answered:
        return ModelResponse(parts=[TextPart(" ".join(_report(p) for p in answered))])
    prompts = [p.content for m in messages for p in m.parts if p.part_kind == "user-prompt"]
    said, everything = prompts[-1].lower(), " ".join(map(str, prompts)).lower()
    if "what did you file" in said:  # from the conversation's own tool calls
        filed = [p.args_as_dict() for m in messages for p in m.parts if p.part_kind == "tool-call"]
        listed = ", ".join(f"{c['category']} ${c['amount']:,.0f}" for c in filed if "amount" in c)
        return ModelResponse(parts=[TextPart(f"So far I filed: {listed or 'nothing'}.")])
    if reference := re.search(r"exp-\d+", said):
        return _call("delete_expense", reference=reference.group().upper())
    kind = next((k for k in KINDS if k in said), None)
    if "policy" in said and kind:
        return _call("lookup_policy", category=kind)
    kind = kind or next((k for k in KINDS if k in everything), None)
    amount = re.search(r"\$\s?([\d,]+)", everything)
    if kind and amount:
        return _call("create_expense", category=kind, amount=float(amount.group(1).replace(",", "")))
    return ModelResponse(parts=[TextPart("What type of expense is it, and how much was it?")])


def _call(tool: str, **args: object) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def _report(part) -> str:
    if part.part_kind == "retry-prompt" or part.outcome != "success":
        return f"I could not do that: {part.content}"
    return str(part.content)


agent = Agent(
    FunctionModel(offline_model),
    deps_type=Employee,
    instructions="You file expenses for employees. Never delete an expense without a manager's approval.",
)


@agent.tool
def create_expense(ctx: RunContext[Employee], category: str, amount: float) -> str:
    """File an expense for the employee."""
    if amount > ctx.deps.limit:
        raise ModelRetry(f"${amount:,.0f} is over {ctx.deps.name}'s limit of ${ctx.deps.limit:,.0f}")
    ctx.deps.filed.append({"category": category, "amount": amount})
    return f"Expense submitted! Reference: EXP-{len(ctx.deps.filed):03d}"


@agent.tool_plain
def lookup_policy(category: str) -> str:
    """The expense policy for a category."""
    return f"{category.capitalize()} expenses need a receipt and are refunded within 10 days."


@agent.tool_plain
def delete_expense(reference: str) -> str:
    """Delete an expense."""
    return f"Deleted {reference}."
