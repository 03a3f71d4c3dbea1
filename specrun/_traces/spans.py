"""Spans as specrun holds them, from the three places they come from: OTLP/HTTP bodies in
protobuf (decoded with ``opentelemetry-proto``) or in JSON (the OTLP JSON mapping: hex ids,
lowerCamelCase names, 64-bit integers as numbers or strings), and this process's own
OpenTelemetry SDK spans.

Every string attribute value is cut at ``MAX_VALUE_CHARS`` and a span keeps at most
``MAX_ATTRIBUTES``, so one span's size is bounded whatever an agent sends; ``Span.size`` is
what it holds (roughly, in characters), which the collectors count against their limits.
A body that is not OTLP raises ``Malformed`` naming where, never anything else.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

MAX_VALUE_CHARS = 32_768
MAX_ATTRIBUTES = 128
UNSET, OK, ERROR = 0, 1, 2
_STATUS_NAMES = {"STATUS_CODE_UNSET": UNSET, "STATUS_CODE_OK": OK, "STATUS_CODE_ERROR": ERROR}


class Malformed(ValueError):
    """A body that is not OTLP trace data; the message says where."""


@dataclass(slots=True)
class Span:
    """One finished span: ids as integers (0: no parent), times in Unix nanoseconds, status
    ``UNSET``, ``OK`` or ``ERROR`` with its message, and the attributes as Python values."""

    trace_id: int
    span_id: int
    parent_id: int
    name: str
    start: int
    end: int
    status: int
    message: str
    attributes: dict[str, Any]
    size: int


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…[cut]"


def _size(attributes: dict[str, Any]) -> int:
    return 160 + sum(len(k) + (len(v) if isinstance(v, str) else 16) for k, v in attributes.items())


# -- this process's spans (the OpenTelemetry SDK) ------------------------------------------------


def from_sdk(span: Any) -> Span:
    """A finished SDK ``ReadableSpan`` as a ``Span``."""
    context, parent = span.context, span.parent
    attributes: dict[str, Any] = {}
    for key, value in (span.attributes or {}).items():
        if len(attributes) == MAX_ATTRIBUTES:
            break
        attributes[key] = _cut(value) if isinstance(value, str) else list(value) if isinstance(value, tuple) else value
    status = span.status
    code = status.status_code.value if status is not None else UNSET
    message = (status.description or "") if status is not None else ""
    if code == ERROR and not message:
        message = _exception((e.name, e.attributes or {}) for e in span.events)
    return Span(
        context.trace_id,
        context.span_id,
        parent.span_id if parent is not None else 0,
        span.name,
        span.start_time or 0,
        span.end_time or span.start_time or 0,
        code,
        _cut(message),
        attributes,
        _size(attributes),
    )


def _exception(events: Any) -> str:
    """What an ``exception`` event says (``type: message``), for an error status without a message."""
    for name, attributes in events:
        if name == "exception":
            kind, text = attributes.get("exception.type"), attributes.get("exception.message")
            return ": ".join(str(p) for p in (kind, text) if p)
    return ""


# -- OTLP protobuf --------------------------------------------------------------------------------


def decode_protobuf(body: bytes) -> list[Span]:
    """The spans of an ``ExportTraceServiceRequest`` in protobuf."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise Malformed(f"not an OTLP protobuf ExportTraceServiceRequest ({exc})") from None
    spans = []
    for r, resource in enumerate(request.resource_spans):
        for s, scope in enumerate(resource.scope_spans):
            for n, span in enumerate(scope.spans):
                try:
                    spans.append(_from_proto(span))
                except Malformed as exc:  # where it is, said only when it is wrong (~10% of a span's cost)
                    raise Malformed(f"resource_spans[{r}].scope_spans[{s}].spans[{n}].{exc}") from None
    return spans


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = value.string_value
        return text if len(text) <= MAX_VALUE_CHARS else _cut(text)
    if kind is None:
        return None
    if kind == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def _proto_id(raw: bytes, length: int, name: str) -> int:
    number = int.from_bytes(raw, "big")
    if len(raw) != length or not number:
        raise Malformed(f"{name}: an id of {len(raw)} bytes (OTLP ids are {length} bytes, not all zero)")
    return number


def _from_proto(span: Any) -> Span:
    attributes: dict[str, Any] = {}
    size = 160
    for kv in span.attributes:
        if len(attributes) == MAX_ATTRIBUTES:
            break
        key, value = kv.key, _proto_value(kv.value)
        attributes[key] = value
        size += len(key) + (len(value) if isinstance(value, str) else 16)
    status = span.status
    code, message = status.code, status.message
    if code == ERROR and not message:
        message = _exception((e.name, {kv.key: _proto_value(kv.value) for kv in e.attributes}) for e in span.events)
    parent = span.parent_span_id
    start = span.start_time_unix_nano
    name = span.name
    return Span(
        _proto_id(span.trace_id, 16, "trace_id"),
        _proto_id(span.span_id, 8, "span_id"),
        _proto_id(parent, 8, "parent_span_id") if parent else 0,
        name if len(name) <= MAX_VALUE_CHARS else _cut(name),
        start,
        span.end_time_unix_nano or start,
        code if code in (UNSET, OK, ERROR) else UNSET,
        message if len(message) <= MAX_VALUE_CHARS else _cut(message),
        attributes,
        size,
    )


# -- OTLP JSON ------------------------------------------------------------------------------------


