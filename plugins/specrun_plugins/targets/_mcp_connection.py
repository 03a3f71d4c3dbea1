"""One connection to an MCP server for a run, on an event loop of its own (the ``mcp`` target's).

The server's tools must be known before the run (each case's tool and arguments are checked
then, synchronously, while the run's own loop may already be running), and the run's cases then
call them on the same server: so the connection lives in a daemon thread with its own loop,
started once, and every call is handed to that loop (``asyncio.run_coroutine_threadsafe``;
cancelling the awaiting task, as a case timeout does, cancels the call there).

A stdio server is started here, not by the SDK's ``stdio_client``, so that it is an agent
process like the ``process`` target's: its own process group with specrun's tag, stopped with
everything it started (:class:`specrun.plugin.ProcessTree`), its stderr kept for error messages,
and its stdout read a line at a time within ``MESSAGE_LIMIT`` (an overlong line fails its call).
The ``mcp`` package is imported only in this thread's functions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from specrun.plugin import ProcessTree, TargetError, shorten

from ._bounds import MESSAGE_LIMIT, bounded_client, over_bound

STDERR_LIMIT = 16384
CLOSE_WAIT = 10.0  # seconds a closing connection may take (the server's grace included)


@dataclass
class Server:
    """How to reach the server: ``argv`` (stdio) or ``url`` (streamable HTTP)."""

    argv: list[str] | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    grace: float = 2.0
    label: str = ""  # the command as the config wrote it

    @property
    def where(self) -> str:
        return f"MCP server {self.url}" if self.url else f"MCP server {self.label or ' '.join(self.argv or [])!r}"


class Connection:
    """``start()`` it, ``tools()`` (blocking) or ``await call(name, arguments)``, ``close()``."""

    def __init__(self, server: Server, start_timeout: float):
        self.server = server
        self.start_timeout = start_timeout
        self._ready: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._thread: threading.Thread | None = None
        self._stderr = bytearray()
        self._exit: Callable[[], int | None] = lambda: None
        self._proc: asyncio.subprocess.Process | None = None

    def start(self) -> None:
        """Start connecting, in the background (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, daemon=True, name="specrun-mcp")
            self._thread.start()

    def tools(self) -> dict[str, Any]:
        """The server's tools by name (``mcp.types.Tool``), waiting for the connection;
        ``TargetError`` when the server could not be reached in ``start_timeout``."""
        self.start()
        try:
            return self._ready.result(self.start_timeout + CLOSE_WAIT)
        except concurrent.futures.TimeoutError:
            raise TargetError(self._failure("did not answer")) from None

    async def atools(self) -> dict[str, Any]:
        """``tools()`` without blocking the calling loop."""
        self.start()
        return await asyncio.wrap_future(self._ready)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The ``CallToolResult`` of one call, awaited from any loop."""
        await self.atools()
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._call(name, arguments), self._loop)
        return await asyncio.wrap_future(future)

    async def aclose(self) -> None:
        """Close the connection and stop the server (its whole process tree)."""
        if self._signal_stop():
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.wrap_future(self._done), CLOSE_WAIT)

    def close(self) -> None:
        """``aclose`` for a caller without a loop (``specrun validate``)."""
        if self._signal_stop():
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                self._done.result(CLOSE_WAIT)

    def _signal_stop(self) -> bool:
        if self._thread is None:
            return False
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                loop.call_soon_threadsafe(stop.set)
        return True

    # -- on the connection's own loop -----------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # the thread must settle both futures, whatever happened
            if not self._ready.done():
                self._ready.set_exception(TargetError(self._failure(f"failed ({type(exc).__name__}: {exc})")))
        finally:
            if not self._done.done():
                self._done.set_result(None)

    async def _serve(self) -> None:
        from mcp import Client

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.start_timeout):
                    transport = self._stdio() if self.server.argv else await self._http(stack)
                    self._client = await stack.enter_async_context(Client(transport))
                    tools = await self._list_tools()
            except TimeoutError:
                what = f"did not answer within {self.start_timeout:g}s (start_timeout)"
                self._ready.set_exception(TargetError(self._failure(what, exited=False)))
                return
            except Exception as exc:
                inner = _unwrap(exc)
                failure = inner if isinstance(inner, TargetError) else TargetError(self._failure(_reason(inner)))
                self._ready.set_exception(failure)
                return
            self._ready.set_result(tools)
            await self._stop.wait()

    async def _list_tools(self) -> dict[str, Any]:
        tools: dict[str, Any] = {}
        cursor = None
        for _ in range(1000):  # a server whose pages never end cannot hang the start
            page = await self._client.list_tools(cursor=cursor)
            tools.update((tool.name, tool) for tool in page.tools)
            if not (cursor := page.next_cursor):
                break
        return tools

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        try:
            return await self._client.call_tool(name, arguments)
        except Exception as exc:
            proc = self._proc
            if proc is not None and proc.stdout is not None and proc.stdout.at_eof():
                # a server that went away: its exit code says more than the SDK's error (one
                # that is still there, refusing a reply past the bound, is not waited for)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 1.0)
            raise TargetError(self._failure(_reason(_unwrap(exc)), f"on tools/call {name}")) from None

    async def _http(self, stack: contextlib.AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # The SDK logs a reply it refuses (one past the bound) with its traceback; the case's
        # error says it, so without a logging setup of the user's nothing reaches stderr.
        if not (sdk := logging.getLogger("mcp")).handlers:
            sdk.addHandler(logging.NullHandler())
        # The SDK's own timeouts (30 s, 300 s to read a stream); the case timeout comes first.
        timeout = httpx2.Timeout(30.0, read=300.0)
        http = await stack.enter_async_context(bounded_client(httpx2, headers=self.server.headers, timeout=timeout))
        # One SSE event is one message: the same bound as a stdio line (the SDK's default is 1 MiB).
        return streamable_http_client(str(self.server.url), http_client=http, max_sse_event_size=MESSAGE_LIMIT)

    @contextlib.asynccontextmanager
    async def _stdio(self) -> AsyncIterator[tuple[Any, Any]]:
        """The server process, its stdout and stdin as the SDK's message streams."""
        import anyio
        import mcp_types
        from mcp.shared.message import SessionMessage

        server, tree = self.server, ProcessTree()
        assert server.argv
        try:
            proc = await asyncio.create_subprocess_exec(
                *server.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=server.cwd,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **server.env, **tree.env},
                start_new_session=hasattr(os, "killpg"),
                limit=MESSAGE_LIMIT,  # one JSON-RPC message per line
            )
        except OSError as exc:
            raise TargetError(f"cannot start {server.where}: {exc}") from None
        tree.started(proc.pid)
        self._proc, self._exit = proc, lambda: proc.returncode
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
        to_session, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_session = anyio.create_memory_object_stream[Any](0)

        pending: set[Any] = set()  # the ids of requests sent and not answered yet

        async def read() -> None:
            async with to_session:
                with contextlib.suppress(asyncio.IncompleteReadError):  # the server's stdout closed
                    while line := await next_line():
                        try:
                            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            await to_session.send(exc)
                            continue
                        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
                            pending.discard(message.id)
                        await to_session.send(SessionMessage(message))

        async def next_line() -> bytes:
            """The next line within the bound. A longer one is dropped, never held whole, and
            fails the call it answers (every call in flight, when its first bytes do not say)."""
            while True:
                try:
                    return await stdout.readuntil(b"\n")
                except asyncio.IncompleteReadError as end:
                    if end.partial:  # a last line without its newline
                        return end.partial
                    raise
                except asyncio.LimitOverrunError as over:
                    head = await drop(over.consumed)
                    message = over_bound(over.consumed, "read without a newline")
                    failure = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=message)
                    for request in _answered(head, pending):
                        pending.discard(request)
                        reply = mcp_types.JSONRPCError(jsonrpc="2.0", id=request, error=failure)
                        await to_session.send(SessionMessage(reply))
                    await skip()

        async def skip() -> None:
            """Drop the rest of an overlong line, at most the bound at a time."""
            while True:
                try:
                    await stdout.readuntil(b"\n")
                    return
                except asyncio.LimitOverrunError as over:
                    await drop(over.consumed)

        async def drop(count: int) -> bytes:
            """Drop ``count`` buffered bytes a MiB at a time (never copied whole); the first ones."""
            head = b""
            while count > 0 and (chunk := await stdout.read(min(count, 2**20))):
                head, count = head or chunk[:256], count - len(chunk)
            return head

        async def write() -> None:
            async with from_session:
                async for item in from_session:
                    if isinstance(item.message, mcp_types.JSONRPCRequest):
                        pending.add(item.message.id)
                    stdin.write(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                    await stdin.drain()

        drained = anyio.Event()

        async def drain() -> None:
            try:
                while chunk := await stderr.read(4096):
                    self._stderr += chunk
                    if len(self._stderr) > STDERR_LIMIT:  # bounded: a chatty server cannot fill memory
                        del self._stderr[: len(self._stderr) - STDERR_LIMIT]
            finally:
                drained.set()

        async with anyio.create_task_group() as tasks:
            for work in (read, write, drain):
                tasks.start_soon(_quietly, work)
            try:
                yield from_server, to_server
            finally:
                with anyio.CancelScope(shield=True):
                    # MCP's shutdown for stdio: close its input, let it exit, then end it (and
                    # everything it started) as an agent process is ended.
                    with contextlib.suppress(OSError):
                        stdin.close()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(proc.wait(), server.grace)
                    await tree.end(proc, server.grace)
                    with anyio.move_on_after(1.0):  # its last words, for the error message
                        await drained.wait()
                tasks.cancel_scope.cancel()

    def _failure(self, what: str, when: str = "at start", exited: bool = True) -> str:
        code = self._exit()
        if code is not None and exited:  # not when it was ended for not answering
            what = f"exited with code {code}"
        tail = shorten(self._stderr.decode("utf-8", "replace").strip()[-500:], 500)
        return f"{self.server.where} {what} {when}" + (f"; stderr: {tail!r}" if tail else "")


async def _quietly(work: Callable[[], Awaitable[None]]) -> None:
    """A pipe task: a pipe that breaks as the server exits ends it, not the connection."""
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        await work()


_ANSWER = re.compile(rb'\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]*")')


def _answered(head: bytes, pending: set[Any]) -> set[Any]:
    """The request an overlong line answers when its first bytes say (as the Python SDK writes a
    reply: ``{"jsonrpc":"2.0","id":...``), else every request in flight."""
    match = _ANSWER.match(head, 0, 256)
    request = json.loads(match[1]) if match else None
    return {request} if request in pending else set(pending)


def _unwrap(exc: BaseException) -> BaseException:
    """The first error inside the nested groups the SDK's task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"failed ({type(exc).__name__}{': ' + text if text else ''})"
