"""Headless Chromium for browser tests, as a pytest plugin (``pytest_plugins = ["support.browser"]``):
one browser for the whole test session, and a fresh page for each test.

``devtools`` starts Chromium (Debian's package, installed once by ``support.chromium`` when
missing) the first time a test asks for it, once for every module that uses it (starting one
costs about a second); ``async with browser() as page`` opens a page in a browser context of its
own, as isolated as a new profile, driven through the DevTools protocol over a websocket (aiohttp).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from support.chromium import HEADLESS_FLAGS, ChromiumUnavailable, find_chromium
from support.missing import missing


@pytest.fixture(scope="session")
def chromium() -> str:
    try:
        return find_chromium()
    except ChromiumUnavailable as exc:
        missing(f"headless Chromium unavailable: {exc}")


def _flags(profile: Path) -> list[str]:
    return [*HEADLESS_FLAGS, f"--user-data-dir={profile}"]


# An image's load or error event runs the listeners in the order they were added: an inline
# onerror="..." (added as the page was parsed) before this one. The timeout is one more task.
SETTLED = """Promise.all([...document.images].filter(i => !i.complete).map(i => new Promise(done => {
  i.addEventListener('load', done, {once: true});
  i.addEventListener('error', done, {once: true});
}))).then(() => new Promise(done => setTimeout(done, 0)))"""


class Page:
    """A page in a headless Chromium, driven through the DevTools protocol."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        await self.ws.send_json({"id": msg_id, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), 30)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    async def wait_event(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), 30)
            self.events.append(msg)
            if msg.get("method") == method:
                return msg

    async def js(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def settled(self) -> None:
        """Until every image of the page has loaded or failed, and the handlers of those events
        (an injected ``onerror`` among them) have run: what a fixed sleep used to wait for."""
        result = await self.send("Runtime.evaluate", expression=SETTLED, awaitPromise=True)
        assert "exceptionDetails" not in result, result

    async def open(self, url: str) -> None:
        self.events.clear()
        await self.send("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")


class Chromium:
    """A headless Chromium started for a module's tests; ``port``, its DevTools port, is waited
    for when first asked: the browser starts while the tests' other fixtures are made."""

    def __init__(self, proc: subprocess.Popen[bytes], profile: Path):
        self.proc = proc
        self.profile = profile

    @functools.cached_property
    def port(self) -> int:
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                pytest.fail("Chromium did not open its DevTools port")
            time.sleep(0.02)
        return int(port_file.read_text().split()[0])


@pytest.fixture(scope="session")
def devtools(chromium, tmp_path_factory) -> Iterator[Chromium]:
    """One headless Chromium for the session's tests (starting one costs about a second). Each
    test gets a page of its own in a context of its own (``browser``)."""
    profile = tmp_path_factory.mktemp("chromium")
    proc = subprocess.Popen(
        [chromium, *_flags(profile), "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield Chromium(proc, profile)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@contextlib.asynccontextmanager
async def open_page(chrome: Chromium) -> AsyncIterator[Page]:
    """A new page of ``chrome``, in a browser context of its own (as a new profile is: no
    cookies, storage or cache from another test), closed afterwards."""
    port = chrome.port
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/version") as resp:
            endpoint = json.loads(await resp.text())["webSocketDebuggerUrl"]
        async with http.ws_connect(endpoint, max_msg_size=0) as bws:
            top = Page(bws)
            context = (await top.send("Target.createBrowserContext"))["browserContextId"]
            try:
                target = await top.send("Target.createTarget", url="about:blank", browserContextId=context)
                url = f"ws://127.0.0.1:{port}/devtools/page/{target['targetId']}"
                async with http.ws_connect(url, max_msg_size=0) as ws:
                    p = Page(ws)
                    for domain in ("Page", "Runtime", "Network", "Log"):
                        await p.send(f"{domain}.enable")
                    yield p
            finally:
                await top.send("Target.disposeBrowserContext", browserContextId=context)


@pytest.fixture
def browser(devtools) -> Callable[[], contextlib.AbstractAsyncContextManager[Page]]:
    """``async with browser() as page``: a new page of the session's Chromium (``open_page``)."""
    return functools.partial(open_page, devtools)
