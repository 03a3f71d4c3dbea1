"""A small OpenAI-compatible chat-completions server on 127.0.0.1 with scripted replies.

Model-backed features are tested for real over HTTP against it (through litellm or aiohttp),
never by monkeypatching. It runs in a background thread, so sync tests, async tests and
``specrun`` subprocesses can all use it::

    with LLMServer() as server:
        server.script({"content": '{"passed": true, "score": 1, "reason": "ok"}'})
        server.script({"status": 429, "headers": {"retry-after": "0"}})
        ... use server.base_url ("http://127.0.0.1:PORT/v1") ...
        server.requests  # every JSON body received
        server.raw[0], server.headers[0]  # the first request's exact body text and its headers

A behaviour is a dict: ``content`` (str), ``tool_calls`` ([{name, arguments, id}], the id
``call_<i>`` unless given: a conversation's later replies need ids of their own), ``status`` and
``headers`` (an error reply), ``body`` (raw reply text), ``delay`` (seconds before replying),
``vectors`` (an ``/embeddings`` reply: one per input), ``hang`` (never reply), ``drop`` (close
the connection), ``usage`` (token counts), ``flood`` (that many bytes of body, a MiB at a time,
chunked as an endless reply is; with ``declared``, behind a Content-Length saying so).
Scripted behaviours are used in order; then ``responder(body)`` decides, else the reply echoes
the last user message. A ``content`` that is not a string (a verdict dict, say) is sent as its
JSON text.
``in_flight`` and ``max_in_flight`` count the requests being answered (hung ones
included), so tests can see how much concurrency a client really used.

Run as a script it serves until killed and prints its base URL; ``--faults 500=0.1,429=0.1,
hang=0.02 --seed 1 --delay 0.05 --jitter 0.05 --pad 4096`` injects faults at those rates and
pads the answers, ``--verdicts`` answers judge prompts with a passing verdict (benchmarks).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import web


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where installed: the server's own CPU per request must not be what a benchmark of
    specrun measures."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _bag_of_words(text: str, size: int = 64) -> list[float]:
    vector = [0.0] * size
    for word in re.findall(r"\w+", text.lower()):
        vector[sum(map(ord, word)) % size] += 1.0
    return vector


class LLMServer:
    """OpenAI-compatible loopback server; see the module docstring."""

    def __init__(self, responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None, delay: float = 0.0):
        self.responder = responder
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.raw: list[str] = []  # each request body exactly as it arrived
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: dict[str, Any]) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def unscript(self) -> None:
        """Drop the scripted behaviours not used yet."""
        with self._lock:
            self._script.clear()

    def _next(self, body: dict[str, Any], raw: str, headers: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self.raw.append(raw)
            self.headers.append(headers)
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return {"content": f"echo: {_last_user_text(body)}"}

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.text()
        try:
            body = json.loads(raw)
        except ValueError:
            return web.json_response({"error": {"message": "invalid JSON"}}, status=400)
        self.in_flight += 1  # the server's own loop thread: no lock needed
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, body, raw)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request, body: dict[str, Any], raw: str) -> web.StreamResponse:
        behaviour = self._next(body, raw, dict(request.headers))
        delay = behaviour.get("delay", self.delay)
        if behaviour.get("hang"):
            await asyncio.sleep(3600)
        if delay:
            await asyncio.sleep(delay)
        if behaviour.get("drop"):
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        status = behaviour.get("status", 200)
        headers = behaviour.get("headers", {})
        if "flood" in behaviour:
            return await self._flood(request, behaviour["flood"], behaviour.get("declared", False))
        if "body" in behaviour:
            return web.Response(text=behaviour["body"], status=status, headers=headers, content_type="application/json")
        if status != 200:
            error = {"error": {"message": f"scripted {status}", "type": "scripted", "code": status}}
            return web.json_response(error, status=status, headers=headers)
        content = behaviour.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if behaviour.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": t.get("id", f"call_{i}"),
                    "type": "function",
                    "function": {"name": t["name"], "arguments": json.dumps(t.get("arguments", {}))},
                }
                for i, t in enumerate(behaviour["tool_calls"])
            ]
        usage = behaviour.get("usage", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
        reply = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
            "usage": usage,
        }
        return web.json_response(reply, headers=headers)

    async def _flood(self, request: web.Request, size: int, declared: bool) -> web.StreamResponse:
        reply = web.StreamResponse(headers={"Content-Type": "application/json"})
        if declared:
            reply.content_length = size
        await reply.prepare(request)
        chunk = b"x" * (1 << 20)
        with contextlib.suppress(ConnectionError):  # the client gave up reading: as it should
            for sent in range(0, size, len(chunk)):
                await reply.write(chunk[: size - sent])
            await reply.write_eof()
        return reply

    async def _embeddings(self, request: web.Request) -> web.Response:
        """``/embeddings``: each input's vector is a scripted behaviour's ``vectors`` (one per input),
        else a bag of its words (one axis per word, by hash) so that shared words score high."""
        body = await request.json()
        texts = body.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        behaviour = self._next(body, json.dumps(body), dict(request.headers))
        status = behaviour.get("status", 200)
        if status != 200:
            error = {"error": {"message": f"scripted {status}", "type": "scripted", "code": status}}
            return web.json_response(error, status=status, headers=behaviour.get("headers", {}))
        vectors = behaviour.get("vectors") or [_bag_of_words(t) for t in texts]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        tokens = sum(len(t.split()) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "mock"), "usage": usage})

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "mock", "object": "model"}]})

    def _serve(self) -> None:
        loop = _new_loop()
        self._loop = loop
        app = web.Application()
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self._chat)
            app.router.add_get(f"{prefix}/models", self._models)
            app.router.add_post(f"{prefix}/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        loop.run_until_complete(self._runner.setup())
        # A backlog above aiohttp's 128: hundreds of clients connect at once in benchmarks, and a
        # refused SYN is retried only after a second.
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=4096)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    def start(self) -> LLMServer:
        self._thread = threading.Thread(target=self._serve, daemon=True, name="llm-server")
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_DATA = re.compile(r"^<<<BEGIN DATA ([0-9a-f]{16})>>>\n(.*)\n<<<END DATA \1>>>$", re.M)


def data_section(prompt: str) -> tuple[Any, str]:
    """A judge prompt's one delimited data section, parsed, and the prompt around it (what the
    test's author wrote); AssertionError unless there is exactly one such section."""
    found = _DATA.findall(prompt)
    assert len(found) == 1, f"expected one data section, found {len(found)} in {prompt!r}"
    return json.loads(found[0][1]), _DATA.sub("<<<DATA>>>", prompt)


