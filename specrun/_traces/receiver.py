"""specrun's OTLP/HTTP trace receiver: ``POST /v1/traces`` on a loopback address, protobuf or
JSON bodies (gzip or deflate encoded too), answered as OTLP says.

The socket is bound when the receiver is made (``Receiver.bind``: a busy port is bad input,
found before any case) and served from the run's event loop once it runs (``start``). A body
that is not OTLP is answered ``400`` with an OTLP ``Status`` saying why, one over
``MAX_BODY`` bytes ``413``; both are counted on the router and never reach a case.
"""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

from .._core.errors import UsageError
from .._core.listening import Listener
from .collector import Router
from .spans import Malformed, decode_json, decode_protobuf

if TYPE_CHECKING:
    from aiohttp import web

MAX_BODY = 16 * 1024 * 1024  # after decompression (aiohttp inflates request bodies itself)
PROTOBUF = ("application/x-protobuf", "application/protobuf")
INVALID_ARGUMENT = 3  # google.rpc.Code


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:4318`` for IPv6) as a host and a port; ``UsageError`` when not one."""
    host, sep, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"traces: receiver {address!r} is not host:port (e.g. 127.0.0.1:4318)")
    return host, int(port)


def _status(message: str) -> bytes:
    """A ``google.rpc.Status`` with code INVALID_ARGUMENT and ``message``, in protobuf."""
    text = message.encode()
    size, length = len(text), bytearray()
    while True:  # a varint
        length.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    return bytes([0x08, INVALID_ARGUMENT, 0x12]) + bytes(length) + text


class Receiver(Listener):
    """One listening address; the spans it receives go to ``router``."""

    def __init__(self, host: str, port: int, router: Router):
        super().__init__()
        self.host, self.port, self.router = host, port, router

    @property
    def endpoint(self) -> str:
        """The base URL an exporter is given (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else "::1" if self.host == "::" else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def bind(self) -> None:
        """Listen on the address now; a busy port or an address not of this machine is a
        ``UsageError`` saying how to fix it."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            self.sock = socket.create_server((self.host, self.port), family=family)
        except OSError as exc:
            where = f"{self.host}:{self.port}"
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"traces: cannot listen for OTLP spans on {where}: the port is in use (an OpenTelemetry"
                    " collector or another specrun run?). Stop what listens there, or set another port in the"
                    " agent file (traces: {type: otel, receiver: 127.0.0.1:4319}) and point the agent's"
                    " exporter at it (OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4319)"
                ) from None
            raise UsageError(f"traces: cannot listen for OTLP spans on {where}: {exc.strerror or exc}") from None
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]  # port 0: the one the system chose

    async def start(self) -> None:
        """Serve the bound socket from the running event loop."""
        from aiohttp import web

        if self.sock is None:
            self.bind()
        assert self.sock is not None
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/v1/traces", self.handle)
        await self.serve(app)

    async def handle(self, request: web.Request) -> web.Response:
        from aiohttp import web

        protobuf = request.content_type in PROTOBUF
        if not protobuf and request.content_type != "application/json":
            self.router.rejected += 1
            return web.Response(status=415, text="OTLP/HTTP takes application/x-protobuf or application/json")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.router.rejected += 1
            raise
        try:
            spans = decode_protobuf(body) if protobuf else decode_json(body)
        except Malformed as exc:
            self.router.rejected += 1
            message = f"malformed OTLP trace data: {exc}"
            if protobuf:
                return web.Response(status=400, body=_status(message), content_type=PROTOBUF[0])
            return web.json_response({"code": INVALID_ARGUMENT, "message": message}, status=400)
        dropped = self.router.deliver(spans)
        return _accepted(protobuf, dropped)


def _accepted(protobuf: bool, dropped: int) -> web.Response:
    """The OTLP success reply; a partial success names the spans dropped for specrun's limits."""
    from aiohttp import web

    if not dropped:  # an empty ExportTraceServiceResponse: no bytes in protobuf, {} in JSON
        return web.Response(body=b"", content_type=PROTOBUF[0]) if protobuf else web.json_response({})
    why = "over specrun's per-case or per-run span limits"
    if not protobuf:
        return web.json_response({"partialSuccess": {"rejectedSpans": str(dropped), "errorMessage": why}})
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    reply = ExportTraceServiceResponse(
        partial_success=ExportTracePartialSuccess(rejected_spans=dropped, error_message=why)
    )
    return web.Response(body=reply.SerializeToString(), content_type=PROTOBUF[0])
