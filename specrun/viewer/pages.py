"""The runs page and the run page (failures first, filters, search, the agent x case matrix)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._report.rates import interval_text
from .html import ICONS, badge, damaged, e, layout, money, ms, pct, table, url, when
from .store import Entry, Store
from .transcript import transcript

MAX_CASES = 300  # cases a run page lists with their transcripts before "show all"
Approve = Callable[..., str]  # (a case row, assertion index, kind: approve|label) -> the form


def status_buttons(entries: list[Entry], target: str, placeholder: str) -> str:
    """Status filter buttons, a text search and a count, for the items of list ``target``."""
    counts = {s: sum(x.status == s for x in entries) for s in ICONS}
    buttons = '<button type="button" data-status-filter="all" aria-pressed="true">All</button>' + "".join(
        f'<button type="button" data-status-filter="{s}" aria-pressed="false">{ICONS[s]} {s} ({n})</button>'
        for s, n in counts.items()
        if n
    )
    return (
        f'<div class="controls" data-filter-list="{e(target)}">{buttons}'
        f'<input type="search" placeholder="{e(placeholder)}" aria-label="{e(placeholder)}">'
        f'<span class="shown meta">{len(entries)} shown</span></div>'
    )


def runs_page(store: Store) -> str:
    """Every recorded run, newest first, filterable; a form picks two to compare."""
    runs = store.runs()
    rows = []
    for r in runs:
        total, passed = int(r["total"] or 0), int(r["passed"] or 0)
        status = "failed" if (r["failed"] or r["errors"]) else "passed" if passed else "skipped"
        note = " (interrupted)" if r["interrupted"] else ""
        note += f" (rejudge of {r['rejudge']})" if r["rejudge"] else ""
        note += " (damaged in the history: open it for what)" if r["damaged"] else ""
        started = e(when(r["started_at"]) or "?")
        opened = f'<a href="{e(url("/run", id=r["id"]))}">{started}</a>' if r["id"] else started
        rows.append(
            f'<tr data-status="{status}"><td>{opened}{e(note)}</td>'
            f"<td>{e(', '.join(r['agents']))}</td><td>{e(', '.join(r['suites']))}</td>"
            f'<td class="num">{total}</td><td class="num s-passed">{passed}</td>'
            f'<td class="num s-failed">{e(r["failed"])}</td><td class="num s-error">{e(r["errors"])}</td>'
            f'<td class="num">{pct(passed, total - int(r["skipped"] or 0))}</td>'
            f'<td class="num">{e(ms(r["duration_ms"]))}</td><td class="num">{e(money(r["cost"]))}</td>'
            f"<td><code>{e((r['git_commit'] or '')[:10])}</code></td></tr>"
        )
    if not runs:
        body = "<h1>Runs</h1><p>No runs recorded yet: run <code>specrun suites/</code> and reload.</p>"
        return layout("Runs", body)
    options = "".join(
        f'<option value="{e(r["id"])}">{e(when(r["started_at"]))} · {e(", ".join(r["agents"]))}</option>' for r in runs
    )
    base = options.replace("<option ", "<option selected ", 2).replace("<option selected ", "<option ", 1)
    compare = (
        '<form method="get" action="/compare" class="controls" id="compare-form">Compare '
        f'<select name="a" aria-label="base run">{base}</select> with '
        f'<select name="b" aria-label="new run">{options}</select><button type="submit">Compare</button></form>'
    )
    head = [
        "When",
        "Agents",
        "Suites",
        "Cases",
        "Passed",
        "Failed",
        "Errors",
        "Pass rate",
        "Duration",
        "Cost",
        "Commit",
    ]
    controls = (
        '<div class="controls" data-filter-list="runs">'
        '<button type="button" data-status-filter="all" aria-pressed="true">All</button>'
        '<button type="button" data-status-filter="failed" aria-pressed="false">✗ with failures</button>'
        '<button type="button" data-status-filter="passed" aria-pressed="false">✓ green</button>'
        '<input type="search" placeholder="Filter by agent, suite, date" aria-label="Filter runs">'
        '<span class="shown meta"></span></div>'
    )
    body = f"<h1>Runs</h1><p class='meta'>{len(runs)} recorded runs, newest first.</p>{compare}{controls}"
    return layout("Runs", body + table(head, rows, id_="runs"))


def matrix(entries: list[Entry], agents: list[str], totals: Any) -> str:
    """The agent x case matrix, then each agent's pass rate (and its 95% interval), mean latency
    and cost as the run's summary has them (``totals``: its ``agents``; the console and the
    reports show the same)."""
    cells: dict[tuple[str, str], dict[str, Entry]] = {}
    for x in sorted(entries, key=lambda x: (x.suite, x.case_id)):
        cells.setdefault((x.suite, x.case_id), {})[x.agent] = x
    rows = []
    for (_, case_id), by_agent in cells.items():
        tds = "".join(
            f'<td class="s-{e(by_agent[a].status)}">{ICONS.get(by_agent[a].status, "")} {e(by_agent[a].status)}</td>'
            if a in by_agent
            else "<td>-</td>"
            for a in agents
        )
        rows.append(f"<tr><td>{e(case_id)}</td>{tds}</tr>")
    totals = totals if isinstance(totals, dict) else {}  # none for a run cut short before its summary
    for label, key, shown in (
        ("Pass rate", "pass_rate", lambda v: f"{v}%"),
        ("95% CI", "pass_rate_ci", lambda v: interval_text(v, False) or "-"),
        ("Latency (mean)", "avg_duration_ms", ms),
        ("Cost", "cost", money),
    ):
        values = [(totals.get(a) or {}).get(key) for a in agents]
        tds = "".join(f"<td><b>{e('-' if v is None else shown(v))}</b></td>" for v in values)
        rows.append(f"<tr><th>{e(label)}</th>{tds}</tr>")
    return "<h2>Agents</h2>" + table(["Case", *agents], rows, id_="matrix")


def run_page(store: Store, run_id: str, approve: Approve | None, notice: str = "", every: bool = False) -> str | None:
    """One run: its totals, the matrix when it tested several agents, and its cases with their
    transcripts, failures first (the first ``MAX_CASES`` unless ``every``)."""
    run = store.run(run_id)
    if run is None:
        return None
    entries = store.entries(run_id)
    total, passed = int(run["total"] or 0), int(run["passed"] or 0)
    cards = [
        ("Cases", total),
        ("Passed", passed),
        ("Failed", run["failed"]),
        ("Errors", run["errors"]),
        ("Skipped", run["skipped"]),
        ("Pass rate", pct(passed, total - int(run["skipped"] or 0))),
        ("Duration", ms(run["duration_ms"])),
        ("Tokens", sum(x.tokens for x in entries)),
        ("Cost", money(run["cost"])),
    ]
    title = f"Run {when(run['started_at'])}"
    body = [f"<h1>{e(title)}</h1>"]
    if notice:
        body.append(f'<p class="notice" role="status">{e(notice)}</p>')
    problems = [f"the run's row: {p}" for p in run["damaged"]]
    for x in entries:
        who = f"case {x.case_id or '(no id)'}" + (f" @{x.agent}" if x.agent else "")
        problems += [f"{who}: {p}" for p in x.damaged]
    if problems:
        what = "Part of this run's history is damaged: what can be read is shown, and what cannot is named."
        body.append(damaged(what, problems))
    argv = " ".join(str(a) for a in run["argv"] or [])
    body.append(f'<p class="meta">Agents: {e(", ".join(run["agents"]))} · <code>{e(argv)}</code></p>')
    if run["rejudge"]:  # its answers are the recorded run's, judged again: no agent was called
        body.append(f'<p class="meta">Rejudge of <code>{e(run["rejudge"])}</code>: no agent was called</p>')
    if run["interrupted"]:
        body.append('<p class="flaky">Interrupted: only the cases that finished are listed.</p>')
    body.append(
        '<div class="cards">' + "".join(f"<div class='card'><b>{e(v)}</b>{e(k)}</div>" for k, v in cards) + "</div>"
    )
    agents = sorted({x.agent for x in entries})
    totals = (run.get("summary") or {}).get("agents")
    if totals:  # some case ran against several agents (see specrun._run.matrix)
        body.append(matrix(entries, agents, totals))
    body.append("<h2>Cases</h2>" + status_buttons(entries, "cases", "Search ids, names, outputs"))
    items = []
    shown = entries if every else entries[:MAX_CASES]
    for x in shown:
        across = url("/case", suite=x.suite, id=x.case_id, agent=x.agent)
        agent = f'<span class="meta">@{e(x.agent)}</span>' if len(agents) > 1 else ""
        items.append(
            f'<details class="case s-{e(x.status)}" data-status="{e(x.status)}"><summary>{badge(x.status)}'
            f'<span class="cid">{e(x.case_id)}</span>{agent}<span class="cname">{e(x.name)}</span>'
            f'<span>{e(ms(x.duration_ms))}</span><a href="{e(across)}">history</a></summary>'
            f"{transcript(x, approve)}</details>"
        )
    body.append('<div id="cases">' + "".join(items) + "</div>")
    if len(shown) < len(entries):
        more = url("/run", id=run_id, all=1)
        body.append(f'<p>The first {len(shown)} of {len(entries)} cases. <a href="{e(more)}">Show all</a></p>')
    return layout(title, "".join(body), [(title, url("/run", id=run_id))])
