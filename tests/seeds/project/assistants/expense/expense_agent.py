"""V2's expense assistant, offline: it reads the whole conversation on every call.

Every reply says which tools it called, none included (``tool_calls=[]``): a bare string would
leave them unknown, and a tool assertion on it would be an error.
"""

import re

from specrun import Response, ToolCall

KINDS = ("travel", "dinner", "lunch", "hotel", "taxi")


def _say(text):
    """A reply that called no tool, saying so."""
    return Response(text, tool_calls=[])


def respond(messages, ctx):
    last = messages[-1]
    text = last.text.lower().strip()
    said = " ".join(m.text for m in messages if m.role == "user").lower()
    amount = re.search(r"\$\s?(\d+(?:\.\d+)?)", said)
    kind = next((k for k in KINDS if k in said), None)
    if last.attachments:
        return _say("The receipt shows an amount of $85.50. What type of expense is it?")
    if text in ("hello", "hi"):
        return _say("Hi! I can help you file expenses.")
    if re.fullmatch(r"(yes|yes, confirm|confirm)[.!]?", text) and kind and amount:
        call = ToolCall("create_expense", {"type": kind, "amount": float(amount.group(1))}, {"id": "EXP-001"})
        return Response("Expense submitted! Reference: EXP-001", tool_calls=[call])
    if kind and amount:
        call = ToolCall("create_expense", {"type": kind, "amount": float(amount.group(1)), "draft": True})
        return Response(f"I'll create an expense for {kind}, ${amount.group(1)}. Please confirm.", tool_calls=[call])
    if "expense" in text:
        return _say("What type of expense would you like to submit?")
    return _say("I can help you file expenses. What would you like to do?")
