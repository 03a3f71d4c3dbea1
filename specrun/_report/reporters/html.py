"""The ``.html`` reporter: one self-contained page (inline CSS and JS, nothing fetched).

Registered through register_reporters (see this package). Every row is rendered here, with
every byte of agent and suite text passed through ``html.escape(quote=True)``; the page's one
script only toggles ``hidden`` on rows (status buttons, free-text filter) and reads no data.
A Content-Security-Policy allows that script by its hash and nothing else: no other script,
no inline event handler, no network request, even if some text were not escaped.

V1's export options are two links whose ``data:`` URLs hold the results table (one row per
case: verdict, counts, pass rate, durations, file, line, reason) as JSON and as CSV: a
download from the page itself, offline and without any script. The JSON report has the rest.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from html import escape
from typing import IO, Any

from ..rates import interval_text, pair_lines, sample_lines, summary_runs, wilson_pct
from ..stability import CaseStats
from ._common import (
    LABELS,
    Report,
    WholeFileReporter,
    as_text,
    clip,
    cost,
    failures_first,
    fmt_ms,
    input_text,
    pct,
    reason_label,
    shown_runs,
    shown_turns,
)

MAX_CHARS = 50_000  # per text block; the JSON report has everything
MAX_CHART_ROWS = 500

CSS = """
*{box-sizing:border-box}body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;
padding:16px;color:#1f2328;background:#fff}h1{margin:0 0 4px}h2{margin:24px 0 8px;font-size:18px}
.meta{color:#59636e}header p{margin:4px 0}[hidden]{display:none!important}
.banner{background:#fff8c5;border:1px solid #d4a72c;padding:8px 12px;border-radius:6px;margin:12px 0}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0}
.card{border:1px solid #d1d9e0;border-radius:8px;padding:8px 14px;min-width:110px}
.card .num{font-size:22px;font-weight:600}.card .label{color:#59636e;font-size:12px}
.c-passed .num{color:#1a7f37}.c-failed .num{color:#d1242f}.c-error .num{color:#9a6700}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d1d9e0;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f6f8fa}
.chart{display:grid;grid-template-columns:minmax(80px,240px) 1fr 70px;gap:2px 8px;align-items:center}
.bar-row{display:contents}.bar-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.track{background:#eff2f5;height:12px;border-radius:3px;overflow:hidden}
.bar{display:block;height:100%;background:#0969da}.bar.s-passed{background:#1a7f37}
.bar.s-failed{background:#d1242f}.bar.s-error{background:#bf8700}.bar.s-skipped{background:#8c959f}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:8px 0}
button{border:1px solid #d1d9e0;background:#f6f8fa;border-radius:6px;padding:4px 10px;cursor:pointer}
button[aria-pressed=true]{background:#0969da;color:#fff;border-color:#0969da}
#filter{padding:5px 8px;border:1px solid #d1d9e0;border-radius:6px;min-width:260px}
.case{border:1px solid #d1d9e0;border-radius:6px;margin:6px 0;padding:0 10px}
.case>summary{cursor:pointer;padding:6px 0;display:flex;gap:10px;align-items:baseline}
.case.s-failed{border-left:4px solid #d1242f}.case.s-error{border-left:4px solid #bf8700}
.case.s-passed{border-left:4px solid #1a7f37}.cid{font-weight:600;font-family:monospace}
.cname{color:#59636e;flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.flaky{color:#9a6700;font-weight:600}
.body{padding:0 0 10px}pre{background:#f6f8fa;padding:8px;border-radius:6px;overflow:auto;
white-space:pre-wrap;word-break:break-word;max-height:480px;margin:4px 0}
details.part>summary{cursor:pointer;font-weight:600;margin:6px 0}.where{color:#59636e;font-size:12px}
.export{border:1px solid #d1d9e0;border-radius:6px;padding:4px 10px;color:#0969da;text-decoration:none}
.i{width:1em;height:1em;vertical-align:-.15em;flex:none}.i.s-passed{color:#1a7f37}.i.s-failed{color:#d1242f}
.i.s-error{color:#bf8700}.i.s-skipped{color:#8c959f}button[aria-pressed=true] .i{background:#fff;border-radius:50%}
"""

# Status icons drawn as SVG, not emoji: a machine without an emoji font shows emoji as empty boxes.
# Each is drawn once as a <symbol> and referenced by <use> (same document: the CSP fetches nothing).
SHAPES = {
    "passed": '<circle cx="8" cy="8" r="7" fill="currentColor"/><path d="M4.5 8.3l2.3 2.3 4.7-4.9" '
    'fill="none" stroke="#fff" stroke-width="1.8"/>',
    "failed": '<circle cx="8" cy="8" r="7" fill="currentColor"/><path d="M5.2 5.2l5.6 5.6m0-5.6l-5.6 5.6" '
    'stroke="#fff" stroke-width="1.8"/>',
    "error": '<path d="M8 1.2l7 13.2H1z" fill="currentColor"/><path d="M8 5.5v4.2m0 1.6v1.5" stroke="#fff" '
    'stroke-width="1.7"/>',
    "skipped": '<circle cx="8" cy="8" r="7" fill="currentColor"/><path d="M5 5l3.2 3L5 11zm3.6 0l3.2 3-3.2 3z" '
    'fill="#fff"/>',
}
SYMBOLS = (
    '<svg width="0" height="0" style="position:absolute" aria-hidden="true">'
    + "".join(f'<symbol id="i-{s}" viewBox="0 0 16 16">{d}</symbol>' for s, d in SHAPES.items())
    + "</svg>"
)


def icon(status: str) -> str:
    """A status's icon (decorative: its label is next to it); none for an unknown status."""
    if status not in SHAPES:
        return ""
    return f'<svg class="i s-{status}" aria-hidden="true"><use href="#i-{status}"/></svg>'


SCRIPT = """
(function () {
  var status = "all", text = "";
  var cases = Array.prototype.slice.call(document.querySelectorAll("#cases .case"));
  var bars = Array.prototype.slice.call(document.querySelectorAll(".bar-row"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll("button[data-filter]"));
  var input = document.getElementById("filter");
  var shown = document.getElementById("shown");
  function words(el) {
    if (el.specrunText === undefined) el.specrunText = el.textContent.toLowerCase();
    return el.specrunText;
  }
  function apply() {
    var visible = {}, n = 0;
    cases.forEach(function (el) {
      var ok = (status === "all" || el.getAttribute("data-status") === status) &&
        (!text || words(el).indexOf(text) !== -1);
      el.hidden = !ok;
      if (ok) { visible[el.id] = true; n += 1; }
    });
    bars.forEach(function (el) { el.hidden = !visible[el.getAttribute("data-case")]; });
    shown.textContent = n + " of " + cases.length + " shown";
  }
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      status = b.getAttribute("data-filter");
      buttons.forEach(function (x) { x.setAttribute("aria-pressed", String(x === b)); });
      apply();
    });
  });
  input.addEventListener("input", function () { text = input.value.trim().toLowerCase(); apply(); });
  apply();
})();
"""

_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; script-src 'sha256-{_HASH}'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def e(value: Any) -> str:
    """Escaped for HTML text and attribute values."""
    return escape("" if value is None else str(value), quote=True)


def _pre(value: Any, limit: int) -> str:
    return f"<pre>{e(clip(as_text(value), limit))}</pre>"


def _part(title: str, body: str, open_: bool = False) -> str:
    return f'<details class="part"{" open" if open_ else ""}><summary>{e(title)}</summary>{body}</details>'


def _cards(report: Report) -> str:
    s = report.summary
    cards: list[tuple[str, Any, str]] = [
        ("Total", s.get("total_cases"), ""),
        ("Passed", s.get("passed"), "c-passed"),
        ("Failed", s.get("failed"), "c-failed"),
        ("Errors", s.get("errors"), "c-error"),
        ("Skipped", s.get("skipped"), ""),
        ("Pass rate", pct(s.get("overall_pass_rate")), ""),
        ("Duration", fmt_ms(s.get("duration_ms")), ""),
    ]
    runs = summary_runs(s) if report.multi else None
    if runs and runs[1]:  # with --runs, the interval of the rate of runs
        cards.insert(6, ("Pass rate, 95% CI", interval_text(wilson_pct(*runs), False), ""))
    if s.get("uncertain_cases"):
        cards.append(("Uncertain (a judge's samples disagreed)", s["uncertain_cases"], "c-error"))
    if report.multi:
        k = s.get("runs_per_case")
        cards += [("Runs per case", k, ""), ("Stable", s.get("stable_cases"), "c-passed")]
        cards += [("Unstable", s.get("unstable_cases"), "c-failed")]
        cards += [("Consistently failing", s.get("consistently_failing_cases") or 0, "c-failed")]
        cards += [(f"pass^{k}", pct(s.get("pass_hat_k")), ""), (f"pass@{k}", pct(s.get("pass_at_k")), "")]
    if s.get("min_pass_rate") is not None:
        cards.append(("Gate", pct(s["min_pass_rate"]), ""))
    usage = s.get("usage")
    if isinstance(usage, dict):
        cards += [("Tokens", usage.get("total_tokens"), ""), ("Cost", cost(usage.get("cost")), "")]
    body = "".join(
        f'<div class="card {cls}"><div class="num">{e(v if v is not None else "-")}</div>'
        f'<div class="label">{e(label)}</div></div>'
        for label, v, cls in cards
    )
    return f'<section id="summary" class="cards">{body}</section>'


def _charts(listed: list[CaseStats]) -> str:
    """Pass rate and mean duration per case, in the order the page lists them (the first 500)."""
    cases = listed[:MAX_CHART_ROWS]
    if not cases:
        return ""
    longest = max((c.total_ms / c.runs for c in cases if c.runs), default=0.0) or 1.0
    rates, durations = [], []
    for i, c in enumerate(cases):
        label = f'<span class="bar-label" title="{e(c.id)}">{e(c.id)}</span>'
        rate = c.pass_rate or 0.0
        avg = c.total_ms / c.runs if c.runs else 0.0
        row = f'<div class="bar-row" data-case="case-{i}">{label}<span class="track">'
        rates.append(
            f'{row}<span class="bar s-{c.status}" style="width:{rate:.1f}%"></span></span>'
            f"<span>{pct(c.pass_rate)}</span></div>"
        )
        durations.append(
            f'{row}<span class="bar" style="width:{100 * avg / longest:.1f}%"></span></span>'
            f"<span>{fmt_ms(avg if c.runs else None)}</span></div>"
        )
    more = f'<p class="meta">First {len(cases)} of {len(listed)} cases.</p>' if len(listed) > len(cases) else ""
    return (
        '<section id="charts"><h2>Pass rate per case</h2><div class="chart" id="chart-pass-rate">'
        + "".join(rates)
        + '</div><h2>Duration per case (mean)</h2><div class="chart" id="chart-duration">'
        + "".join(durations)
        + f"</div>{more}</section>"
    )


def _ci(interval: Any) -> str:
    return interval_text(interval, False) or "-"


def _agents(report: Report) -> str:
    """Each agent's totals and the agent x case matrix (runs that tested several agents)."""
    agents, grid = report.agents, report.matrix
    if not agents or not grid:
        return ""
    head = "".join(f"<th>{e(n)}</th>" for n in grid.agents)
    stats = [("Pass rate", "pass_rate", pct), ("95% CI", "pass_rate_ci", _ci)]
    stats += [("Latency (mean)", "avg_duration_ms", fmt_ms), ("Cost", "cost", cost)]
    totals = "".join(
        f"<tr><th>{e(label)}</th>" + "".join(f"<td>{e(fmt(agents[n].get(key)))}</td>" for n in grid.agents) + "</tr>"
        for label, key, fmt in stats
    )
    rows = "".join(
        f"<tr><td>{e(case_id)}</td>"
        + "".join(
            f'<td class="s-{e(cells[n].status)}">{icon(cells[n].status)} {pct(cells[n].pass_rate)}</td>'
            if n in cells
            else "<td>-</td>"
            for n in grid.agents
        )
        + "</tr>"
        for _, case_id, cells in grid.rows
    )
    return (
        f'<section id="matrix"><h2>Agents</h2><table><tr><th>Case</th>{head}</tr>{rows}{totals}</table></section>'
    )


EXPORT_FIELDS = (
    "id agent name status runs passed failed errors skipped pass_rate consistency avg_duration_ms "
    "min_duration_ms max_duration_ms file line reason"
).split()


def export_rows(report: Report) -> list[dict[str, Any]]:
    """The results table the page exports: one row per case (bounded: no outputs)."""
    rows = []
    for case in report.cases:
        data = {**case.to_dict(), "file": case.file, "line": case.line}
        rows.append({k: data.get(k) for k in EXPORT_FIELDS})
    return rows


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text starting like a formula gets a quote first."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _exports(report: Report) -> str:
    rows = export_rows(report)
    document = {"summary": report.summary, "results": rows}
    as_json = json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False, default=str)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, EXPORT_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    links = [
        ("specrun-results.json", "application/json", as_json, "Download JSON"),
        ("specrun-results.csv", "text/csv", buffer.getvalue(), "Download CSV"),
    ]
    return "".join(
        f'<a class="export" id="export-{name.rsplit(".", 1)[1]}" download="{name}" '
        f'href="data:{mime};charset=utf-8;base64,{base64.b64encode(text.encode()).decode()}">{label}</a>'
        for name, mime, text, label in links
    )


def _assertions(record: dict[str, Any], limit: int) -> str:
    items = [a for a in record.get("assertions") or [] if isinstance(a, dict)]
    if not items:
        return ""
    rows = []
    for a in items:
        status = str(a.get("status"))
        expected = _pre(a["expected"], limit) if "expected" in a else ""
        actual = _pre(a["actual"], limit) if "actual" in a else ""
        samples = "".join(f'<div class="meta">{e(clip(line, limit))}</div>' for line in sample_lines(a))
        rows.append(
            f"<tr><td>{icon(status)} {e(status)}</td><td>{e(a.get('type'))}</td>"
            f"<td>{e(clip(str(a.get('message') or ''), limit))}{samples}</td><td>{expected}</td><td>{actual}</td></tr>"
        )
    table = "<table><tr><th>Status</th><th>Type</th><th>Message</th><th>Expected</th><th>Actual</th></tr>"
    open_ = any(a.get("status") != "passed" for a in items)
    return _part(f"Assertions ({len(items)})", table + "".join(rows) + "</table>", open_)


def _turns(record: dict[str, Any], limit: int) -> str:
    turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
    if not turns:
        return ""
    rows = "".join(
        f'<tr><td colspan="3" class="meta">{e(t)}</td></tr>'
        if isinstance(t, str)
        else f"<tr><td>{e(t.get('turn'))}</td><td>{_pre(input_text(t.get('input')), limit)}</td>"
        f"<td>{_pre(t.get('output'), limit)}</td></tr>"
        for t in shown_turns(record, limit)
    )
    body = f"<table><tr><th>Turn</th><th>User</th><th>Agent</th></tr>{rows}</table>"
    checkpoints = record.get("checkpoints") or []
    if checkpoints:
        items = "".join(
            f"<li>{icon('passed' if cp.get('passed') else 'failed')} {e(cp.get('id'))}"
            f" (turn {e(cp.get('reached_at_turn') or '-')})</li>"
            for cp in checkpoints
            if isinstance(cp, dict)
        )
        body += f"<ul>{items}</ul>"
    return _part(f"Conversation ({len(turns)} turns)", body, True)


def _run_body(record: dict[str, Any], limit: int) -> str:
    parts = []
    if record.get("error"):
        label = reason_label(record)
        parts.append(_part(label, _pre(record["error"], limit), True))
    if record.get("turns"):
        parts.append(_turns(record, limit))
    elif record.get("output") is not None:
        parts.append(_part("Output", _pre(record.get("output"), limit), True))
    if record.get("tool_calls"):
        parts.append(_part("Tool calls", _pre(record["tool_calls"], limit)))
    parts.append(_assertions(record, limit))
    return "".join(parts)


def _case(report: Report, case: CaseStats, index: int, limit: int) -> str:
    records = report.records(case)
    first = records[0] if records else {}
    rate = f'<span class="rate">{pct(case.pass_rate)}</span>' if report.multi else ""
    head = (
        f'<summary><span class="icon">{icon(case.status)}</span><span class="cid">{e(report.label(case))}</span>'
        f'<span class="cname">{e(case.name or "")}</span><span>{e(LABELS[case.status])}</span>{rate}'
        + ('<span class="flaky" title="flaky in the run history">flaky</span>' if case.flaky else "")
        + ('<span class="flaky" title="a judge\'s samples disagreed">uncertain</span>' if case.uncertain else "")
        + f"<span>{fmt_ms(case.total_ms / case.runs if case.runs else None)}</span></summary>"
    )
    parts = [f'<div class="where">{e(case.file)}:{case.line}</div>']
    if first.get("input") is not None:
        parts.append(_part("Input", _pre(input_text(first.get("input")), limit), not report.multi))
    if "expected" in first:
        parts.append(_part("Expected", _pre(first["expected"], limit)))
    if not report.multi:
        parts.append(_run_body(first, limit) if first else "")
    else:
        d = case.to_dict()
        stats = [("Pass rate", pct(d["pass_rate"])), ("Pass rate, 95% CI", _ci(d.get("pass_rate_ci")))]
        stats += [("Consistency", d["consistency"])]
        if case.uncertain:
            stats += [("Uncertain runs (a judge's samples disagreed)", str(case.uncertain))]
        stats += [("Distinct outputs", d["distinct_outputs"]), ("Classification", d["classification"])]
        stats += [("Runs (passed/failed/errors)", f"{case.runs} ({case.passed}/{case.failed}/{case.errors})")]
        stats += [("Mean", fmt_ms(d["avg_duration_ms"])), ("Min", fmt_ms(d["min_duration_ms"]))]
        stats += [("Max", fmt_ms(d["max_duration_ms"])), ("Std dev", fmt_ms(d["std_deviation_ms"]))]
        rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in stats)
        parts.append(f"<table>{rows}</table>")
        shown = {id(r) for r in shown_runs(records, limit)}
        for r in records:
            status = str(r.get("status"))
            title = f"Run {r.get('run', '?')}: {status} ({fmt_ms(r.get('duration_ms'))})"
            body = _run_body(r, limit) if id(r) in shown else '<p class="meta">Details in the JSON report.</p>'
            parts.append(_part(title, body, status != "passed" and id(r) in shown))
    return (
        f'<details class="case s-{e(case.status)}" id="case-{index}" data-status="{e(case.status)}">'
        f'{head}<div class="body">{"".join(parts)}</div></details>\n'
    )


def write(report: Report, out: IO[str], limit: int = MAX_CHARS) -> None:
    """Write the page to ``out``, one case at a time."""
    who = " · ".join(f"{k}: {v}" for k, v in report.title_fields())
    started = report.info.get("started_at") or ""
    out.write(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>specrun report</title><style>{CSS}</style></head><body>{SYMBOLS}\n"
        f'<header><h1>specrun report</h1><p class="meta">{e(who)} {e(started)}</p>'
        f'<p class="meta" id="timeout">Timeout: {e(report.timeout_text())}</p></header>\n'
    )
    if report.interrupted:
        out.write(
            '<div class="banner" id="interrupted"><strong>Interrupted</strong>: the run was cut short; '
            f"this report covers the {e(report.summary.get('total_runs'))} results recorded before it stopped.</div>\n"
        )
    if report.incomplete:
        note = e(report.incomplete_note())
        out.write(f'<div class="banner" id="incomplete"><strong>Incomplete</strong>: {note}</div>\n')
    out.write(_cards(report) + "\n")
    env = report.environment
    if env:
        rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in env.items())
        out.write(f'<section id="environment"><h2>Environment</h2><table>{rows}</table></section>\n')
    listed = failures_first(report.cases)  # as the viewer lists a run: what needs a look first
    pairs = "".join(f"<li>{e(line)}</li>" for line in pair_lines(report.summary.get("pairwise")))
    if pairs:
        note = "A win counts when the judge named it in both orders; otherwise a tie."
        out.write(f'<section id="pairwise"><h2>Pairwise</h2><p class="meta">{note}</p><ul>{pairs}</ul></section>\n')
    out.write(_agents(report) + _charts(listed) + "\n")
    counts = {s: sum(c.status == s for c in report.cases) for s in LABELS}
    buttons = '<button type="button" data-filter="all" aria-pressed="true">All</button>' + "".join(
        f'<button type="button" data-filter="{s}" aria-pressed="false">{icon(s)} {LABELS[s]} ({n})</button>'
        for s, n in counts.items()
    )
    out.write(
        f'<section id="results"><h2>Results</h2><div class="controls">{buttons}'
        '<input type="search" id="filter" placeholder="Filter by text" aria-label="Filter by text">'
        f'<span id="shown" class="meta">{len(report.cases)} cases</span>{_exports(report)}</div><div id="cases">\n'
    )
    for i, case in enumerate(listed):
        out.write(_case(report, case, i, limit))
    out.write(f"</div></section>\n<script>{SCRIPT}</script>\n</body></html>\n")


class HTMLReporter(WholeFileReporter):
    """A self-contained HTML report; options: ``max_chars`` per text block (50,000; 0: no limit)."""

    name = "html"
    description = "Self-contained HTML report: summary cards, filters, charts, expandable details"
    extensions = (".html", ".htm")

    def render(self, report: Report, out: IO[str]) -> None:
        write(report, out, int(self.options.get("max_chars", MAX_CHARS)))
