"""OpenTelemetry traces as a case's evidence (``traces: otel`` in agent.yaml).

This room owns: the agent file's ``traces`` setting (here), spans as specrun holds them and the
OTLP decoding of them (``spans``), the per-case collectors and the router that gives each span
to the case of its trace id (``collector``), specrun's OTLP/HTTP receiver (``receiver``), the
collection of spans emitted in this process (``inprocess``), the mapping of spans to tool
calls, usage and the recorded span tree (``evidence``), and the run's tracing that wires them
to a target's session (``tracing``). Nothing here is imported unless an agent has traces on;
the OpenTelemetry packages are the ``otel`` extra. Users' reference: docs/targets.md, "Traces".
"""

from __future__ import annotations

import importlib.util
from typing import Any

DEFAULT_GRACE = 1.0
"""Seconds spans may still arrive after a reply, when the trace does not look complete sooner."""
STANDARD_RECEIVER = "127.0.0.1:4318"
"""The standard OTLP/HTTP port on loopback: where an ``http`` agent's exporter is pointed by default."""
PACKAGES = ("opentelemetry.sdk", "opentelemetry.proto")
INSTALL = "pip install 'specrun[otel]'"


def settings(value: Any) -> dict[str, Any] | None:
    """``traces:`` of an agent file (validated by its schema) as a mapping with ``type``."""
    if value is None:
        return None
    return {"type": value} if isinstance(value, str) else dict(value)


def missing_packages() -> str | None:
    """Why traces cannot be collected here (the ``otel`` extra is not installed), or None."""
    for name in PACKAGES:
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return f"traces: otel needs the OpenTelemetry packages ({name} is not installed): {INSTALL}"
    return None
