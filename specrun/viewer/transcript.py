"""A case's full transcript: input messages with attachments, output, tool calls, dynamic turns
with the checkpoints each reached, and every assertion with expected vs actual and a judge's
reasoning and score (each sample's, for a judge that sampled). Everything is read from the
result record the history stored."""

from __future__ import annotations

from functools import partial
from typing import Any

from .._history.snapshots import Snapshot
from .._report.rates import sample_lines
from .html import as_text, badge, damaged, e, money, ms, pre
from .store import Entry


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _content(content: Any) -> str:
    """A message's content: text, or parts (text shown; an attachment named, never fetched)."""
    if not isinstance(content, list):
        return pre(content)
    out = []
    for part in content:
        if not isinstance(part, dict):
            out.append(pre(part))
        elif part.get("type") == "text":
            out.append(pre(part.get("text")))
        else:
            where = part.get("name") or part.get("source") or part.get("url") or "inline data"
            size = f", {len(str(part['data']))} base64 characters" if part.get("data") else ""
            label = f"attachment {part.get('type', 'attachment')}: {as_text(where)[:300]}{size}"
            out.append(f'<div class="attachment">{e(label)}</div>')
    return "".join(out)


def messages(items: Any) -> str:
    """Chat messages, each with its role, content and tool calls."""
    if not isinstance(items, list):
        return pre(items) if items is not None else ""
    out = []
    for m in items:
        if not isinstance(m, dict):
            out.append(pre(m))
            continue
        role = str(m.get("role") or "message")
        calls = tool_calls(m.get("tool_calls")) if m.get("tool_calls") else ""
        content = _content(m.get("content"))
        out.append(f'<div class="msg role-{e(role)}"><div class="role">{e(role)}</div>{content}{calls}</div>')
    return "".join(out)


