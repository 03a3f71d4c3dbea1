"""The run history: every run and each case's results, in one SQLite database per project.

The database is ``<project root>/.specrun/history.db`` unless ``specrun.yaml`` says otherwise
(``history: false`` turns it off; ``history: PATH`` or ``history: {path, flaky_window, keep}``).
Runs are written into it as their results stream (see :mod:`specrun._history.recording`); this module
owns the file, its schema and the readers: ``specrun history``, ``--lf``/``--ff``, flaky marks,
and other tools (the viewer, shards) through :class:`History`.

Tables ``runs``, ``cases`` and ``labels`` (a person's pass/fail of judged outputs, see
``_SCHEMA``), and ``case_state``: each case's latest verdicts, kept up to date as results are
added, so that what a run reads at its start (flaky cases, ``--lf``, durations) costs the same
however long the history is. WAL mode and a busy timeout: runs in one project at once never
corrupt it and readers never wait for a writer. The format is ``PRAGMA user_version``: a
database written by a newer specrun, or a file that is not a specrun history at all, is a
:class:`HistoryError` saying what to do, never a traceback.


**Flaky.** A case is flaky when, among its latest ``flaky_window`` results (default 10) against
the same agent at the same revision (:mod:`specrun._history.revision`) since its content last changed,
at least one passed and at least one failed or errored: a new revision or an edited case
starts afresh, so one fix is not a flip. Skipped results and cases cut short by Ctrl-C do
not count.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.errors import UsageError
from .._core.identity import CaseKey

DEFAULT_PATH = ".specrun/history.db"
DEFAULT_FLAKY_WINDOW = 10
DEFAULT_KEEP = 100  # runs kept; older ones are dropped at the end of a run
# PRAGMA user_version of the schema below (1: before ``revision``, 2: before ``labels``, 3: before
# ``runs.rejudge``; migrated on open)
FORMAT = 4
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another run's (each holds the lock for microseconds)

_LABELS = """
CREATE TABLE IF NOT EXISTS labels(
    suite TEXT, case_id TEXT, agent TEXT, run_id TEXT, run_index INT, assertion INT, human TEXT,
    output TEXT, input TEXT, labelled_at TEXT, PRIMARY KEY (suite, case_id, agent, run_id, run_index, assertion));
"""
_SCHEMA = (
    _LABELS
    + """
CREATE TABLE IF NOT EXISTS runs(
    id TEXT PRIMARY KEY, started_at TEXT, ended_at TEXT, argv TEXT, agents TEXT, suites TEXT,
    suites_hash TEXT, git_commit TEXT, total INT, passed INT, failed INT, errors INT, skipped INT,
    not_run INT, duration_ms REAL, cost REAL, interrupted INT, stream TEXT, summary TEXT, rejudge TEXT);
CREATE TABLE IF NOT EXISTS cases(
    run_id TEXT, case_id TEXT, run_index INT, agent TEXT, suite TEXT, line INT, status TEXT,
    duration_ms REAL, tokens INT, cost REAL, error TEXT, cached INT, fingerprint TEXT,
    content_hash TEXT, result TEXT, revision TEXT);
CREATE TABLE IF NOT EXISTS case_state(
    suite TEXT, case_id TEXT, agent TEXT, content_hash TEXT, verdicts TEXT, last_run TEXT,
    last_failed INT, duration_ms REAL, revision TEXT, PRIMARY KEY (suite, case_id, agent));
