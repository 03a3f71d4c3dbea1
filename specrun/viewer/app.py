"""The viewer's web app: routes, security headers, snapshot approval, and serving.

Every response carries a Content-Security-Policy that allows the viewer's own script and style
and nothing else (no inline script, no other origin, no frames), so text that escaping missed
still could not run. A request whose Host is not this server (DNS rebinding) is refused. The
two writes, approving a snapshot and labelling a judge's verdict (I agree / I disagree, kept
in the history's ``labels`` for ``specrun calibrate``), are POSTs that must carry this server's
random token and come from its own pages; nothing else writes to the history. A notice on a
page (``Approved: ...``) is one this server made for what it just did, found by a random key:
no link can make a page claim something happened. A page that fails anyway (a history damaged
beyond what ``viewer.rows`` repairs) is a readable error page, never a bare 500.
"""

from __future__ import annotations

import hmac
import json
import secrets
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from .._core.errors import SpecrunError
from .._core.identity import CaseKey
from .._core.results import utc_timestamp
from .._history.snapshots import Snapshot
from .compare import case_page, compare_page
from .html import e, layout, url
from .pages import run_page, runs_page
from .store import Store

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
STATIC = {"viewer.css": "text/css", "viewer.js": "text/javascript"}
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
NOTICES_KEPT = 100  # the newest notices a redirect may still point at


