"""The ``mcp`` target: an MCP server under test, each case one call of one of its tools.

``command`` starts the server as a child process speaking stdio; ``url`` reaches one over
streamable HTTP. One server (one connection) serves the whole run: its tools are listed when
the target is first asked about a case, before anything runs, so that an unknown tool or
arguments its ``inputSchema`` refuses stop the run (exit 2) at the case's line. A case's
``input: {tool, arguments}`` is the call; the reply is the tool result: its structured
content as the JSON output, else its text; the call itself is the response's one tool call,
and its ``state`` is ``ok``, or ``error`` for a result with ``isError`` (which fails a case that
does not check the state: see the ``state`` assertion). The official SDK (``pip install
'specrun[mcp]'``) is imported only when an mcp target connects.
"""

from __future__ import annotations

import difflib
import importlib.util
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from specrun.plugin import (
    Case,
    Context,
    Message,
    Response,
    Session,
    Target,
    TargetError,
    ToolCall,
    parse_duration,
    shorten,
)

from ._mcp_connection import Connection, Server
from .process import GRACE_SECONDS, command_argv, command_problems

START_TIMEOUT = 30.0
MISSING_SDK = "the mcp target needs the MCP SDK: pip install 'specrun[mcp]'"


class McpTarget(Target):
    """An MCP server: ``command`` (stdio) or ``url`` (streamable HTTP); see the module docstring."""

    name = "mcp"
    env_fields = ("env", "url", "headers")
    success_states = ("ok",)
    label_params = ("url", "command")
    description = "An MCP server: each case calls one of its tools (command: stdio; url: streamable HTTP)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "command": {
                "description": "The server's command (stdio): a list, or a string split like a shell does.",
                "type": ["string", "array"],
                "minLength": 1,
                "minItems": 1,
                "items": {"type": "string"},
            },
            "cwd": {"type": "string", "description": "The server's working folder, relative to the agent file."},
            "env": {
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]},
                "description": "Extra environment variables of the server; ${NAME} is replaced by variable NAME.",
            },
            "url": {"type": "string", "description": "The server's streamable HTTP endpoint (http://host:port/mcp)."},
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "HTTP headers of every request; ${NAME} is replaced by variable NAME (masked).",
            },
            "start_timeout": {
                "$ref": "#/$defs/duration",
                "description": "Longest wait for the server to start and list its tools (default 30s).",
            },
            "grace": {
                "$ref": "#/$defs/duration",
                "description": "When the run ends, how long the server gets between SIGTERM and SIGKILL (default 2s).",
            },
        },
    }

    def __init__(self, config: dict[str, Any], base_dir: Path):
        super().__init__(config, base_dir)
        config = self.config  # ${NAME} replaced
        self.argv = command_argv(config["command"]) if "command" in config else None
        self.cwd = (Path(base_dir) / config.get("cwd", ".")).resolve()
        env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.get("env", {}).items()}
        self.server = Server(
            argv=self.argv,
            cwd=str(self.cwd),
            env=env,
            url=config.get("url"),
            headers=dict(config.get("headers") or {}),
            grace=parse_duration(config.get("grace", GRACE_SECONDS)),
            label=" ".join(map(str, c)) if isinstance(c := config.get("command"), list) else str(c or ""),
        )
        self.start_timeout = parse_duration(config.get("start_timeout", START_TIMEOUT))
        self._connection: Connection | None = None
        self._validators: dict[str, Any] = {}  # each tool's inputSchema, compiled (or why it cannot be)

    def problems(self) -> Iterable[tuple[str, str]]:
        yield from super().problems()
        if ("command" in self.config) == ("url" in self.config):
            yield "command", "give the server's command (stdio) or its url (streamable HTTP), one of them"
        elif self.argv is not None:
            yield from command_problems(self.argv, self.cwd, self.server.env)
        elif urlsplit(str(self.server.url)).scheme not in ("http", "https") and not self.unset_env:
            yield "url", f"url {self.server.url!r} must start with http:// or https://"
        if "headers" in self.config and self.argv is not None:
            yield "headers", "headers are sent to a url; a command's server speaks stdio"
        if importlib.util.find_spec("mcp") is None:  # the optional extra: its absence is bad input
            yield "type", MISSING_SDK

    def connection(self) -> Connection:
        """The run's connection to the server, started on first use."""
        if self._connection is None:
            self._connection = Connection(self.server, self.start_timeout)
            self._connection.start()
        return self._connection

    # -- before the run ---------------------------------------------------------------------------

    def case_problems(self, case: Case) -> Iterable[tuple[str, str]]:
        """The case's input must be one call of a tool the server lists, with arguments its
        ``inputSchema`` accepts. A server that cannot be reached raises ``TargetError``: the
        run goes on and each case is an ``error`` saying why."""
        call = case.input[-1].tool_request if len(case.input) == 1 else None
        if case.dynamic:
            yield "simulator", "an mcp target answers one tool call per case; a simulated conversation needs an agent"
            return
        if call is None:
            yield "input", "an mcp target takes one tool call as input: {tool: NAME, arguments: {...}}"
            return
        tools = self.connection().tools()
        tool = tools.get(call.name)
        if tool is None:
            yield "input.tool", _unknown(call.name, sorted(tools), self.server.where)
            return
        if call.name not in self._validators:  # built once per tool: a suite may call one tool 10,000 times
            self._validators[call.name] = _validator(tool.input_schema, call.name)
        yield from _argument_problems(call.arguments, self._validators[call.name], call.name)

    def catalog(self) -> str:
        """The server's tools, one per line: ``name(arg: type, optional?: type)  description``."""
        tools = self.connection().tools()
        lines = [f"{self.server.where}: {len(tools)} tools"]
        for name, tool in sorted(tools.items()):
            lines.append(f"  {_signature(name, tool.input_schema)}")
            if tool.description:
                lines.append(f"      {shorten(' '.join(tool.description.split()), 200)}")
        return "\n".join(lines)

    # -- the run ----------------------------------------------------------------------------------

    def session(self, context: Context) -> Session:
        return McpSession(self)

    async def respond(self, messages: list[Message], context: Context) -> Response:
        return await self.session(context).send(messages)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.aclose()


