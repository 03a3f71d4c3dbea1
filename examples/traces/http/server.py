"""An HTTP agent (OpenAI chat-completions shape) instrumented with the OpenTelemetry SDK, as it
would be in production: it continues the trace of each request's ``traceparent`` header and
exports its spans with the OTLP/HTTP exporter's defaults (http://localhost:4318), where
specrun's receiver listens. Tool calls are GenAI ``execute_tool`` spans. (The "model" is a
rule, so that the example runs offline.) Run it, then the suite::

    python examples/traces/http/server.py &
    specrun examples/traces/http/

(``server.py PORT`` listens on another port than 8765; point ``agent.yaml``'s target at it.)
"""

import json
import sys

from aiohttp import web
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "flight-agent"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=100))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("flights")
FLIGHTS = {"oslo": ["SK 4021 at 07:10", "DY 603 at 09:45"]}


def search_flights(city: str) -> list[str]:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search_flights",
        "gen_ai.tool.call.arguments": json.dumps({"to": city}),
    }
    with tracer.start_as_current_span("execute_tool search_flights", attributes=attributes) as span:
        found = FLIGHTS.get(city, [])
        span.set_attribute("gen_ai.tool.call.result", json.dumps(found))
        return found


async def chat(request: web.Request) -> web.Response:
    body = await request.json()
    with tracer.start_as_current_span(
        "POST /v1/chat/completions", context=extract(request.headers), kind=trace.SpanKind.SERVER
    ):
        question = body["messages"][-1]["content"].lower().rstrip("?")
        if question.startswith("flights to "):
            city = question.removeprefix("flights to ").strip()
            found = search_flights(city)
            answer = f"Flights to {city}: " + (", ".join(found) or "none")
        else:
            answer = "Ask me: flights to <city>?"
    return web.json_response({"choices": [{"message": {"role": "assistant", "content": answer}}]})


app = web.Application()
app.router.add_post("/v1/chat/completions", chat)

if __name__ == "__main__":
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8765)  # says where
