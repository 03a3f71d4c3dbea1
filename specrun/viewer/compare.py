"""A case across runs (timeline, flaky marker, output changes) and the comparison of two runs
(newly failing, fixed, still failing, flaky, slower; outputs side by side), with both pass rates'
95% intervals and whether the change is larger than chance (McNemar's paired test).

Two runs are sorted by ``specrun._history.diff.compare_sides``, the rules ``specrun diff`` applies to two
reports, so the viewer and the pull-request comment never disagree.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from .._core.identity import CaseKey
from .._history.diff import Change, Outcome, Side, compare_sides
from .._report.rates import summary_rate_text
from .html import as_text, badge, damaged, e, layout, ms, table, url, when
from .store import Entry, Store

MAX_CHANGES = 10  # output changes shown on a case's page


def _output(entry: Entry | None) -> str:
    """What the agent said in a case's first repetition (its turns, for a dynamic case)."""
    if entry is None:
        return '<p class="meta">not in this run</p>'
    record = entry.results()[0] if entry.rows else {}
    if record.get("turns"):
        text = "\n\n".join(
            f"[turn {t.get('turn')}] user: {as_text(t.get('input'))}\nagent: {as_text(t.get('output'))}"
            for t in record["turns"]
            if isinstance(t, dict)
        )
    else:
        text = as_text(record.get("output"))
    error = f'<p class="s-error">{e(record.get("error"))}</p>' if record.get("error") else ""
    note = damaged("Its history row is damaged", entry.damaged) if entry.damaged else ""
    return f"{badge(entry.status)} {e(ms(entry.duration_ms))}{note}{error}<pre>{e(text)}</pre>"


def _sides(before: Entry | None, after: Entry | None, titles: tuple[str, str]) -> str:
    return (
        f'<div class="sides"><div><h4>{e(titles[0])}</h4>{_output(before)}</div>'
        f"<div><h4>{e(titles[1])}</h4>{_output(after)}</div></div>"
    )


def case_page(store: Store, suite: str, case_id: str, agent: str) -> str:
    """One case in every run that ran it: a timeline, the flaky marker, each output change."""
    timeline = store.timeline(suite, case_id, agent)
    title = f"{case_id} @{agent}" if agent else case_id
    crumbs = [(title, url("/case", suite=suite, id=case_id, agent=agent))]
    if not timeline:
        return layout(title, f"<h1>{e(title)}</h1><p>No recorded run has this case.</p>", crumbs)
    oldest_first = list(reversed(timeline))
    ticks = "".join(
        f'<a class="tick s-{e(x.status)}" href="{e(url("/run", id=run["id"]))}"'
        f' title="{e(when(run["started_at"]))}: {e(x.status)}" data-status="{e(x.status)}"></a>'
        for run, x in oldest_first
    )
    body = [f"<h1>{e(title)}</h1>", f'<p class="meta">{e(suite)}</p>']
    flips = store.flaky([case_id]).get(CaseKey(suite, case_id, agent))
    if flips is not None:
        note = f"it both passed and failed in its recent runs (its verdict flipped {flips} times)"
        body.append(f'<p><span class="flaky" id="flaky">flaky</span> {e(note)}</p>')
    body.append(f'<h2>Timeline (oldest to newest)</h2><div class="timeline" id="timeline">{ticks}</div>')
    rows = [
        f'<tr data-status="{e(x.status)}"><td><a href="{e(url("/run", id=run["id"]))}">'
        f"{e(when(run['started_at']))}</a></td>"
        f"<td>{badge(x.status)}{' (damaged in the history)' if x.damaged else ''}</td>"
        f'<td class="num">{e(ms(x.duration_ms))}</td><td class="num">{x.tokens}</td>'
        f"<td><code>{e(', '.join(sorted(x.fingerprints))[:12])}</code></td></tr>"
        for run, x in timeline
    ]
    body.append(table(["Run", "Status", "Duration", "Tokens", "Output hash"], rows, id_="case-runs"))
    changed = [(a, b) for a, b in pairwise(oldest_first) if a[1].fingerprints != b[1].fingerprints]
    body.append(f"<h2>Output changes ({len(changed)})</h2>")
    for (old_run, old), (new_run, new) in reversed(changed[-MAX_CHANGES:]):  # the newest first
        titles = (f"Before: {when(old_run['started_at'])}", f"After: {when(new_run['started_at'])}")
        body.append(_sides(store.entry(old.run_id, old.key), store.entry(new.run_id, new.key), titles))
    if not changed:
        body.append('<p class="meta">The output never changed.</p>')
    return layout(title, "".join(body), crumbs)


