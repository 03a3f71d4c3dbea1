"""``specrun view``: the runs, run, case and compare pages in headless Chromium, escaping, the
agent matrix, and the one write (snapshot approval), served by a real ``specrun view`` process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli

from specrun._history.store import History
from specrun.viewer.html import when

SPECRUN = str(Path(sys.executable).with_name("specrun"))
pytest_plugins = ["support.browser"]  # the browser fixture: pages of one Chromium for the whole session

BOTS = """
import os, time
from specrun import Response, ToolCall

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'

def good(messages, ctx):
    text = messages[-1].text
    broken = os.environ.get("BROKEN") == "1"
    if "weather" in text:
        return Response("It is sunny", tool_calls=[ToolCall("get_weather", {"city": "Paris"}, {"temp": 21})])
    if "France" in text:
        time.sleep(0.2 if broken else 0.0)  # slower: by 100 ms and 25% at least (diff.py)
        return HOSTILE + " Lyon" if broken else "Paris is the capital of France"
    if "expense" in text.lower():
        return "What type of expense?"
    return "Hello there"

def bad(messages, ctx):
    return "I do not know"
"""

SUITE = """\
targets: [good, bad]
cases:
  - id: capital
    name: Capital of France
    input: What is the capital of France?
    assertions: [{type: contains, value: Paris}]
  - id: weather
    input: What's the weather in Paris?
    assertions: [{type: tool_called, name: get_weather}]
  - id: greeting
    input: Hi
    assertions: [{type: snapshot}]
  - id: expense
    simulator: {type: scripted, turns: [I want to submit an expense]}
    checkpoints:
      - id: ask_type
        assertion: {type: contains, value: type}