VERDICT = {"passed": True, "score": 1.0, "reason": "meets the criteria"}


def fault_responder(
    rates: dict[str, float],
    seed: int = 0,
    delay: float = 0.0,
    jitter: float = 0.0,
    pad: int = 0,
    verdicts: bool = False,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A responder answering ``rates`` of requests with a fault: ``{"500": 0.1, "429": 0.1,
    "hang": 0.02, "drop": 0.01}``; the others echo (plus ``pad`` dots) after ``delay`` to
    ``delay + jitter`` s, or with ``verdicts`` answer a judge prompt (a data section) with a
    passing verdict."""
    rng = random.Random(seed)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        roll, wait = rng.random(), delay + rng.random() * jitter
        for fault, rate in rates.items():
            if roll < rate:
                if fault == "hang":
                    return {"hang": True}
                if fault == "drop":
                    return {"drop": True, "delay": wait}
                return {"status": int(fault), "delay": wait, "headers": {"retry-after": "0"}}
            roll -= rate
        if verdicts and "<<<BEGIN DATA " in _last_user_text(body):
            return {"content": VERDICT, "delay": wait}
        return {"content": f"echo: {_last_user_text(body)} {'.' * pad}".rstrip(), "delay": wait}

    return respond


if __name__ == "__main__":  # serve forever, for manual runs and benchmarks
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--jitter", type=float, default=0.0, help="extra random delay, up to this")
    parser.add_argument("--faults", default="", help="e.g. 500=0.1,429=0.1,hang=0.02,drop=0.01")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pad", type=int, default=0, help="characters added to each answer")
    parser.add_argument("--verdicts", action="store_true", help="answer judge prompts with a passing verdict")
    args = parser.parse_args()
    rates = {k: float(v) for k, _, v in (item.partition("=") for item in args.faults.split(",") if item)}
    custom = rates or args.jitter or args.pad or args.verdicts
    responder = (
        fault_responder(rates, args.seed, args.delay, args.jitter, args.pad, args.verdicts) if custom else None
    )
    server = LLMServer(responder, delay=args.delay).start()
    print(server.base_url, flush=True)
    threading.Event().wait()
