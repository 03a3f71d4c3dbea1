"""Spans emitted in this process (a ``python`` target's agent) collected for their case.

Around each call of the agent, specrun makes the case's root span context the current
OpenTelemetry context (``enter``/``leave``, a context variable: each case's task and the threads
it starts through specrun have their own). Spans the agent starts there are children of it, so
they carry the case's trace id, and a span processor on the global tracer provider hands each
finished span to the router, which gives it to the case of that trace id: concurrent cases
never mix. Where the agent's code set no tracer provider, specrun installs the SDK's (with no
exporter); one it set is kept, with specrun's processor added. Imported only with traces on.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from .._core.errors import UsageError
from .collector import Router
from .spans import from_sdk


class _Processor(SpanProcessor):
    """Gives each finished span to the open case of its trace id, in every run's router."""

    def __init__(self) -> None:
        self.routers: list[Router] = []

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        for router in self.routers:
            if context.trace_id in router.cases:
                router.deliver([from_sdk(span)], notify=False)  # maybe another thread: told through the loop

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_PROCESSOR = _Processor()
_ON: set[int] = set()  # the providers that have it


def install(router: Router) -> None:
    """Collect this process's spans into ``router`` (see the module docstring)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):  # the agent's code set none
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        raise UsageError(
            "traces: otel reads spans from the OpenTelemetry SDK's TracerProvider, but the agent's code set"
            f" {type(provider).__module__}.{type(provider).__name__} as the tracer provider"
        )
    if id(provider) not in _ON:
        provider.add_span_processor(_PROCESSOR)
        _ON.add(id(provider))
    if router not in _PROCESSOR.routers:
        _PROCESSOR.routers.append(router)


def uninstall(router: Router) -> None:
    if router in _PROCESSOR.routers:
        _PROCESSOR.routers.remove(router)


def enter(trace_id: int, span_id: int) -> object:
    """Make the case's root span the current context; the token for ``leave``."""
    root = trace.SpanContext(trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    return otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(root)))


def leave(token: Any) -> None:
    otel_context.detach(token)
