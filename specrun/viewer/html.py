"""HTML building blocks of the viewer: escaping, the page layout, badges and figures.

Every value that reaches a page goes through ``e`` (``html.escape`` with quotes), text blocks
through ``pre``; the layout loads only ``/static/`` files, which the app's
Content-Security-Policy allows and nothing else.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import urlencode

from .._core.data import format_duration
from .._report.display import visible

ICONS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "–"}  # text marks: every font has them
MAX_TEXT = 100_000  # characters of one text block on a page; the database keeps everything


def e(value: Any) -> str:
    """Escaped for HTML text and attribute values."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **query: Any) -> str:
    """A same-site link with its query string encoded (None values left out)."""
    params = {k: v for k, v in query.items() if v is not None}
    return path + ("?" + urlencode(params) if params else "")


def as_text(value: Any) -> str:
    """Text as is; anything else as indented JSON; cut to ``MAX_TEXT``."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    text = visible(text)
    if len(text) > MAX_TEXT:
        text = f"{text[:MAX_TEXT]}\n… ({len(text) - MAX_TEXT} more characters)"
    return text


def pre(value: Any, cls: str = "") -> str:
    return f'<pre class="{e(cls)}">{e(as_text(value))}</pre>'


def damaged(title: str, problems: list[str]) -> str:
    """A warning that what the history holds is damaged, with each problem (see ``viewer.rows``)."""
    items = "".join(f"<li>{e(p)}</li>" for p in problems)
    return f'<div class="damaged" role="alert"><b>{e(title)}</b><ul>{items}</ul></div>'


def when(timestamp: Any) -> str:
    """A run's ISO start time as ``2026-11-30 23:10:35`` (UTC, as recorded)."""
    text = str(timestamp or "")
    return text[:19].replace("T", " ") if len(text) >= 19 and text[10] == "T" else text


def badge(status: str) -> str:
    return f'<span class="badge s-{e(status)}">{ICONS.get(status, "")} {e(status)}</span>'


def ms(value: Any) -> str:
    return "-" if value is None else format_duration(float(value) / 1000)


def money(value: Any) -> str:
    return "-" if value is None else f"${float(value):.4f}"


def pct(part: int, whole: int) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def layout(title: str, body: str, crumbs: list[tuple[str, str]] | None = None) -> str:
    """A whole page: ``crumbs`` are ``(label, link)`` pairs after the runs page."""
    trail = "".join(f' › <a href="{e(link)}">{e(label)}</a>' for label, link in crumbs or [])
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)} · specrun</title><link rel="stylesheet" href="/static/viewer.css">'
        '<script src="/static/viewer.js" defer></script></head><body>'
        f'<nav class="crumbs"><a href="/">specrun runs</a>{trail}</nav><main>{body}</main></body></html>\n'
    )


def table(head: list[str], rows: list[str], cls: str = "", id_: str = "") -> str:
    """A table; ``head`` is escaped here, each row is already HTML (``<tr>...</tr>``)."""
    attrs = (f' class="{e(cls)}"' if cls else "") + (f' id="{e(id_)}"' if id_ else "")
    heads = "".join(f"<th>{e(h)}</th>" for h in head)
    return f"<table{attrs}><thead><tr>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