"""


def _run(project: Path, broken: bool, *flags: str) -> dict:
    """Run the suite (recorded in the project's history, as every run is); its history row."""
    env = {**os.environ, "BROKEN": "1" if broken else "0"}
    proc = run_cli(["suite.yaml", *flags], project, env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    history = History.open(project, {})
    try:
        return history.runs(1)[0]
    finally:
        history.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """Three recorded runs, and the ``specrun view`` process of ``server``: it starts once the
    first run made the history (it reads every page from the history afresh), so that its
    start-up overlaps the other two runs."""
    root = tmp_path_factory.mktemp("viewer")
    (root / "specrun.yaml").write_text("timeout: 10s\n")
    for name in ("good", "bad"):
        (root / name).mkdir()
        (root / name / f"viewer_{name}.py").write_text(BOTS)
        (root / name / "agent.yaml").write_text(f"id: {name}\ntarget: python:viewer_{name}:{name}\n")
    (root / "suite.yaml").write_text(SUITE)
    first = _run(root, False, "-n", "good", "--update-snapshots")
    viewer = subprocess.Popen(
        [SPECRUN, "view", "--port", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        second = _run(root, True)  # capital now fails with hostile output, and greeting's snapshot for bad differs
        third = _run(root, False, "-n", "good")  # capital passes again: passed, failed, passed is flaky
        yield {
            "root": root,
            "first": first["id"],
            "second": second["id"],
            "when": [third["started_at"], second["started_at"], first["started_at"]],
            "viewer": viewer,
        }
    finally:
        viewer.terminate()
        viewer.wait(timeout=30)


@pytest.fixture(scope="module")
def server(project) -> str:
    """The base URL of the project's real ``specrun view`` process."""
    proc = project["viewer"]
    line = proc.stdout.readline().strip()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", line), line + proc.stderr.read()
    return line.rstrip("/")


def get(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, str, dict]:
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


async def test_runs_page_lists_recorded_runs_newest_first(browser, server, project):
    async with browser() as page:
        await page.open(server + "/")
        rows = await page.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.cells[0].textContent)")
        assert rows == [when(t) for t in project["when"]]  # newest first
        agents = await page.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.cells[1].textContent)")
        assert agents == ["good", "bad, good", "good"]
        await page.js("document.querySelector('[data-filter-list=runs] input').value = 'bad'")
        await page.js("document.querySelector('[data-filter-list=runs] input').dispatchEvent(new Event('input'))")
        assert await page.js("[...document.querySelectorAll('#runs tbody tr')].filter(r => !r.hidden).length") == 1


async def test_run_page_shows_failures_first_and_opens_a_transcript(browser, server, project):
    async with browser() as page:
        await page.open(f"{server}/run?id={project['second']}")
        statuses = await page.js("[...document.querySelectorAll('#cases .case')].map(e => e.dataset.status)")
        assert statuses[0] == "failed" and "passed" in statuses
        assert statuses == sorted(statuses, key=["failed", "error", "passed", "skipped"].index)
        first = "document.querySelector('#cases .case')"
        assert await page.js(f"{first}.querySelector('.cid').textContent") == "capital"
        assert not await page.js(f"{first}.querySelector('h4').checkVisibility()")
        await page.js(f"{first}.querySelector('summary').click()")
        # (a summary's click opens its details at once: the toggle event comes later, the attribute does not)
        assert await page.js(f"{first}.open")
        text = await page.js(f"{first}.innerText")
        assert "What is the capital of France?" in text and "Lyon" in text  # input and output
        assert "contains" in text and "Paris" in text  # the assertion: expected vs actual
        # filters: only the passed cases, then a search
        await page.js("document.querySelector('button[data-status-filter=passed]').click()")
        shown = await page.js(
            "[...document.querySelectorAll('#cases .case')].filter(e => !e.hidden).map(e => e.dataset.status)"
        )
        assert shown and set(shown) == {"passed"}
        # a dynamic case shows its turns and the checkpoint it reached; a tool call its arguments and result
        whole = await page.js("document.querySelector('#cases').textContent")
        assert "Turn 1" in whole and "checkpoint ask_type reached" in whole
        assert "get_weather" in whole and '"city": "Paris"' in whole and '"temp": 21' in whole


async def test_comparison_shows_a_regression(browser, server, project):
    async with browser() as page:
        await page.open(f"{server}/compare?a={project['first']}&b={project['second']}")
        newly = await page.js("document.querySelector('#newly-failing').innerText")
        assert "capital" in newly and "@good" in newly
        assert "Paris is the capital of France" in newly and "Lyon" in newly  # outputs side by side
        assert "capital" in await page.js("document.querySelector('#slower').innerText")
        assert "capital" in await page.js("document.querySelector('#flaky').innerText")  # passed, failed, passed
        assert "greeting" not in await page.js("document.querySelector('#flaky').innerText")
        assert "McNemar's exact test" in await page.js("document.querySelector('#paired').innerText")
        assert "95% CI" in await page.js("document.querySelector('#pass-rates').innerText")


async def test_hostile_agent_output_executes_nothing(browser, server, project):
    async with browser() as page:
        for path in (f"/run?id={project['second']}", f"/compare?a={project['first']}&b={project['second']}"):
            await page.open(server + path)
            await page.js("document.querySelectorAll('details').forEach(d => d.open = true)")
            await page.settled()  # any image loaded or failed, its onerror run
            assert await page.js("window.__pwned") is None
            assert await page.js("document.querySelectorAll('main img, main script').length") == 0
            assert "<script>window.__pwned=1</script>" in await page.js("document.querySelector('main').textContent")


async def test_run_matrix_shows_two_agents(browser, server, project):
    async with browser() as page:
        await page.open(f"{server}/run?id={project['second']}")
        head = await page.js("[...document.querySelectorAll('#matrix thead th')].map(t => t.textContent)")
        assert head == ["Case", "bad", "good"]
        rows = await page.js("[...document.querySelectorAll('#matrix tbody tr')].map(r => r.innerText)")
        capital = next(r for r in rows if r.startswith("capital"))
        assert "failed" in capital
        rate = next(r for r in rows if r.startswith("Pass rate"))
        assert rate.split("\t")[1:] == ["0.0%", "75.0%"]  # bad passes nothing; good all but capital
        interval = next(r for r in rows if r.startswith("95% CI"))
        assert interval.split("\t")[1:] == ["0.0–49.0%", "30.1–95.4%"]  # 0 of 4 runs, 3 of 4


def test_case_page_timeline_and_output_changes(server, project):
    status, body, _ = get(f"{server}/case?suite=suite.yaml&id=capital&agent=good")  # suites: from the project root
    assert status == 200
    ticks = re.findall(r'class="tick s-(\w+)"', body)
    assert ticks == ["passed", "failed", "passed"]  # oldest to newest
    assert 'id="flaky"' in body and "flipped 2 times" in body
    assert "Output changes (2)" in body
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body and "<script>window" not in body


def test_security_headers_host_check_and_read_only(server, project):
    status, _, headers = get(server + "/")
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    port = server.rsplit(":", 1)[1]
    assert get(server + "/", {"Host": f"evil.example:{port}"})[0] == 421  # DNS rebinding
    assert get(server + "/run?id=" + str(project["first"]), data=b"x=1")[0] == 405  # pages are GET only


def test_approve_needs_the_token_and_rewrites_the_snapshot(server, project):
    root: Path = project["root"]
    snap = root / "__snapshots__" / "suite.yaml" / "greeting.txt"
    assert snap.read_text() == "Hello there"
    _, page, _ = get(f"{server}/run?id={project['second']}")
    forms = re.findall(r'<form class="approve".*?</form>', page)
    assert len(forms) == 1  # bad's greeting differs from the approved output
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', forms[0]))
    assert fields["agent"] == "bad" and fields["case"] == "greeting"
    forged = urllib.parse.urlencode({**fields, "token": "guess"}).encode()
    assert get(server + "/approve", data=forged)[0] == 403
    assert snap.read_text() == "Hello there"
    cross = urllib.parse.urlencode(fields).encode()
    assert get(server + "/approve", {"Origin": "http://evil.example"}, cross)[0] == 403
    status, body, _ = get(server + "/approve", data=cross)  # follows the redirect to the run page
    assert status == 200 and "Approved: greeting" in body
    assert snap.read_text() == "I do not know"


def test_view_without_history_is_a_usage_error(tmp_path):
    (tmp_path / "specrun.yaml").write_text("{}\n")
    proc = run_cli(["view", "--port", "0"], tmp_path)
    assert proc.returncode == 2
    assert "no run history at" in proc.stderr and "history.db" in proc.stderr
    (tmp_path / "specrun.yaml").write_text("history: false\n")
    proc = run_cli(["view", "--port", "0"], tmp_path)
    assert proc.returncode == 2 and "history is off" in proc.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli(["view", "--port", "0", "-C", str(tmp_path)], elsewhere)  # the project named, not the cwd
    assert proc.returncode == 2 and "history is off" in proc.stderr


def test_view_help_lists_its_options():
    proc = run_cli(["view", "--help"], Path.cwd())
    assert proc.returncode == 0 and "--port" in proc.stdout and "--host" in proc.stdout
    assert json.dumps("127.0.0.1")[1:-1] in proc.stdout


def test_a_long_run_lists_its_first_cases_then_all_on_request(project, monkeypatch):
    from specrun.viewer import pages
    from specrun.viewer.store import Store

    monkeypatch.setattr(pages, "MAX_CASES", 3)
    history = History.open(project["root"], {})
    try:
        first = pages.run_page(Store(history), str(project["second"]), None)
        every = pages.run_page(Store(history), str(project["second"]), None, every=True)
    finally:
        history.close()
    assert first is not None and every is not None
    assert first.count('<details class="case ') == 3 and "The first 3 of 8 cases" in first and "all=1" in first
    assert every.count('<details class="case ') == 8 and "Show all" not in every


# -- in process: the app over a history written row by row, as a damaged or a future one may be

TRACEBACK = 'Traceback (most recent call last):\n  File "bot.py", line 3, in answer\nValueError: <script>x()</script>'


def _case(run_id: str, case_id: str, status: object, result: object, duration: object = 1.0) -> tuple:
    text = result if isinstance(result, str) else json.dumps(result)
    return (run_id, case_id, 1, "bot", "suite.yaml", 3, status, duration, 5, None, None, 0, "f", "h", text, "rev")


@pytest.fixture(scope="module")
def damaged_history(tmp_path_factory) -> Path:
    """Two runs: ``old`` intact, with an agent's traceback; ``new`` with every kind of damage."""
    root = tmp_path_factory.mktemp("damaged")
    history = History.open(root, {}, create=True)
    crash = {"id": "crash", "status": "error", "error": "ValueError: <script>x()</script>", "traceback": TRACEBACK}
    try:
        for run_id, started in (("old", "2026-01-01T10:00:00"), ("new", "2026-01-02T10:00:00")):
            history.add_run({"id": run_id, "started_at": started, "agents": '["bot"]', "suites": '["suite.yaml"]'})
            history.end_run(run_id, {"total": 4, "passed": 4, "failed": 0, "errors": 0, "skipped": 0})
        history.add_cases([_case("old", c, "passed", {"id": c, "status": "passed"}) for c in ("cut", "odd", "deep")])
        history.add_cases(
            [
                _case("old", "crash", "error", crash),
                _case("new", "crash", "passed", {"id": "crash", "status": "passed"}),
                _case("new", "cut", "passed", json.dumps({"id": "cut", "output": "a long answer"})[:20]),
                _case("new", "odd", "passsed", {"id": "odd", "turns": 5}, duration="slow"),
                _case("new", "deep", "passed", {"id": "deep", "turns": [], "checkpoints": [{"reached_at_turn": [1]}]}),
            ]
        )
        history.db.execute("UPDATE runs SET summary = '{\"agents\": {\"bot\"', total = 'four' WHERE id = 'new'")
    finally:
        history.close()
    return root


@pytest.fixture
async def viewer_app(damaged_history):
    from aiohttp.test_utils import TestClient, TestServer

    from specrun.viewer.app import Viewer
    from specrun.viewer.store import Store

    history = History.open(damaged_history, {})
    viewer = Viewer(Store(history), damaged_history, "127.0.0.1")
    server = TestServer(viewer.app(), host="127.0.0.1")
    async with TestClient(server) as client:
        viewer.bound(server.port)  # type: ignore[arg-type]
        yield viewer, client
    history.close()


async def _page(client, path: str) -> str:
    response = await client.get(path)
    body = await response.text()
    assert response.status == 200, body
    return body


async def test_a_damaged_history_row_gets_a_page_that_says_so(viewer_app):
    _, client = viewer_app
    runs = await _page(client, "/")
    assert runs.count("(damaged in the history: open it for what)") == 1  # the new run only
    run = await _page(client, "/run?id=new")
    assert "Part of this run&#x27;s history is damaged" in run
    assert "the run&#x27;s row: total is the text &#x27;four&#x27;, not a whole number" in run
    assert "the run&#x27;s row: summary is not valid JSON, cut short or edited" in run
    assert "case cut @bot: result is not valid JSON, cut short or edited (Unterminated string" in run
    assert "case odd @bot: status is the text &#x27;passsed&#x27;, not one of passed" in run
    assert "case odd @bot: result.turns is int 5, not a JSON array" in run
    assert "its result record cannot be shown: TypeError: unhashable type" in run  # deeper than any column
    found = re.findall(r'data-status="(\w+)"><summary>.*?<span class="cid">(\w+)</span>', run)
    statuses = {case: status for status, case in found}
    assert statuses == {"crash": "passed", "cut": "passed", "odd": "error", "deep": "passed"}  # unreadable: error
    for path in ("/compare?a=old&b=new", "/case?suite=suite.yaml&id=odd&agent=bot"):
        assert "damaged" in await _page(client, path)


async def test_an_agents_traceback_is_shown_closed_and_escaped(viewer_app):
    _, client = viewer_app
    run = await _page(client, "/run?id=old")
    escaped = TRACEBACK.replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    assert f'<details class="traceback"><summary>Traceback</summary><pre class="">{escaped}</pre></details>' in run
    assert "<script>x()" not in run
    assert run.count('class="traceback"') == 1  # the other cases have none: no section


async def test_notices_come_only_from_what_the_server_did(viewer_app):
    viewer, client = viewer_app
    forged = await _page(client, "/run?id=old&approved=everything+is+fine&notice=everything+is+fine")
    assert 'class="notice"' not in forged and "everything is fine" not in forged
    key = viewer.notify("old", "Approved: cut → __snapshots__/suite.yaml/cut.txt")
    assert "Approved: cut → __snapshots__" in await _page(client, f"/run?id=old&notice={key}")
    assert 'class="notice"' not in await _page(client, f"/run?id=new&notice={key}")  # another run's page


async def test_a_page_that_fails_anyway_is_a_readable_error(viewer_app, monkeypatch):
    from specrun.viewer.store import Store

    _, client = viewer_app

    def unreadable(self, limit=500):
        raise IndexError("list index out of range")  # what no row check foresaw

    monkeypatch.setattr(Store, "runs", unreadable)
    response = await client.get("/")
    body = await response.text()
    assert response.status == 500 and response.content_type == "text/html"
    assert "This page could not be shown" in body and "IndexError: list index out of range" in body
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert "Run 2026-01-01" in await _page(client, "/run?id=old")  # the server goes on


def test_a_rejudge_run_says_what_it_judged_again_escaped(tmp_path):
    from specrun.viewer import pages
    from specrun.viewer.store import Store

    source = "stream <img src=x onerror=alert(1)>.jsonl"  # a path: any text
    history = History.open(tmp_path, {}, create=True)
    try:
        row = {"id": "again", "started_at": "2026-01-03T10:00:00", "agents": '["bot"]', "suites": '["suite.yaml"]'}
        history.add_run({**row, "argv": '["rejudge", "x.jsonl"]', "rejudge": source})
        history.end_run("again", {"total": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0})
        run, runs = pages.run_page(Store(history), "again", None), pages.runs_page(Store(history))
    finally:
        history.close()
    shown = "stream &lt;img src=x onerror=alert(1)&gt;.jsonl"
    assert run is not None and f"Rejudge of <code>{shown}</code>" in run and "<img" not in run
    assert f"(rejudge of {shown})" in runs and "<img" not in runs
