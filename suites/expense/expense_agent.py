"""A small offline expense agent that asks for details, confirms, then calls a tool.

It reads the whole conversation each time (stateless), like a chat-completions agent. Every
reply says which tools it called, none included (``tool_calls=[]``): a bare string would leave
them unknown, and a tool assertion on it would be an error.
"""

import re

from specrun import Response, ToolCall

LEDGER = []


def _details(messages):
    text = " ".join(m.text for m in messages if m.role == "user").lower()
    amount = re.search(r"\$\s?(\d+(?:\.\d+)?)", text)
    kind = next((k for k in ("travel", "dinner", "lunch", "hotel", "taxi", "software") if k in text), None)
    return kind, float(amount.group(1)) if amount else None


def create_expense(kind, amount, user):
    """The agent's tool: record an expense and return its reference."""
    LEDGER.append({"type": kind, "amount": amount, "user": user})
    return {"reference": f"EXP-{len(LEDGER):03d}", "status": "submitted"}


def _say(text):
    """A reply that called no tool, saying so."""
    return Response(text, tool_calls=[])


def respond(messages, ctx):
    last = messages[-1].text.lower().strip()
    attachments = [p for m in messages for p in m.attachments]
    kind, amount = _details(messages)
    if attachments and amount is None:
        return _say("I see a receipt. What type of expense is it, and what amount should I file?")
    if re.fullmatch(r"(yes|yes, confirm|confirm|ok|sure)[.!]?", last) and kind and amount:
        result = create_expense(kind, amount, ctx.user)
        call = ToolCall("create_expense", {"type": kind, "amount": amount}, result)
        return Response(f"Expense submitted! Reference: {result['reference']}", tool_calls=[call])
    if kind and amount:
        return _say(f"I'll create an expense for {kind}, ${amount:,.0f}. Please confirm.")
    if "expense" in last or "receipt" in last:
        return _say("What type of expense would you like to submit, and how much was it?")
    return _say("I can help you file expenses. What would you like to do?")