CREATE INDEX IF NOT EXISTS runs_by_start ON runs(started_at);
CREATE INDEX IF NOT EXISTS cases_by_run ON cases(run_id);
CREATE INDEX IF NOT EXISTS cases_by_case ON cases(case_id, agent);
"""
)

# Format 1 had no ``revision``: its results are kept, with none (they count towards no flaky mark).
# Format 2 had no ``labels`` (a person's pass/fail of a judged output, from the viewer): none yet.
# Format 3 had no ``runs.rejudge`` (what a ``specrun rejudge`` run judged again): its runs have none.
_MIGRATIONS = {
    1: ("ALTER TABLE cases ADD COLUMN revision TEXT", "ALTER TABLE case_state ADD COLUMN revision TEXT"),
    2: (_LABELS,),
    3: ("ALTER TABLE runs ADD COLUMN rejudge TEXT",),
}
_JSON_COLUMNS = ("argv", "agents", "suites", "summary", "result", "input")
# A verdict that says something about the agent: skips do not, nor a case cut short by Ctrl-C.
_LETTERS = {"passed": "P", "failed": "F", "error": "E"}
_STATUS = {letter: status for status, letter in _LETTERS.items()}
_LETTER_OF = "CASE status " + " ".join(f"WHEN '{s}' THEN '{letter}'" for s, letter in _LETTERS.items()) + " END"
_KEPT_VERDICTS = 100  # letters of case_state.verdicts, newest first: the longest --window
# ``verdicts`` carry on while the content and the agent's revision are the same (``IS``: a row
# migrated from format 1 has no revision, and starts afresh); ``duration_ms`` always; ``last_failed`` says
# whether any result of the case's latest run failed or errored. SET reads the row's old values.
_UPDATE_STATE = f"""
INSERT INTO case_state
SELECT suite, case_id, agent, content_hash, {_LETTER_OF}, run_id, status != 'passed', duration_ms, revision
FROM cases WHERE rowid > ? AND status IN ('passed', 'failed', 'error') AND error IS NOT 'interrupted' ORDER BY rowid
ON CONFLICT (suite, case_id, agent) DO UPDATE SET
    verdicts = substr(
        excluded.verdicts
        || iif(content_hash = excluded.content_hash AND revision IS excluded.revision, verdicts, ''),
        1, {_KEPT_VERDICTS}
    ),
    content_hash = excluded.content_hash,
    revision = excluded.revision,
    last_failed = iif(last_run = excluded.last_run, max(last_failed, excluded.last_failed), excluded.last_failed),
    last_run = excluded.last_run,
    duration_ms = (duration_ms + excluded.duration_ms) / 2
