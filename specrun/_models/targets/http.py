"""The ``http`` target: POST each turn to an agent's HTTP endpoint.

``format: openai`` sends a chat-completions request and reads the reply as one; ``format:
template`` fills a JSON body template and picks the answer out with JMESPath. One aiohttp
session per target (0.25 CPU-ms per call, measured; see DESIGN.md), created in the running loop.
A reply is read within ``Target.reply_limit`` (64 MiB): past it the case is an ``error``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote, urlsplit

import jmespath
from jmespath.exceptions import JMESPathError

from ..._core.data import Context, Message, Response, ToolCall, parse_duration, to_json
from ..._core.errors import TargetError
from ..._core.kinds import Session, Target
from ..._core.redact import redact
from ..._core.redact import register as register_secret
from ..bounded_read import ReplyTooLarge, read_body
from ..limiter import LIMITERS, endpoint_key, retry_after
from ..wire import excerpt, openai_messages, parse_openai_reply, parse_tool_call

if TYPE_CHECKING:  # aiohttp costs ~0.2 s to import: only runs that call an http target pay it
    import aiohttp

# Headers that carry credentials: their values are masked even when written out in the config.
_CREDENTIAL_HEADER = re.compile(r"auth|cookie|key|token|secret|passw", re.I)
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
VARIABLES = (
    *("input", "messages", "user", "team", "locale", "case_id", "run"),
    *("client_type", "client_ip", "referer", "accept"),
)
MAX_RETRY_WAIT = 60.0


def _variable(name: str, messages: list[Message], context: Context) -> Any:
    if name == "input":
        return next((m.text for m in reversed(messages) if m.role == "user"), "")
    if name == "messages":
        return openai_messages(messages)
    if name == "run":
        return context.run
    return getattr(context, name)


def compile_template(node: Any) -> Callable[[Callable[[str], Any]], Any]:
    """A function filling ``node``'s placeholders from ``lookup(name)``; built once per target.

    A string that is exactly one placeholder takes the value with its type (``"{{messages}}"``
    becomes a list); placeholders inside longer strings are replaced by text.
    """
    if isinstance(node, dict):
        items = [(k, compile_template(v)) for k, v in node.items()]
        return lambda lookup: {k: fill(lookup) for k, fill in items}
    if isinstance(node, list):
        fills = [compile_template(v) for v in node]
        return lambda lookup: [fill(lookup) for fill in fills]
    if isinstance(node, str) and _PLACEHOLDER.search(node):
        whole = _PLACEHOLDER.fullmatch(node.strip())
        if whole:
            name = whole.group(1)
            return lambda lookup: lookup(name)

        def text(lookup: Callable[[str], Any]) -> str:
            def one(match: re.Match[str]) -> str:
                value = lookup(match.group(1))
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

            return _PLACEHOLDER.sub(one, node)

        return text
    return lambda lookup: node  # constants are shared: the body is only serialised


def placeholders(node: Any) -> set[str]:
    """The placeholder names used anywhere in a template."""
    if isinstance(node, dict):
        return set().union(*(placeholders(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(placeholders(v) for v in node))
    return set(_PLACEHOLDER.findall(node)) if isinstance(node, str) else set()


def _retry_wait(headers: Any, attempt: int) -> float:
    asked = retry_after(headers)
    return min(asked, MAX_RETRY_WAIT) if asked is not None else min(0.5 * 2**attempt, 8.0)


class HttpTarget(Target):
    """POSTs the conversation to ``url``; stateless (the whole history on every call)."""

    env_fields = ("url", "headers", "body")
    name = "http"
    mock_tools = True  # its agent finds the case's mocked tools (docs/suite-format.md#mocked-tools)
    description = "An agent behind an HTTP endpoint: OpenAI chat-completions, or a JSON body template."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "description": "Where to POST each turn; ${NAME} is replaced by environment variable NAME.",
            },
            "format": {
                "enum": ["openai", "template"],
                "description": "Request/reply shape (default openai).",
            },
            "model": {"type": "string", "description": "openai format: the request's model field."},
            "body": {
                "description": "template format: the JSON body, with {{input}}, {{messages}}, "
                "{{user}}, {{team}}, {{locale}}, {{client_type}}, {{client_ip}}, {{referer}}, {{accept}}, "
                "{{case_id}}, {{run}} placeholders. openai format: extra request fields (temperature, ...). "
                "${NAME}: environment variable NAME.",
            },
            "output": {
                "type": "string",
                "description": "template format: JMESPath to the answer (default: whole reply).",
            },
            "tool_calls": {
                "type": "string",
                "description": "template format: JMESPath to a list of {name, arguments}.",
            },
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Request headers; ${NAME} is replaced by environment variable NAME.",
            },
            "timeout": {
                "$ref": "#/$defs/duration",
                "description": "Per request (default: none; the case timeout applies).",
            },
            "retries": {
                "type": "integer",
                "minimum": 0,
                "description": "Retries on 429 and 5xx (default 0).",
            },
            "max_connections": {
                "type": "integer",
                "minimum": 0,
                "description": "Connection pool size; 0 = unlimited (default).",
            },
        },
        "required": ["url"],
    }

    @classmethod
    def from_spec(cls, spec: str) -> dict[str, Any] | None:
        return {"url": spec} if spec.startswith(("http://", "https://")) else None

    def __init__(self, config: dict[str, Any], base_dir: Any):
        super().__init__(config, base_dir)
        config = self.config  # ${NAME} replaced
        self.url: str = config["url"]
        self._invalid: list[tuple[str, str]] = []
        try:
            self._endpoint = endpoint_key(self.url)
        except ValueError as exc:  # "http://[::1": bad input, reported by problems()
            self._endpoint = self.url
            self._invalid.append(("url", f"invalid url {self.url!r}: {exc}"))
        self.format: str = config.get("format", "openai")
        self.retries: int = config.get("retries", 0)
        timeout = config.get("timeout")
        self.timeout: float | None = parse_duration(timeout) if timeout is not None else None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._headers: dict[str, str] = {"Content-Type": "application/json", **(config.get("headers") or {})}
        self._register_credentials()
        body = config.get("body")
        self._extra = body if self.format == "openai" and isinstance(body, dict) else {}
        self._fill = compile_template(body) if self.format == "template" else None
        self._needs = placeholders(body) & set(VARIABLES) if self.format == "template" else set()
        self._output = self._compile("output")
        self._tool_calls = self._compile("tool_calls")

    def _compile(self, key: str) -> Any:
        # Compiled once: a per-call jmespath.search would re-parse the expression every time.
        expression = self.config.get(key)
        if self.format != "template" or not expression:
            return None
        try:
            return jmespath.compile(expression)
        except JMESPathError as exc:
            self._invalid.append((key, f"invalid JMESPath {expression!r}: {exc}"))
            return None

    def _register_credentials(self) -> None:
        """Mask what the requests carry as credentials, however it was written in the config:
        an echoing endpoint (a 401 page quoting the request) must not leak it."""
        for name, value in self._headers.items():
            if _CREDENTIAL_HEADER.search(name) and value.strip():
                register_secret(value, f"headers.{name}")
                register_secret(value.split()[-1], f"headers.{name}")  # the token after "Bearer"
        try:
            parts = urlsplit(self.url)
        except ValueError:  # a malformed url: problems() says so
            return
        if parts.password:  # sent as a Basic authorization header as well
            user, password = unquote(parts.username or ""), unquote(parts.password)
            register_secret(password, "url password")
            register_secret(base64.b64encode(f"{user}:{password}".encode()).decode(), "url password")

    def problems(self) -> Iterable[tuple[str, str]]:
        yield from super().problems()
        if not self.url.startswith(("http://", "https://")):
            yield "url", f"url must start with http:// or https://, not {self.url!r}"
        if self.format == "template":
            if "body" not in self.config:
                yield "body", "format: template needs a body"
            unknown = sorted(placeholders(self.config.get("body")) - set(VARIABLES))
            if unknown:
                yield (
                    "body",
                    f"unknown placeholder {{{{{unknown[0]}}}}} (known: {', '.join(VARIABLES)})",
                )
        else:
            for key in ("output", "tool_calls"):
                if key in self.config:
                    yield key, f"{key} applies to format: template only"
            if "body" in self.config and not isinstance(self.config["body"], dict):
                yield "body", "with format: openai, body must be a mapping of extra request fields"
        yield from self._invalid

    def session(self, context: Context) -> Session:
        # aiohttp is imported here, before the runner starts the case's clock: importing it
        # takes 0.1-0.4 s, which would count toward the first cases' timeout and latency (a
        # 500 ms timeout failed them on a loaded machine).
        import aiohttp  # noqa: F401

        return super().session(context)

    def client(self) -> aiohttp.ClientSession:
        """The shared session, (re)created in the running loop (the pytest API may use several)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(limit=self.config.get("max_connections", 0), limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout)
            )
            self._loop = loop
        return self._session

    def request_body(self, messages: list[Message], context: Context) -> Any:
        """The JSON body for one call."""
        if self._fill is not None:
            values = {name: _variable(name, messages, context) for name in self._needs}
            # An unknown placeholder (reported by problems()) stays as written.
            return self._fill(lambda name: values.get(name, f"{{{{{name}}}}}"))
        body: dict[str, Any] = {**self._extra, "messages": openai_messages(messages)}
        if "model" in self.config:
            body["model"] = self.config["model"]
        return body

    async def respond(self, messages: list[Message], context: Context) -> Response:
        if self._invalid:
            raise TargetError(f"target {self._invalid[0][0]}: {self._invalid[0][1]}")
        data = to_json(self.request_body(messages, context)).encode()
        headers = self._headers  # a traced case's request carries its W3C trace context, a mocked one its MCP URL
        if context.trace is not None:
            headers = {**headers, "traceparent": context.trace.traceparent}
        if context.mcp_url is not None:  # the MCP server of the case's mocked tools (tools:)
            headers = {**headers, "X-Specrun-MCP-URL": context.mcp_url}
        start = time.perf_counter()
        payload, queued = await self._post(data, headers)
        latency = (time.perf_counter() - start - queued) * 1000  # the agent's time, not the queue's
        try:
            reply = json.loads(payload)
        except ValueError:
            raise TargetError(f"invalid JSON from agent: {excerpt(payload)}") from None
        response = parse_openai_reply(reply) if self._fill is None else self._parse_template(reply)
        response.latency_ms = latency
        return response

    async def _post(self, data: bytes, headers: dict[str, str]) -> tuple[bytes, float]:
        """The reply body, and the seconds spent waiting for a slot of the endpoint's limiter."""
        import aiohttp

        session = self.client()
        # Shared by every target calling this endpoint: 429s halve the calls in flight.
        limiter = LIMITERS.get(self._endpoint, self.config.get("max_connections") or None)
        attempt, queued = 0, 0.0
        while True:
            try:
                async with limiter.slot() as slot, session.post(self.url, data=data, headers=headers) as reply:
                    queued += slot.waited
                    status, reply_headers = reply.status, reply.headers
                    slot.report(status)
                    payload = await read_body(reply, self.reply_limit)  # a 2 GB body must not fill memory
            except ReplyTooLarge as exc:  # leaving the request closed its connection: the rest is never read
                raise TargetError(f"{exc} from {self.url}") from None
            except TimeoutError:  # before ClientError: aiohttp's timeouts are both
                raise TargetError(f"no reply from {self.url} within {self.timeout}s") from None
            except aiohttp.ClientError as exc:
                raise TargetError(f"connection to {self.url} failed: {type(exc).__name__}: {exc}") from None
            if 200 <= status < 300:
                return payload, queued
            if attempt < self.retries and (status == 429 or status >= 500):
                await asyncio.sleep(_retry_wait(reply_headers, attempt))
                attempt += 1
                continue
            # Key-shaped text too: an endpoint may echo credentials that specrun never saw.
            shown = excerpt(redact(payload.decode("utf-8", "replace"), keys=True))
            raise TargetError(f"HTTP {status} from {self.url}: {shown}")

    def _parse_template(self, reply: Any) -> Response:
        content = self._output.search(reply) if self._output is not None else reply
        if content is None:
            raise TargetError(
                f"output expression {self.config['output']!r} found nothing in the reply: {excerpt(json.dumps(reply))}"
            )
        if self._tool_calls is None:  # the reply's calls are not known: a tool assertion is an error, not a pass
            return Response(content=content, raw=reply)
        found = self._tool_calls.search(reply)  # nothing there: no tool was called, as in an OpenAI reply
        if found is not None and not isinstance(found, list):
            raise TargetError(
                f"tool_calls expression {self.config['tool_calls']!r} gave {type(found).__name__}, not a list"
            )
        return Response(content=content, tool_calls=[_template_call(call) for call in found or []], raw=reply)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _template_call(call: Any) -> ToolCall:
    """A ``{name, arguments, id, status, step}`` object a ``tool_calls`` expression found."""
    if not isinstance(call, dict):
        raise TargetError(f"a tool call is not an object: {excerpt(json.dumps(call))}")
    found = parse_tool_call(call.get("name"), call.get("arguments"), call.get("id"))
    status, step = call.get("status"), call.get("step")
    if status is not None and status not in ("ok", "error"):
        raise TargetError(f"tool call {found.name!r} has status {status!r}: a status is 'ok' or 'error'")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise TargetError(f"tool call {found.name!r} has step {step!r}: a step is an integer")
    found.status, found.step = status, step
    return found
