"""The HTML report in headless Chromium: it renders, filters, and runs no agent-supplied script.

Chromium is Debian's package (installed once by ``support.chromium`` when missing). Rendering is
checked with ``--dump-dom``; behaviour through the DevTools protocol over a websocket (aiohttp),
evaluating JavaScript in the unmodified report page.
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
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.chromium import HEADLESS_FLAGS, ChromiumUnavailable, find_chromium
from support.missing import missing
from test_reporters import multi_run_records, single_run_records, write_report, write_stream

from specrun.plugins import get_plugin_manager


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return find_chromium()
    except ChromiumUnavailable as exc:
        missing(f"headless Chromium unavailable: {exc}")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    registry = get_plugin_manager().registry
    root = tmp_path_factory.mktemp("html")
    single = write_stream(root / "single.jsonl", single_run_records())
    multi = write_stream(root / "multi.jsonl", multi_run_records(), runs=3)
    write_report(registry, root / "single.html", single)
    write_report(registry, root / "multi.html", multi)
    return {"single": root / "single.html", "multi": root / "multi.html"}


def _flags(profile: Path) -> list[str]:
    return [*HEADLESS_FLAGS, f"--user-data-dir={profile}"]


def test_dump_dom_renders_summary_and_no_injected_elements(chromium, reports, tmp_path):
    done = subprocess.run(
        [chromium, *_flags(tmp_path / "profile"), "--dump-dom", reports["single"].as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = done.stdout
    assert done.returncode == 0 and "specrun report" in dom, done.stderr[-2000:]
    assert 'id="summary"' in dom and "Passed" in dom and "Pass rate" in dom
    assert dom.count("<script") == 1 and "<img" not in dom
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in dom
    assert "8 of 8 shown" in dom  # the page's own script ran under its CSP


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


@pytest.fixture(scope="module")
def devtools(chromium, tmp_path_factory) -> Iterator[Chromium]:
    """One headless Chromium for the module's tests (starting one costs about a second). Each
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
async def browser(chrome: Chromium) -> AsyncIterator[Page]:
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


SHOWN = "[...document.querySelectorAll('#cases .case')].filter(e => !e.hidden)"
VISIBLE = f"{SHOWN}.map(e => e.dataset.status)"
VISIBLE_IDS = f"{SHOWN}.map(e => e.querySelector('.cid').textContent)"


async def test_filters_hide_rows_and_hostile_output_runs_nothing(devtools, reports):
    async with browser(devtools) as page:
        await page.open(reports["single"].as_uri())
        await page.js("document.querySelectorAll('details').forEach(d => d.open = true)")  # render everything
        await asyncio.sleep(0.3)
        assert await page.js("typeof window.__pwned") == "undefined"
        assert await page.js("document.querySelectorAll('img').length") == 0
        assert await page.js("document.scripts.length") == 1
        summary = await page.js("document.getElementById('summary').innerText")
        assert "Total" in summary and "Passed" in summary and "42.9%" in summary
        assert await page.js("document.getElementById('shown').textContent") == "8 of 8 shown"
        # The hostile text is there, as text.
        assert "<script>window.__pwned=1</script>" in await page.js("document.body.innerText")

        await page.js("document.querySelector('button[data-filter=failed]').click()")
        assert await page.js(VISIBLE) == ["failed", "failed"]
        hidden_display = await page.js(
            "getComputedStyle([...document.querySelectorAll('#cases .case')].find(e => e.hidden)).display"
        )
        assert hidden_display == "none"
        await page.js("document.querySelector('button[data-filter=all]').click()")
        assert len(await page.js(VISIBLE)) == 8

        set_text = (
            "(t => { const i = document.getElementById('filter'); i.value = t;"
            " i.dispatchEvent(new Event('input', {bubbles: true})); })"
        )
        await page.js(f"{set_text}('timeout after')")
        assert await page.js(VISIBLE_IDS) == ["T003"]
        assert await page.js("document.getElementById('shown').textContent") == "1 of 8 shown"
        await page.js(f"{set_text}('Expense')")  # by case name
        assert await page.js(VISIBLE_IDS) == ["dyn"]
        chart_rows = "[...document.querySelectorAll('#chart-pass-rate .bar-row')].filter(e => !e.hidden).length"
        assert await page.js(chart_rows) == 1  # charts follow the filter
        await page.js("document.querySelector('button[data-filter=passed]').click()")
        assert await page.js(VISIBLE_IDS) == ["dyn"]
        await page.js("document.querySelector('button[data-filter=error]').click()")
        assert await page.js(VISIBLE_IDS) == []
        await page.js(f"{set_text}('')")
        assert await page.js(VISIBLE_IDS) == ["T003", "T005"]

        assert await page.js("typeof window.__pwned") == "undefined"
        urls = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
        assert all(u.startswith("file://") for u in urls), urls  # nothing fetched from a network


async def test_multi_run_report_expands_runs(devtools, reports):
    async with browser(devtools) as page:
        await page.open(reports["multi"].as_uri())
        text = await page.js("document.body.innerText")
        assert "pass^3" in text and "Pass rate per case" in text
        widths = await page.js("[...document.querySelectorAll('#chart-pass-rate .bar')].map(b => b.style.width)")
        assert widths == ["66.7%", "100%", "0%"]
        await page.js("document.getElementById('case-0').open = true")
        runs = await page.js("[...document.querySelectorAll('#case-0 details.part > summary')].map(s => s.textContent)")
        assert any(r.startswith("Run 2: failed") for r in runs)
