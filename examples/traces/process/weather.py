"""A CLI weather agent instrumented with the OpenTelemetry SDK and its OTLP/HTTP exporter, as it
would be in production: the exporter finds where to send from OTEL_EXPORTER_OTLP_* and each
turn continues the trace in TRACEPARENT, both standard (specrun sets them for each case). Tool
calls are OpenInference TOOL spans. (The "model" is a rule, so that the example runs offline.)"""

import json
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("weather")
parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ.get("TRACEPARENT", "")})
FORECASTS = {"paris": "sunny", "oslo": "rain"}


def get_weather(city: str) -> str:
    with tracer.start_as_current_span("get_weather") as span:
        span.set_attributes(
            {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": json.dumps({"city": city})}
        )
        if city.lower() not in FORECASTS:
            span.set_status(Status(StatusCode.ERROR, f"unknown city {city}"))
            return "unknown"
        span.set_attribute("output.value", FORECASTS[city.lower()])
        return FORECASTS[city.lower()]


def reply(text: str) -> str:
    with tracer.start_as_current_span("agent turn", context=parent, attributes={"openinference.span.kind": "AGENT"}):
        words = text.rstrip("?").split()
        if len(words) >= 3 and words[:2] == ["weather", "in"]:
            city = " ".join(words[2:])
            return f"{city}: {get_weather(city)}"
        return "Ask me: weather in <city>?"


print("(weather) >> ", end="", flush=True)
while True:
    try:
        line = input()
    except EOFError:
        break
    print(reply(line.strip().lower()))
    print("(weather) >> ", end="", flush=True)
provider.shutdown()