class McpSession(Session):
    """One case: its one tool call, on the run's connection."""

    def __init__(self, target: McpTarget):
        self.target = target

    async def send(self, messages: list[Message]) -> Response:
        call = messages[-1].tool_request if messages else None
        if call is None:
            raise TargetError("an mcp target takes a tool call as input: {tool: NAME, arguments: {...}}")
        started = time.perf_counter()
        result = await self.target.connection().call(call.name, call.arguments)
        return tool_response(call, result, (time.perf_counter() - started) * 1000)


def tool_response(call: ToolCall, result: Any, latency_ms: float) -> Response:
    """A ``CallToolResult`` as specrun's response: structured content as the output (JSON),
    else the text blocks joined (or, with neither, the content blocks); ``isError``: the text,
    state ``error``. The call is the response's one tool call, with that result and status."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    blocks = dumped.get("content") or []
    text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    failed = bool(result.is_error)
    output: Any = text
    if not failed and result.structured_content is not None:
        output = dumped.get("structuredContent")
    elif not text and blocks:
        output = blocks  # images, audio, resources: the blocks as they came
    made = ToolCall(call.name, call.arguments, result=output, status="error" if failed else "ok", step=1, turn=1)
    return Response(content=output, tool_calls=[made], latency_ms=latency_ms, raw=dumped, state=made.status)


def _unknown(name: str, known: list[str], where: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listed = ", ".join(known[:30]) + (", ..." if len(known) > 30 else "") if known else "none"
    return f"unknown tool {name!r}{hint}; the tools of {where}: {listed}"


def _validator(schema: dict[str, Any], tool: str) -> Any:
    """The tool's ``inputSchema`` compiled, or (a ``str``) why it cannot be."""
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(schema)
    except Exception as exc:  # the server's schema, not the user's mistake: say so, check nothing
        return f"tool {tool!r} has an input schema that cannot be used ({exc}); fix the server"


def _argument_problems(arguments: dict[str, Any], validator: Any, tool: str) -> Iterator[tuple[str, str]]:
    """What the tool's ``inputSchema`` says is wrong with ``arguments``, each at its field."""
    if isinstance(validator, str):
        yield "input.arguments", validator
        return
    for error in validator.iter_errors(arguments):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path)
        yield f"input.arguments{path}", f"tool {tool!r}: {error.message}"


def _signature(name: str, schema: dict[str, Any]) -> str:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args = []
    for arg, spec in properties.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        kind = "|".join(kind) if isinstance(kind, list) else kind
        args.append(f"{arg}{'' if arg in required else '?'}: {kind}")
    return f"{name}({', '.join(args)})"