"""


class HistoryError(UsageError):
    """The history database cannot be used (exit 2); the message says how to fix it."""


@dataclass
class Flaky:
    """A case whose verdict changed between passed and failed over its recent runs (see the module docstring)."""

    key: CaseKey
    passed: int
    failed: int  # failed or errored
    flips: int  # changes between passed and not passed, oldest to newest
    last: str  # its latest status
    content_hash: str = ""  # of the case those results are of
    revision: str = ""  # of the agent they were measured against (specrun._history.revision)


@dataclass(frozen=True)
class Settings:
    """The ``history:`` setting of ``specrun.yaml``, resolved."""

    path: Path | None  # None: history is off
    flaky_window: int = DEFAULT_FLAKY_WINDOW
    keep: int = DEFAULT_KEEP


def settings(root: Path, config: Mapping[str, Any]) -> Settings:
    """Where the history of the project at ``root`` is, and its settings (``config``: specrun.yaml)."""
    value = config.get("history", True)
    if value is False:
        return Settings(None)
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, dict):
        value = {}
    path = root / value.get("path", DEFAULT_PATH)
    return Settings(path, value.get("flaky_window", DEFAULT_FLAKY_WINDOW), value.get("keep", DEFAULT_KEEP))


class History:
    """One project's run history (see the module docstring); ``History.open`` to get one."""

    def __init__(self, path: Path, connection: sqlite3.Connection, config: Settings):
        self.path = path
        self.db = connection
        self.settings = config

    @classmethod
    def open(cls, root: Path, config: Mapping[str, Any], *, create: bool = False) -> History:
        """The history of the project at ``root`` (``config``: its specrun.yaml); ``create``
        makes the database when there is none. ``HistoryError`` when history is off, missing
        (and not ``create``), unreadable, or written by a newer specrun."""
        found = settings(root, config)
        if found.path is None:
            raise HistoryError("the run history is off (history: false in specrun.yaml)")
        path = found.path
        if not create and not path.is_file():
            raise HistoryError(f"no run history at {path} yet: every `specrun` run is recorded there")
        try:
            if create and not path.parent.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.parent.name == ".specrun":
                    (path.parent / ".gitignore").write_text("# written by specrun\n*\n", "utf-8")
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the run history {path}: {exc}{_FIX}") from None
        try:
            _prepare(db, path)
        except sqlite3.OperationalError as exc:  # locked past the timeout, a read-only folder
            db.close()
            raise HistoryError(f"cannot open the run history {path}: {exc}{_FIX}") from None
        except sqlite3.DatabaseError as exc:  # not a database, or a damaged one
            db.close()
            raise HistoryError(f"{path} is not a readable specrun history ({exc}){_MOVE}") from None
        except HistoryError:
            db.close()
            raise
        return cls(path, db, found)

    def close(self) -> None:
        """Close the database (every write is committed as it is made)."""
        self.db.close()

    def _query(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, tuple(params))
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"cannot read the run history {self.path}: {exc}{_MOVE}") from None

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return list(self._each(sql, params))

    def _each(self, sql: str, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
        """The rows of ``sql`` one at a time, from its cursor: memory holds one row, not the result."""
        cursor = self._query(sql, params)
        names = [d[0] for d in cursor.description]
        for values in cursor:
            row = dict(zip(names, values, strict=True))
            for column in _JSON_COLUMNS:
                if isinstance(row.get(column), str):
                    with contextlib.suppress(ValueError):  # written by hand: left as text
                        row[column] = json.loads(row[column])
            yield row

    # -- runs ------------------------------------------------------------------------------------

    def runs(self, limit: int = 20, agent: str | None = None) -> list[dict[str, Any]]:
        """The latest ``limit`` runs, newest first (of ``agent`` only, when given), as rows of ``runs``."""
        where, params = (
            ("WHERE EXISTS (SELECT 1 FROM json_each(agents) WHERE value = ?)", [agent]) if agent else ("", [])
        )
        return self._rows(f"SELECT * FROM runs {where} ORDER BY started_at DESC, id DESC LIMIT ?", [*params, limit])

    def run(self, run_id: str) -> dict[str, Any] | None:
        """The run with this id, or with this unique id prefix; None when there is none."""
        rows = self._rows("SELECT * FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2", [run_id, _prefix(run_id)])
        exact = [r for r in rows if r["id"] == run_id]
        return exact[0] if exact else rows[0] if len(rows) == 1 else None

    def cases(self, run_id: str) -> list[dict[str, Any]]:
        """Every case result of a run, in the order they finished (``result``: the record as the stream has it)."""
        return self._rows("SELECT * FROM cases WHERE run_id = ? ORDER BY rowid", [run_id])

    def case_places(self, run_id: str) -> Iterator[dict[str, Any]]:
        """A run's case results without their records, one at a time in the order they finished: each
        row's ``rowid`` (for ``case_result``), key columns, and ``is_record`` (its result is a JSON object)."""
        is_record = "CASE WHEN json_valid(result) THEN json_type(result) = 'object' ELSE 0 END"
        columns = f"rowid, suite, case_id, agent, run_index, {is_record} AS is_record"
        return self._each(f"SELECT {columns} FROM cases WHERE run_id = ? ORDER BY rowid", [run_id])

    def case_result(self, rowid: int) -> Any:
        """The ``result`` (the stream's record) of the case row ``rowid``; None when it is gone."""
        rows = self._rows("SELECT result FROM cases WHERE rowid = ?", [rowid])
        return rows[0]["result"] if rows else None

    # -- writing (for specrun._history.recording; each call is one transaction, sqlite3.Error when it fails)

    def add_run(self, row: Mapping[str, Any]) -> None:
        """Add a run's row (``row``: columns of ``runs``)."""
        columns, marks = ", ".join(row), ", ".join("?" * len(row))
        self._transaction((f"INSERT INTO runs({columns}) VALUES ({marks})", list(row.values())))

    def add_cases(self, rows: list[tuple[Any, ...]]) -> None:
        """Add case results (``rows``: every column of ``cases``, in order), and update ``case_state``
        from the rows just added (read by SQLite itself, in the order added)."""
        with self._transact():
            last = self.db.execute("SELECT coalesce(max(rowid), 0) FROM cases").fetchone()[0]
            self.db.executemany(f"INSERT INTO cases VALUES ({', '.join('?' * 16)})", rows)
            self.db.execute(_UPDATE_STATE, [last])

    def end_run(self, run_id: str, totals: Mapping[str, Any]) -> None:
        """Write a run's totals (columns of ``runs``) and drop the runs beyond the ``keep`` newest."""
        old = "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT -1 OFFSET ?"
        self._transaction(
            (f"UPDATE runs SET {', '.join(f'{k} = ?' for k in totals)} WHERE id = ?", [*totals.values(), run_id]),
            (f"DELETE FROM cases WHERE run_id IN ({old})", [self.settings.keep]),
            (f"DELETE FROM runs WHERE id IN ({old})", [self.settings.keep]),
        )

    def _transaction(self, *statements: tuple[str, list[Any]]) -> None:
        with self._transact():
            for sql, params in statements:
                self.db.execute(sql, params)

    @contextlib.contextmanager
    def _transact(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")  # takes the write lock now, waiting for another run's
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- labels: a person's verdict on a judged output (the viewer writes them, calibrate reads them)

    def add_label(self, row: Mapping[str, Any]) -> None:
        """Keep a label (``row``: columns of ``labels``); a second label of the same judged
        result replaces the first. The output and input are copies: a label outlives its run."""
        columns, marks = ", ".join(row), ", ".join("?" * len(row))
        self._transaction((f"INSERT OR REPLACE INTO labels({columns}) VALUES ({marks})", list(row.values())))

    def labels(self) -> Iterator[dict[str, Any]]:
        """Every label, oldest first, read from the cursor as it is iterated (calibrate judges
        them as they come; in WAL mode the open read blocks no writer)."""
        return self._each("SELECT * FROM labels ORDER BY labelled_at, rowid")

    # -- cases across runs -----------------------------------------------------------------------

    def timeline(self, case_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """``case_id``'s results across runs, newest first, with each run's start and commit."""
        return self._rows(
            "SELECT c.run_id, r.started_at, r.git_commit, c.run_index, c.agent, c.suite, c.line, c.status,"
            " c.duration_ms, c.tokens, c.cost, c.error, c.cached, c.fingerprint, c.content_hash, c.result, c.revision"
            " FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ?"
            " ORDER BY r.started_at DESC, r.id DESC, c.run_index DESC LIMIT ?",
            [case_id, limit],
        )

    def flaky(self, window: int | None = None, case_ids: Iterable[str] | None = None) -> list[Flaky]:
        """The flaky cases (see the module docstring), most flips first; only those of
        ``case_ids`` when given. ``window``: latest results per case looked at (default: the setting).
        Each one's verdicts are of one content and one revision (``case_state`` starts afresh at
        a change); results recorded without a revision (format 1) make none flaky."""
        window = min(window or self.settings.flaky_window, _KEPT_VERDICTS)
        where, params = _among(case_ids, "case_id")
        rows = self._query(
            f"SELECT suite, case_id, agent, substr(verdicts, 1, ?) AS recent, content_hash, revision FROM case_state"
            f" WHERE instr(recent, 'P') AND (instr(recent, 'F') OR instr(recent, 'E'))"
            f" AND revision IS NOT NULL {where}",
            [window, *params],
        ).fetchall()
        found = []
        for suite, case_id, agent, recent, content, revision in rows:
            verdicts = [letter == "P" for letter in reversed(recent)]  # oldest first
            flips = sum(a != b for a, b in itertools.pairwise(verdicts))
            passed = sum(verdicts)
            found.append(
                Flaky(
                    CaseKey(suite, case_id, agent),
                    passed,
                    len(verdicts) - passed,
                    flips,
                    _STATUS[recent[0]],
                    content,
                    revision,
                )
            )
        return sorted(found, key=lambda f: (-f.flips, f.key))

    def last_failed(self, suites: Iterable[str]) -> set[CaseKey]:
        """The cases of ``suites`` (suite keys) that failed or errored in their latest recorded run."""
        rows = self._query(
            "SELECT suite, case_id, agent FROM case_state WHERE last_failed"
            " AND suite IN (SELECT value FROM json_each(?))",
            [json.dumps(sorted(set(suites)))],
        )
        return {CaseKey(*row) for row in rows}

    def durations(self, case_ids: Iterable[str]) -> dict[str, float]:
        """Each case's recent duration in ms (a moving average of its latest results); cases
        never run are absent."""
        where, params = _among(case_ids, "case_id")
        rows = self._query(f"SELECT case_id, avg(duration_ms) FROM case_state WHERE 1 {where} GROUP BY case_id", params)
        return {case_id: float(ms) for case_id, ms in rows}


_FIX = " (fix the path in specrun.yaml's history setting, or run with --no-history)"
_MOVE = "; move it aside (or delete it: the history is lost) and rerun, or run with --no-history"


def _prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _among(case_ids: Iterable[str] | None, column: str) -> tuple[str, list[str]]:
    """A condition keeping the rows of ``case_ids`` (all rows when None), and its parameter."""
    if case_ids is None:
        return "", []
    return f"AND {column} IN (SELECT value FROM json_each(?))", [json.dumps(sorted(set(case_ids)))]


def _to_wal(db: sqlite3.Connection) -> None:
    """Put a new file in WAL mode, which lasts with it: readers never wait for a writer. Two runs
    starting on a new file at once both try; SQLite answers the second "locked" at once, without
    its busy timeout (the switch would deadlock), so it is asked again until the timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """Settings of the connection; the schema when the file is new; its format checked."""
    db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > FORMAT:
        raise HistoryError(
            f"{path} was written by a newer specrun (history format {version}; this one reads format"
            f" {FORMAT}): upgrade specrun, or point specrun.yaml's history setting at another file"
        )
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        _to_wal(db)
    db.execute("PRAGMA synchronous = NORMAL")  # in WAL mode: a power cut may lose the last commits, never corrupt
    if version == FORMAT:
        return
    db.execute("BEGIN IMMEDIATE")  # one run creates the schema; another one at once waits, then sees it
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == 0 and tables:
            raise HistoryError(
                f"{path} is an SQLite database but not a specrun history (tables: {', '.join(sorted(tables))}){_MOVE}"
            )
        if version == 0:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
        else:  # an older format (another run may have migrated it while this one waited: re-read above)
            for old in range(version, FORMAT):
                for statement in _MIGRATIONS[old]:
                    db.execute(statement)
        db.execute(f"PRAGMA user_version = {FORMAT}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
