"""A shop assistant instrumented with OpenTelemetry, as it would be in production: specrun adds
nothing to it. Each tool call is a GenAI ``execute_tool`` span; a failed lookup sets the span's
status to ERROR. (The "model" is a rule, so that the example runs offline.)"""

import json

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

tracer = trace.get_tracer("shop")
STOCK = {"lamp": 3, "chair": 0}


def lookup(item: str) -> int:
    """A tool: the stock of ``item``."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.arguments": json.dumps({"item": item}),
    }
    with tracer.start_as_current_span("execute_tool lookup", attributes=attributes) as span:
        if item not in STOCK:
            span.set_status(Status(StatusCode.ERROR, f"no such item: {item}"))
            return -1
        span.set_attribute("gen_ai.tool.call.result", json.dumps({"stock": STOCK[item]}))
        return STOCK[item]


def answer(messages, ctx):
    """The agent: asked about an item, it looks it up; anything else, it answers itself."""
    question = messages[-1].text.lower()
    with tracer.start_as_current_span("invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}):
        usage = {"gen_ai.usage.input_tokens": len(question.split()), "gen_ai.usage.output_tokens": 4}
        with tracer.start_as_current_span("chat rules", attributes={"gen_ai.operation.name": "chat", **usage}):
            asked = question.startswith("do you have ")
            item = question.removeprefix("do you have ").rstrip("?").strip() if asked else None
        if item is None:
            return "Hello! Ask me whether we have something."
        stock = lookup(item)
        if stock < 0:
            return f"Sorry, we do not sell {item}."
        return f"We have {stock} {item}s." if stock else f"{item.capitalize()}s are sold out."