def tool_calls(calls: Any) -> str:
    if not isinstance(calls, list) or not calls:
        return ""
    rows = []
    for c in calls:
        c = c if isinstance(c, dict) else {"name": c}
        fn = _dict(c.get("function"))  # a chat message's call
        name, arguments = c.get("name") or fn.get("name"), c.get("arguments", fn.get("arguments"))
        result = pre(c["result"]) if c.get("result") is not None else '<span class="meta">-</span>'
        rows.append(f"<tr><td><code>{e(name)}</code></td><td>{pre(arguments)}</td><td>{result}</td></tr>")
    return (
        '<table class="tools"><thead><tr><th>Tool</th><th>Arguments</th><th>Result</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _span_label(span: dict[str, Any]) -> str:
    """What a span did, in a few words: a tool's name and arguments, a model call's tokens."""
    a = _dict(span.get("attributes"))
    tool = a.get("gen_ai.tool.name") or a.get("tool.name")
    if tool is not None:
        arguments = a.get("gen_ai.tool.call.arguments", a.get("input.value"))
        return f"tool {tool}" + (f" {as_text(arguments)[:120]}" if arguments is not None else "")
    tokens = [a.get(k) for k in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens") if a.get(k) is not None]
    return f"tokens {' + '.join(str(t) for t in tokens)}" if tokens else ""


def _span_ms(value: Any) -> str:
    """A span's duration: spans are often shorter than a millisecond, which ``ms`` rounds away."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value >= 1000:
        return ms(value)
    return f"{value:.2f}ms" if value < 10 else f"{value:.0f}ms"


def trace_tree(trace: Any) -> str:
    """A recorded trace (``traces: otel``) as its span tree, each span with its duration."""
    spans = [s for s in _dict(trace).get("spans") or [] if isinstance(s, dict)]
    if not spans:
        return ""
    ids = {s.get("span_id") for s in spans}
    children: dict[Any, list[dict[str, Any]]] = {}
    for span in spans:  # a span whose parent was not kept is shown at the top
        children.setdefault(span.get("parent_id") if span.get("parent_id") in ids else None, []).append(span)

    shown: set[int] = set()  # each span once, however an agent reused its ids

    def items(parent: Any, depth: int) -> str:
        out = []
        for span in children.get(parent, []) if depth < 64 else []:
            if id(span) in shown:
                continue
            shown.add(id(span))
            failed = span.get("status") == "error"
            mark = f" {badge('error')} {e(span.get('message') or '')}" if failed else ""
            label = _span_label(span)
            below = items(span.get("span_id"), depth + 1) if span.get("span_id") is not None else ""
            out.append(
                f'<li><code>{e(span.get("name"))}</code> <span class="meta">{e(_span_ms(span.get("duration_ms")))}'
                f"{' · ' + e(label) if label else ''}</span>{mark}{below}</li>"
            )
        return f'<ul class="spans">{"".join(out)}</ul>' if out else ""

    dropped = _dict(trace).get("dropped")
    note = f'<div class="meta">{e(dropped)} more spans not kept</div>' if dropped else ""
    return f"<h4>Trace ({len(spans)} spans)</h4>{items(None, 0)}{note}"


def _turns(record: dict[str, Any]) -> str:
    turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
    checkpoints = [c for c in record.get("checkpoints") or [] if isinstance(c, dict)]
    by_turn: dict[Any, list[dict[str, Any]]] = {}
    for cp in checkpoints:
        by_turn.setdefault(cp.get("reached_at_turn"), []).append(cp)
    out = []
    for t in turns:
        reached = "".join(
            f'<div class="checkpoint s-passed">✓ checkpoint <b>{e(cp.get("id"))}</b> reached</div>'
            for cp in by_turn.get(t.get("turn"), [])
        )
        out.append(
            f'<div class="turn"><div class="meta">Turn {e(t.get("turn"))}</div>'
            f'<div class="msg role-user"><div class="role">user (simulator)</div>{pre(t.get("input"))}</div>'
            f'<div class="msg role-assistant"><div class="role">agent</div>{pre(t.get("output"))}'
            f"{tool_calls(t.get('tool_calls'))}</div>{reached}</div>"
        )
    missed = [cp for cp in checkpoints if not cp.get("reached_at_turn")]
    out += [
        f'<div class="checkpoint">{"–" if not cp.get("required", True) else "✗"} checkpoint '
        f"<b>{e(cp.get('id'))}</b> never reached</div>"
        for cp in missed
    ]
    return f"<h4>Conversation ({len(turns)} turns)</h4>" + "".join(out)


def _assertions(record: dict[str, Any], approve: Any) -> str:
    items = [a for a in record.get("assertions") or [] if isinstance(a, dict)]
    if not items:
        return ""
    rows = []
    for i, a in enumerate(items):
        details = _dict(a.get("details"))
        judge = ""
        if details.get("reason") or a.get("score") is not None:
            reason = f": {details['reason']}" if details.get("reason") else ""
            judge = f'<div class="judge">score {e(a.get("score"))}{e(reason)}</div>'
        judge += "".join(f'<div class="judge sample">{e(line)}</div>' for line in sample_lines(a))
        action = ""
        if a.get("status") != "passed" and Snapshot.from_details(details) is not None and approve is not None:
            action = approve(i)
        if a.get("status") in ("passed", "failed") and "reason" in details and approve is not None:
            action += approve(i, "label")  # a judge's verdict: does the person agree with it?
        expected = pre(a["expected"]) if "expected" in a else ""
        actual = pre(a["actual"]) if "actual" in a else ""
        rows.append(
            f"<tr><td>{badge(str(a.get('status')))}</td><td>{e(a.get('type'))}</td>"
            f"<td>{e(a.get('message') or '')}{judge}{action}</td><td>{expected}</td><td>{actual}</td></tr>"
        )
    return (
        "<h4>Assertions</h4><table><thead><tr><th>Status</th><th>Type</th><th>Message</th><th>Expected</th>"
        f"<th>Actual</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def repetition(record: dict[str, Any], approve: Any = None) -> str:
    """One run of a case: facts, error, input, output or turns, tool calls, assertions."""
    usage = _dict(record.get("usage"))
    facts = [
        ("Status", badge(str(record.get("status")))),
        ("Duration", e(ms(record.get("duration_ms")))),
        ("Tokens", e(usage.get("total_tokens", "-"))),
        ("Cost", e(money(usage.get("cost")))),
        ("Agent", e(record.get("agent") or "-")),
        ("Where", e(f"{record.get('file')}:{record.get('line')}")),
    ]
    parts = ['<div class="facts">' + " · ".join(f"{k}: {v}" for k, v in facts) + "</div>"]
    if record.get("error"):
        parts.append(f"<h4>{e(str(record.get('status')).capitalize())}</h4>{pre(record['error'])}")
    if record.get("traceback"):  # where the agent raised: long, so closed until asked for
        parts.append(f'<details class="traceback"><summary>Traceback</summary>{pre(record["traceback"])}</details>')
    for warning in record.get("warnings") or []:
        parts.append(f'<div class="meta">warning: {e(warning)}</div>')
    if record.get("input") is not None:
        parts.append("<h4>Input</h4>" + messages(record.get("input")))
    if record.get("turns") is not None:
        parts.append(_turns(record))
    else:
        parts.append('<h4>Output</h4><div class="msg role-assistant">' + pre(record.get("output")) + "</div>")
        if record.get("tool_calls"):
            parts.append("<h4>Tool calls</h4>" + tool_calls(record.get("tool_calls")))
    if record.get("trace"):
        parts.append(trace_tree(record["trace"]))
    if "expected" in record:
        parts.append("<h4>Expected</h4>" + pre(record.get("expected")))
    parts.append(_assertions(record, approve))
    return "".join(parts)


def _checked(row: dict[str, Any], record: dict[str, Any], approve: Any) -> str:
    """One repetition as far as its history row can be read, after what is damaged in it."""
    note = damaged("This result's history row is damaged", row["damaged"]) if row.get("damaged") else ""
    if row.get("result") is None:  # nothing but the row's own columns to show
        facts = f"Status: {badge(str(row.get('status')))} · Duration: {e(ms(row.get('duration_ms')))}"
        return f'{note}<div class="facts">{facts}</div>'
    try:
        return note + repetition({"status": row.get("status"), **record}, approve)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a shape specrun never writes
        problem = f"its result record cannot be shown: {type(exc).__name__}: {exc}"
        return damaged("This result's history row is damaged", [*row.get("damaged", []), problem])


def transcript(entry: Entry, approve: Any = None) -> str:
    """Every repetition of a case (``approve(row, assertion index, kind)`` makes a snapshot's
    Approve button, kind ``label`` the I agree / I disagree buttons of a judge's verdict)."""
    records = entry.results()
    if len(records) == 1:
        return _checked(entry.rows[0], records[0], approve and partial(approve, entry.rows[0]))
    out = []
    for row, record in zip(entry.rows, records, strict=True):
        title = f"Run {row['run_index']}: {row['status']} ({ms(row['duration_ms'])})"
        body = _checked(row, record, approve and partial(approve, row))
        out.append(
            f"<details{' open' if row['status'] != 'passed' else ''}><summary>{e(title)}</summary>{body}</details>"
        )
    return "".join(out)
