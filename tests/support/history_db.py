"""A history database in the contract's shape (tables ``runs`` and ``cases``), filled from a
run's JSONL result stream: what the viewer tests read when no run recorded itself."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, started_at TEXT, ended_at TEXT, argv TEXT, agents TEXT,
  suites TEXT, suites_hash TEXT, git_commit TEXT, total INT, passed INT, failed INT, errors INT, skipped INT,
  not_run INT, duration_ms REAL, cost REAL, interrupted INT, stream TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS cases(run_id TEXT, case_id TEXT, run_index INT, agent TEXT, suite TEXT, line INT,
  status TEXT, duration_ms REAL, tokens INT, cost REAL, error TEXT, cached INT, fingerprint TEXT,
  content_hash TEXT, result TEXT);
"""


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def record(db: Path, stream: Path, started_at: str, argv: list[str] | None = None) -> str:
    """Add the run in ``stream`` to ``db``; returns its id."""
    lines = [json.loads(line) for line in stream.read_text().splitlines() if line.strip()]
    start = next((r for r in lines if r.get("type") == "start"), {})
    summary = next((r for r in lines if r.get("type") == "summary"), {})
    results = [r for r in lines if r.get("type") == "result"]
    run_id = uuid.uuid4().hex
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    agents = sorted({str(r.get("agent")) for r in results})
    suites = sorted({str(r.get("file")) for r in results})
    cost = sum(float((r.get("usage") or {}).get("cost") or 0) for r in results) or None
    con.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            run_id, started_at, started_at, json.dumps(argv or ["specrun"]), json.dumps(agents), json.dumps(suites),
            _hash(suites), "abc1234", summary.get("total"), summary.get("passed"), summary.get("failed"),
            summary.get("errors"), summary.get("skipped"), summary.get("not_run"), summary.get("duration_ms"), cost,
            int(bool(summary.get("interrupted"))), str(stream), json.dumps({**start, **summary}),
        ),
    )  # fmt: skip
    for r in results:
        usage = r.get("usage") or {}
        con.execute(
            "INSERT INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id, r["id"], r.get("run", 1), r.get("agent"), r.get("file"), r.get("line"), r["status"],
                r.get("duration_ms"), usage.get("total_tokens"), usage.get("cost"), r.get("error"), 0,
                _hash([r.get("output"), r.get("turns")]), _hash(r.get("input")), json.dumps(r),
            ),
        )  # fmt: skip
    con.commit()
    con.close()
    return run_id
