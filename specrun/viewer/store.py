"""The viewer's reads of the run history: runs, the cases of a run, a case across runs.

Everything is read through :class:`specrun._history.store.History`'s reader API (the viewer's
one write to the history is a person's label of a judged result, ``add_label``), each row
checked on the way (:mod:`specrun.viewer.rows`: a damaged one is shown as far as it can be read,
with what is wrong). A case of a run is one (suite, case id, agent): its ``--runs`` repetitions
are grouped into one ``Entry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._core.identity import CaseKey
from .._history.store import History
from .rows import checked_case, checked_run

ORDER = {"failed": 0, "error": 1, "passed": 2, "skipped": 3}  # failures first


def verdict(statuses: list[str]) -> str:
    """A case's verdict over its repetitions: every one passed, else failed, else error."""
    ran = [s for s in statuses if s != "skipped"]
    if not ran:
        return "skipped"
    if all(s == "passed" for s in ran):
        return "passed"
    return "failed" if "failed" in ran else "error"


@dataclass
class Entry:
    """One case of one run against one agent, with the rows of its repetitions."""

    run_id: str
    suite: str
    case_id: str
    agent: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.suite, self.case_id, self.agent)

    @property
    def status(self) -> str:
        return verdict([str(r["status"]) for r in self.rows])

    @property
    def duration_ms(self) -> float:
        return sum(float(r["duration_ms"] or 0) for r in self.rows) / max(len(self.rows), 1)

    @property
    def tokens(self) -> int:
        return sum(int(r["tokens"] or 0) for r in self.rows)

    @property
    def cost(self) -> float | None:
        costs = [r["cost"] for r in self.rows if r["cost"] is not None]
        return sum(costs) if costs else None

    @property
    def fingerprints(self) -> set[str]:
        return {str(r["fingerprint"]) for r in self.rows if r["fingerprint"]}

    @property
    def damaged(self) -> list[str]:
        """What is wrong in the history rows of its repetitions (none for an intact case)."""
        many = len(self.rows) > 1
        return [f"run {r['run_index']}: {p}" if many else p for r in self.rows for p in r.get("damaged", [])]

    def results(self) -> list[dict[str, Any]]:
        """The full result record of each repetition (as the stream has it), in run order."""
        return [r["result"] if isinstance(r.get("result"), dict) else {} for r in self.rows]

    @property
    def name(self) -> str:
        first = self.results()[0] if self.rows else {}
        return str(first.get("name") or "")


class Store:
    """What the pages read, through the history's reader API; and the labels a person gives."""

    def __init__(self, history: History):
        self.history = history

    def runs(self, limit: int = 500) -> list[dict[str, Any]]:
        """The newest runs first."""
        return [_listed(checked_run(r)) for r in self.history.runs(limit)]

    def run(self, run_id: str) -> dict[str, Any] | None:
        found = self.history.run(run_id)
        return _listed(checked_run(found)) if found is not None else None

    def entries(self, run_id: str) -> list[Entry]:
        """The cases of a run, failures first, then in suite order."""
        rows = sorted(
            map(checked_case, self.history.cases(run_id)),
            key=lambda r: (r["suite"] or "", r["line"] or 0, r["run_index"]),
        )
        return sorted(_grouped(rows), key=lambda e: ORDER.get(e.status, 9))

    def entry(self, run_id: str, key: CaseKey) -> Entry | None:
        """One case of a run."""
        return next((x for x in self.entries(run_id) if x.key == key), None)

    def timeline(self, suite: str, case_id: str, agent: str, limit: int = 100) -> list[tuple[dict[str, Any], Entry]]:
        """A case in each run that ran it, newest first: ``(run, entry)``; an entry's rows lack
        ``result`` (``entry`` reads it)."""
        found = self.history.timeline(case_id, limit)
        rows = [checked_case({**r, "case_id": case_id}) for r in found if r["suite"] == suite and r["agent"] == agent]
        runs = {r["run_id"]: {"id": r["run_id"], "started_at": r["started_at"]} for r in rows}
        return [(runs[e.run_id], e) for e in _grouped(rows)]

    def add_label(self, row: dict[str, Any]) -> None:
        """Keep a person's label of a judged result (a row of the history's ``labels``)."""
        self.history.add_label(row)

    def flaky(self, case_ids: list[str]) -> dict[CaseKey, int]:
        """Those of ``case_ids`` that are flaky in the history (the definition ``specrun
        history`` and the console use), with how often their verdict flipped."""
        return {f.key: f.flips for f in self.history.flaky(case_ids=case_ids)}


def _grouped(rows: list[dict[str, Any]]) -> list[Entry]:
    entries: dict[tuple[str, CaseKey], Entry] = {}
    for r in rows:
        run_id, key = str(r["run_id"]), CaseKey(str(r["suite"] or ""), str(r["case_id"] or ""), str(r["agent"] or ""))
        entry = entries.get((run_id, key))
        if entry is None:
            entry = entries[run_id, key] = Entry(run_id, *key)
        entry.rows.append(r)
    return list(entries.values())


def _listed(run: dict[str, Any]) -> dict[str, Any]:
    """A run row with ``agents`` and ``suites`` as lists of text, whatever the row held."""
    for key in ("agents", "suites", "argv"):
        run[key] = [str(v) for v in run[key]] if isinstance(run.get(key), list) else []
    return run