class Viewer:
    """The app's state: the store, the project root snapshots must live under, the POST token."""

    def __init__(self, store: Store, root: Path, host: str):
        self.store = store
        self.root = root.resolve()
        self.host = host
        self.token = secrets.token_urlsafe(24)
        self.origins: set[str] = set()  # set once the port is known (see bound)
        self.notices: dict[str, tuple[str, str]] = {}  # random key -> (run id, what the server did)

    def bound(self, port: int) -> str:
        """Note the port the server listens on; returns the URL to open."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        names = {shown, *(LOOPBACK if self.host in LOOPBACK else ())}
        self.origins = {f"{n}:{port}" for n in names}
        return f"http://{shown}:{port}/"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.router.add_get("/", self.runs)
        app.router.add_get("/run", self.run)
        app.router.add_get("/case", self.case)
        app.router.add_get("/compare", self.compare)
        app.router.add_post("/approve", self.approve)
        app.router.add_post("/label", self.label)
        app.router.add_get("/static/{name}", self.static)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        loopback = self.host in LOOPBACK
        if loopback and request.host not in self.origins:
            return web.Response(status=421, text="unknown host")  # another name for this address: DNS rebinding
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # a redirect, a 403: raised on (returning one is deprecated)
            _secure(exc.headers)
            raise
        except SpecrunError as exc:
            response = _html(layout("Error", f"<h1>Error</h1><pre>{e(exc)}</pre>"), 500)
        except Exception as exc:  # the last resort: the page says what failed, the server goes on
            text = f"{type(exc).__name__}: {exc}"
            body = (
                "<h1>This page could not be shown</h1>"
                f"<pre>{e(text)}</pre><p>The run history may be damaged (or this is a bug in"
                " specrun: please report it with the text above). The other pages still work.</p>"
            )
            response = _html(layout("Error", body), 500)
        _secure(response.headers)
        return response

    async def runs(self, request: web.Request) -> web.StreamResponse:
        return _html(runs_page(self.store))

    async def run(self, request: web.Request) -> web.StreamResponse:
        run_id = request.query.get("id", "")
        run, notice = self.notices.get(request.query.get("notice", ""), ("", ""))
        notice = notice if run == run_id else ""  # shown only where the server sent it
        page = run_page(self.store, run_id, self._approve_form(run_id), notice, "all" in request.query)
        return _html(page) if page is not None else _missing(f"no run {run_id!r}")

    async def case(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        return _html(case_page(self.store, q.get("suite", ""), q.get("id", ""), q.get("agent", "")))

    async def compare(self, request: web.Request) -> web.StreamResponse:
        a, b = request.query.get("a", ""), request.query.get("b", "")
        page = compare_page(self.store, a, b)
        return _html(page) if page is not None else _missing("pick two recorded runs")

    async def static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        body = resources.files("specrun.viewer").joinpath("static", name).read_bytes()
        return web.Response(body=body, content_type=STATIC[name])

    def _approve_form(self, run_id: str) -> Any:
        def form(row: dict[str, Any], index: int, kind: str = "approve") -> str:
            fields = {
                "token": self.token,
                "run": run_id,
                "suite": row["suite"],
                "case": row["case_id"],
                "agent": row["agent"],
                "run_index": row["run_index"],
                "assertion": index,
            }
            hidden = "".join(f'<input type="hidden" name="{k}" value="{e(v)}">' for k, v in fields.items())
            if kind == "label":
                return (
                    f'<form class="label" method="post" action="/label">{hidden}'
                    '<button type="submit" name="verdict" value="agree">I agree</button>'
                    '<button type="submit" name="verdict" value="disagree">I disagree</button></form>'
                )
            return (
                f'<form class="approve" method="post" action="/approve">{hidden}'
                '<button type="submit">Approve this output as the snapshot</button></form>'
            )

        return form

    async def _posted(self, request: web.Request) -> Any:
        """A POST's form, once it is known to come from this server's own page with its token."""
        form = await request.post()
        origin = request.headers.get("Origin")
        if origin is not None and origin.removeprefix("http://") not in self.origins:
            raise web.HTTPForbidden(text="approval must come from the viewer's own page")
        if not hmac.compare_digest(str(form.get("token", "")), self.token):
            raise web.HTTPForbidden(text="missing or stale approval token: reload the page")
        return form

    async def approve(self, request: web.Request) -> web.StreamResponse:
        """Write a result's output as its snapshot: the viewer's one change to any file."""
        run_id, snapshot, output = self._snapshot(await self._posted(request))
        if not Path(snapshot.suite).resolve().is_relative_to(self.root):
            raise web.HTTPForbidden(text=f"{snapshot.suite} is outside the project {self.root}")
        written = snapshot.write(output)
        notice = self.notify(run_id, f"Approved: {snapshot.case_id} → {written}")
        raise web.HTTPSeeOther(url("/run", id=run_id, notice=notice))

    def notify(self, run_id: str, text: str) -> str:
        """Keep a notice for run ``run_id``'s page; the key its link carries."""
        key = secrets.token_urlsafe(16)
        self.notices[key] = (run_id, text)
        while len(self.notices) > NOTICES_KEPT:
            del self.notices[next(iter(self.notices))]
        return key

    async def label(self, request: web.Request) -> web.StreamResponse:
        """Keep the person's label of a judged result: the judge's verdict if they agree, else
        the other one (``specrun calibrate`` compares the judge with these)."""
        form = await self._posted(request)
        verdict = str(form.get("verdict", ""))
        if verdict not in ("agree", "disagree"):
            raise web.HTTPBadRequest(text="verdict must be agree or disagree")
        run_id, row, record, index, found = self._result_at(form)
        details = found.get("details") if isinstance(found, dict) else None
        if not isinstance(details, dict) or "reason" not in details or found.get("status") not in ("passed", "failed"):
            raise web.HTTPNotFound(text="no judge's verdict there")
        human = "pass" if (found["status"] == "passed") == (verdict == "agree") else "fail"
        output, given = record.get("output"), record.get("input")
        self.store.add_label(
            {
                "suite": row["suite"],
                "case_id": row["case_id"],
                "agent": row["agent"],
                "run_id": run_id,
                "run_index": row["run_index"],
                "assertion": index + 1,
                "human": human,
                "output": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
                "input": None if given is None else json.dumps(given, ensure_ascii=False),
                "labelled_at": utc_timestamp(),
            }
        )
        said = f"you {verdict} with the judge's {found['status']} verdict, so the output is labelled {human}"
        notice = self.notify(run_id, f"Labelled: {row['case_id']} {found.get('type')} #{index + 1}: {said}")
        raise web.HTTPSeeOther(url("/run", id=run_id, notice=notice))

    def _result_at(self, form: Any) -> tuple[str, dict[str, Any], dict[str, Any], int, Any]:
        """The recorded result a form names (run, suite, case, agent, run_index) and its
        assertion at ``assertion`` (None when there is no such assertion)."""
        run_id = str(form.get("run", ""))
        key = CaseKey(str(form.get("suite", "")), str(form.get("case", "")), str(form.get("agent", "")))
        for entry in self.store.entries(run_id):
            if entry.key != key:
                continue
            for row, record in zip(entry.rows, entry.results(), strict=True):
                if str(row["run_index"]) != str(form.get("run_index")):
                    continue
                assertions = record.get("assertions") or []
                index = int(str(form.get("assertion", "-1"))) if str(form.get("assertion", "")).isdigit() else -1
                return run_id, row, record, index, assertions[index] if 0 <= index < len(assertions) else None
        raise web.HTTPNotFound(text="no such result in the history")

    def _snapshot(self, form: Any) -> tuple[str, Snapshot, Any]:
        run_id, _, record, _, found = self._result_at(form)
        snapshot = Snapshot.from_details(found.get("details") if isinstance(found, dict) else None)
        if snapshot is None:
            raise web.HTTPNotFound(text="no snapshot assertion there")
        return run_id, snapshot, record.get("output")


def _html(page: str, status: int = 200) -> web.Response:
    return web.Response(text=page, status=status, content_type="text/html", charset="utf-8")


def _missing(what: str) -> web.Response:
    return _html(layout("Not found", f"<h1>Not found</h1><p>{e(what)}</p>"), 404)


async def serve(viewer: Viewer, port: int) -> tuple[web.AppRunner, str]:
    """Start serving; returns the runner (to clean up) and the URL."""
    runner = web.AppRunner(viewer.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, viewer.host, port)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []  # the port chosen when asked for 0
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, viewer.bound(bound)


def _secure(headers: Any) -> None:
    """The headers every answer carries: no script or style from elsewhere, no sniffing, no caching."""
    headers["Content-Security-Policy"] = CSP
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "no-referrer"
    headers["Cache-Control"] = "no-store"