def _field(node: dict[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    """A field by its JSON name, or its proto name (receivers accept both)."""
    return node[camel] if camel in node else node.get(snake, default)


def _list(node: dict[str, Any], camel: str, snake: str, where: str) -> list[Any]:
    value = _field(node, camel, snake, [])
    if not isinstance(value, list):
        raise Malformed(f"{where}.{camel}: expected a list, not {type(value).__name__}")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{where}: expected an object, not {type(value).__name__}")
    return value


def _json_id(value: Any, digits: int, where: str, optional: bool = False) -> int:
    if optional and value in (None, ""):
        return 0
    if not isinstance(value, str) or len(value) != digits:
        raise Malformed(f"{where}: expected {digits} hex digits, not {json.dumps(value)[:60]}")
    try:
        number = int(value, 16)
    except ValueError:
        raise Malformed(f"{where}: expected {digits} hex digits, not {json.dumps(value)[:60]}") from None
    if number == 0:
        raise Malformed(f"{where}: an all-zero id is invalid")
    return number


def _json_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Malformed(f"{where}: expected an integer, not {json.dumps(value)[:60]}")
    try:
        return int(value)
    except ValueError:
        raise Malformed(f"{where}: expected an integer, not {json.dumps(value)[:60]}") from None


def _json_value(node: Any, where: str, depth: int = 0) -> Any:
    if depth > 16:
        raise Malformed(f"{where}: values nested more than 16 deep")
    node = _object(node, where)
    if "stringValue" in node or "string_value" in node:
        text = _field(node, "stringValue", "string_value")
        if not isinstance(text, str):
            raise Malformed(f"{where}.stringValue: expected a string")
        return _cut(text)
    if "intValue" in node or "int_value" in node:
        return _json_int(_field(node, "intValue", "int_value"), f"{where}.intValue")
    if "boolValue" in node or "bool_value" in node:
        return bool(_field(node, "boolValue", "bool_value"))
    if "doubleValue" in node or "double_value" in node:
        number = _field(node, "doubleValue", "double_value")
        if isinstance(number, bool) or not isinstance(number, int | float | str):
            raise Malformed(f"{where}.doubleValue: expected a number")
        try:
            return float(number)
        except ValueError:
            raise Malformed(f"{where}.doubleValue: expected a number") from None
    if "arrayValue" in node or "array_value" in node:
        array = _object(_field(node, "arrayValue", "array_value"), f"{where}.arrayValue")
        values = _list(array, "values", "values", f"{where}.arrayValue")
        return [_json_value(v, f"{where}.arrayValue.values[{i}]", depth + 1) for i, v in enumerate(values)]
    if "kvlistValue" in node or "kvlist_value" in node:
        kvlist = _object(_field(node, "kvlistValue", "kvlist_value"), f"{where}.kvlistValue")
        return _json_attributes(_list(kvlist, "values", "values", f"{where}.kvlistValue"), where, depth + 1)
    if "bytesValue" in node or "bytes_value" in node:
        return str(_field(node, "bytesValue", "bytes_value"))
    return None


def _json_attributes(items: list[Any], where: str, depth: int = 0) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, item in enumerate(items):
        item = _object(item, f"{where}.attributes[{i}]")
        key = item.get("key")
        if not isinstance(key, str):
            raise Malformed(f"{where}.attributes[{i}].key: expected a string")
        if len(attributes) < MAX_ATTRIBUTES:
            attributes[key] = _json_value(item.get("value", {}), f"{where}.attributes[{i}].value", depth)
    return attributes


def decode_json(body: bytes) -> list[Span]:
    """The spans of an ``ExportTraceServiceRequest`` in the OTLP JSON encoding."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"not JSON ({exc})") from None
    data = _object(data, "body")
    spans = []
    for r, resource in enumerate(_list(data, "resourceSpans", "resource_spans", "body")):
        where_r = f"resourceSpans[{r}]"
        resource = _object(resource, where_r)
        for s, scope in enumerate(_list(resource, "scopeSpans", "scope_spans", where_r)):
            where_s = f"{where_r}.scopeSpans[{s}]"
            for n, span in enumerate(_list(_object(scope, where_s), "spans", "spans", where_s)):
                spans.append(_from_json(_object(span, f"{where_s}.spans[{n}]"), f"{where_s}.spans[{n}]"))
    return spans


def _from_json(node: dict[str, Any], where: str) -> Span:
    attributes = _json_attributes(_list(node, "attributes", "attributes", where), where)
    status = _object(node.get("status") or {}, f"{where}.status")
    code = status.get("code", UNSET)
    code = _STATUS_NAMES.get(code, UNSET) if isinstance(code, str) else code
    if code not in (UNSET, OK, ERROR):
        code = UNSET
    message = status.get("message") or ""
    if not isinstance(message, str):
        raise Malformed(f"{where}.status.message: expected a string")
    if code == ERROR and not message:
        events = []
        for i, event in enumerate(_list(node, "events", "events", where)):
            event = _object(event, f"{where}.events[{i}]")
            items = _list(event, "attributes", "attributes", f"{where}.events[{i}]")
            events.append((event.get("name"), _json_attributes(items, f"{where}.events[{i}]")))
        message = _exception(events)
    name = node.get("name", "")
    if not isinstance(name, str):
        raise Malformed(f"{where}.name: expected a string")
    start = _json_int(_field(node, "startTimeUnixNano", "start_time_unix_nano", 0), f"{where}.startTimeUnixNano")
    end = _json_int(_field(node, "endTimeUnixNano", "end_time_unix_nano", 0), f"{where}.endTimeUnixNano")
    return Span(
        _json_id(_field(node, "traceId", "trace_id"), 32, f"{where}.traceId"),
        _json_id(_field(node, "spanId", "span_id"), 16, f"{where}.spanId"),
        _json_id(_field(node, "parentSpanId", "parent_span_id"), 16, f"{where}.parentSpanId", optional=True),
        _cut(name),
        start,
        end or start,
        code,
        _cut(message),
        attributes,
        _size(attributes),
    )
