"""The viewer's reads of the history database: runs, the cases of a run, a case across runs.

The tables are the history store's (``runs`` and ``cases``, see ``specrun.history``); the
database is opened read-only, so nothing the viewer does can change the history. A case of a
run is one (suite, case id, agent): its ``--runs`` repetitions are grouped into one ``Entry``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

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
    def key(self) -> tuple[str, str, str]:
        return (self.suite, self.case_id, self.agent)

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

    def results(self) -> list[dict[str, Any]]:
        """The full result record of each repetition (as the stream has it), in run order."""
        out = []
        for r in self.rows:
            try:
                data = json.loads(r["result"] or "{}")
            except ValueError:
                data = {}
            out.append(data if isinstance(data, dict) else {})
        return out

    @property
    def name(self) -> str:
        first = self.results()[0] if self.rows else {}
        return str(first.get("name") or "")


class Store:
    """Read-only access to one history database."""

    def __init__(self, path: Path):
        self.path = path

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute(sql, args).fetchall()]
        finally:
            db.close()

    def runs(self, limit: int = 500) -> list[dict[str, Any]]:
        """The newest runs first, with their JSON columns decoded."""
        return [_decoded(r) for r in self._query("SELECT * FROM runs ORDER BY started_at DESC LIMIT ?", (limit,))]

    def run(self, run_id: str) -> dict[str, Any] | None:
        found = self._query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _decoded(found[0]) if found else None

    def entries(self, run_id: str) -> list[Entry]:
        """The cases of a run, failures first, then in suite order."""
        rows = self._query("SELECT * FROM cases WHERE run_id = ? ORDER BY suite, line, case_id, run_index", (run_id,))
        return sorted(_grouped(rows), key=lambda e: ORDER.get(e.status, 9))

    def timeline(self, suite: str, case_id: str, agent: str, limit: int = 100) -> list[tuple[dict[str, Any], Entry]]:
        """A case in each run that ran it, newest first: ``(run, entry)``."""
        rows = self._query(
            "SELECT c.* FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.suite = ? AND c.case_id = ?"
            " AND c.agent = ? ORDER BY r.started_at DESC, c.run_index",
            (suite, case_id, agent),
        )
        entries = _grouped(rows)[:limit]
        runs = {r["id"]: r for r in self.runs(10_000)}
        return [(runs[e.run_id], e) for e in entries if e.run_id in runs]


def _grouped(rows: list[dict[str, Any]]) -> list[Entry]:
    entries: dict[tuple[str, str, str, str], Entry] = {}
    for r in rows:
        key = (str(r["run_id"]), str(r["suite"] or ""), str(r["case_id"]), str(r["agent"] or ""))
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = Entry(*key)
        entry.rows.append(r)
    return list(entries.values())


def _decoded(run: dict[str, Any]) -> dict[str, Any]:
    for key in ("argv", "agents", "suites", "summary"):
        try:
            run[key] = json.loads(run.get(key) or "null")
        except ValueError:
            run[key] = None
    run["agents"] = [str(a) for a in run["agents"]] if isinstance(run["agents"], list) else []
    run["suites"] = [str(s) for s in run["suites"]] if isinstance(run["suites"], list) else []
    return run


def flaky(entries: list[Entry]) -> bool:
    """The viewer's flaky marker: some run's repetitions disagreed, or the verdict flipped back
    and forth over the runs (passed, failed, passed...), as a single regression does not."""
    if any(len({str(r["status"]) for r in e.rows} - {"skipped"}) > 1 for e in entries):
        return True
    verdicts = [e.status for e in entries if e.status != "skipped"]
    return sum(a != b for a, b in pairwise(verdicts)) >= 2