def _side(run: dict[str, Any], entries: list[Entry]) -> tuple[Side, dict[int, Entry]]:
    cases: dict[CaseKey, Outcome] = {}
    owners: dict[int, Entry] = {}
    for x in entries:
        rates = [r["status"] for r in x.rows if r["status"] != "skipped"]
        outcome = Outcome(
            id=x.case_id,
            file=x.suite,
            status=x.status,
            agent=x.agent or "",
            name=x.name or None,
            pass_rate=100.0 * rates.count("passed") / len(rates) if rates else None,
            runs=len(rates),
            duration_ms=x.duration_ms,
            cost=x.cost / len(x.rows) if x.cost is not None else None,
        )
        cases[outcome.key] = outcome
        owners[id(outcome)] = x
    incomplete = ["the run was interrupted"] if run["interrupted"] else []
    return Side(Path(str(run["id"])), cases, run.get("summary") or {}, incomplete), owners


def compare_page(store: Store, a: str, b: str) -> str | None:
    """Run ``a`` (before) against run ``b`` (after)."""
    run_a, run_b = store.run(a), store.run(b)
    if run_a is None or run_b is None:
        return None
    (old, old_of), (new, new_of) = _side(run_a, store.entries(a)), _side(run_b, store.entries(b))
    c = compare_sides(old, new)

    def entry(outcome: Outcome | None, owners: dict[int, Entry]) -> Entry | None:
        return owners.get(id(outcome)) if outcome is not None else None

    both = [*c.newly_failing, *c.fixed, *c.still_failing, *c.moved, *c.newly_skipped, *c.missing, *c.added]
    flaky = store.flaky([ch.case.id for ch in both])

    def unstable(ch: Change) -> bool:
        """Its pass rate moved between the runs, or its verdict went back and forth in the
        history (a single regression is newly failing, not flaky)."""
        x = entry(ch.new, new_of) or entry(ch.old, old_of)
        return ch in c.moved or (x is not None and flaky.get(x.key, 0) >= 2)

    sections = [
        ("Newly failing", "newly-failing", c.newly_failing),
        ("Fixed", "fixed", c.fixed),
        ("Still failing", "still-failing", c.still_failing),
        ("Flaky", "flaky", [ch for ch in both if unstable(ch)]),
        ("Slower", "slower", c.slower),
        ("Newly skipped", "newly-skipped", c.newly_skipped),
        ("Missing from the new run", "missing", c.missing),
    ]
    titles = (f"Before: {when(run_a['started_at'])}", f"After: {when(run_b['started_at'])}")
    body = [f"<h1>Compare runs</h1><p class='meta'>{e(titles[0])} → {e(titles[1])}</p>"]
    rates = f"Pass rate: {summary_rate_text(old.summary)} → {summary_rate_text(new.summary)}"
    body.append(f'<p id="pass-rates">{e(rates)}</p><p id="paired">{e(c.paired.text())}</p>')
    counts = "".join(f"<div class='card'><b>{len(items)}</b>{e(label)}</div>" for label, _, items in sections)
    body.append(f'<div class="cards">{counts}</div>')
    for label, anchor, items in sections:
        if not items:
            continue
        body.append(f'<section id="{anchor}"><h2>{e(label)} ({len(items)})</h2>')
        for ch in items:
            body.append(_change(ch, entry(ch.old, old_of), entry(ch.new, new_of), titles))
        body.append("</section>")
    if not any(items for _, _, items in sections):
        body.append("<p>No case changed its verdict, and none got slower.</p>")
    crumbs = [("Compare", url("/compare", a=a, b=b))]
    return layout("Compare runs", "".join(body), crumbs)


def _change(ch: Change, before: Entry | None, after: Entry | None, titles: tuple[str, str]) -> str:
    x = after or before
    assert x is not None
    delta = ch.duration_delta
    moved = f"{ms(ch.old.duration_ms if ch.old else None)} → {ms(ch.new.duration_ms if ch.new else None)}"
    agent = f" @{x.agent}" if x.agent else ""
    link = url("/case", suite=x.suite, id=x.case_id, agent=x.agent)
    return (
        f'<details class="case s-{e(x.status)}" open><summary><span class="cid">{e(x.case_id)}</span>'
        f'<span class="meta">{e(agent)}</span><span class="cname">{e(x.name)}</span>'
        f'<span>{e(moved if delta else "")}</span><a href="{e(link)}">history</a></summary>'
        f"{_sides(before, after, titles)}</details>"
    )
