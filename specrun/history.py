"""The run history: every run and each case's results, in one SQLite database per project.

The database is ``<project root>/.specrun/history.db`` unless ``specrun.yaml`` says otherwise
(``history: false`` turns it off; ``history: PATH`` or ``history: {path, flaky_window, keep}``).
Runs are written into it as their results stream (see :mod:`specrun.recording`); this module
owns the file, its schema and the readers: ``specrun history``, ``--lf``/``--ff``, flaky marks,
and other tools (the viewer, shards) through :class:`History`.

Two tables, ``runs`` and ``cases`` (see ``_SCHEMA``), in WAL mode with a busy timeout, so that
runs in one project at once never corrupt it and readers never wait for a writer. The format
is ``PRAGMA user_version``: a database written by a newer specrun, or a file that is not a
specrun history at all, is a :class:`HistoryError` saying what to do, never a traceback.

**Flaky.** A case is flaky when, among its results in the latest ``flaky_window`` runs (default
10) that ran it against the same agent with its current content (an edited case starts afresh),
at least one passed and at least one failed or errored. Skipped results and results of an
interrupted case do not count.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import UsageError

if TYPE_CHECKING:
    from .model import Case

DEFAULT_PATH = ".specrun/history.db"
DEFAULT_FLAKY_WINDOW = 10
DEFAULT_KEEP = 200  # runs kept; older ones are dropped at the end of a run
FORMAT = 1  # PRAGMA user_version of the schema below
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another run's (each holds the lock for microseconds)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs(
    id TEXT PRIMARY KEY, started_at TEXT, ended_at TEXT, argv TEXT, agents TEXT, suites TEXT,
    suites_hash TEXT, git_commit TEXT, total INT, passed INT, failed INT, errors INT, skipped INT,
    not_run INT, duration_ms REAL, cost REAL, interrupted INT, stream TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS cases(
    run_id TEXT, case_id TEXT, run_index INT, agent TEXT, suite TEXT, line INT, status TEXT,
    duration_ms REAL, tokens INT, cost REAL, error TEXT, cached INT, fingerprint TEXT,
    content_hash TEXT, result TEXT);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs(started_at);
CREATE INDEX IF NOT EXISTS cases_by_run ON cases(run_id);
CREATE INDEX IF NOT EXISTS cases_by_case ON cases(case_id, agent);
"""

_JSON_COLUMNS = ("argv", "agents", "suites", "summary", "result")
# A verdict that says something about the agent: skips do not, nor a case cut short by Ctrl-C.
_VERDICT = "c.status IN ('passed', 'failed', 'error') AND COALESCE(c.error, '') != 'interrupted'"
# Each (suite, case, agent)'s results, newest run first; ``age`` 1 is its latest run.
_RANKED = f"""
SELECT c.suite, c.case_id, c.agent, c.status, c.content_hash, c.run_id, r.started_at,
       dense_rank() OVER (PARTITION BY c.suite, c.case_id, c.agent ORDER BY r.started_at DESC, r.id DESC) AS age
FROM cases c JOIN runs r ON r.id = c.run_id
WHERE {_VERDICT} {{where}}
"""


class HistoryError(UsageError):
    """The history database cannot be used (exit 2); the message says how to fix it."""


class CaseKey(NamedTuple):
    """A case as history knows it across runs: its suite (path from the project root), id and agent."""

    suite: str
    case_id: str
    agent: str


@dataclass
class Flaky:
    """A case whose verdict changed between passed and failed over its recent runs (see the module docstring)."""

    key: CaseKey
    passed: int
    failed: int  # failed or errored
    flips: int  # changes between passed and not passed, oldest to newest
    last: str  # its latest status
    runs: int  # runs in the window


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


def suite_key(path: Path | str, root: Path) -> str:
    """How history names a suite: its path from the project root (``/``-separated), else as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def case_suite(case: Case, root: Path, known: dict[int, str]) -> str:
    """The suite key (see ``history.suite_key``) of ``case``; ``known`` keeps them per suite."""
    key = known.get(id(case.suite))
    if key is None:
        path = case.suite.path if case.suite is not None else Path(case.location.file)
        key = known[id(case.suite)] = suite_key(path, root)
    return key


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
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the run history {path}: {exc}{_FIX}") from None
        try:
            _prepare(db, path)
        except sqlite3.DatabaseError as exc:
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
        cursor = self._query(sql, params)
        names = [d[0] for d in cursor.description]
        rows = []
        for values in cursor:
            row = dict(zip(names, values, strict=True))
            for column in _JSON_COLUMNS:
                if isinstance(row.get(column), str):
                    row[column] = json.loads(row[column])
            rows.append(row)
        return rows

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

    # -- writing (for specrun.recording; each call is one transaction, sqlite3.Error when it fails)

    def add_run(self, row: Mapping[str, Any]) -> None:
        """Add a run's row (``row``: columns of ``runs``)."""
        columns, marks = ", ".join(row), ", ".join("?" * len(row))
        self._transaction((f"INSERT INTO runs({columns}) VALUES ({marks})", list(row.values())))

    def add_cases(self, rows: list[tuple[Any, ...]]) -> None:
        """Add case results (``rows``: every column of ``cases``, in order)."""
        with self._transact():
            self.db.executemany(f"INSERT INTO cases VALUES ({', '.join('?' * 15)})", rows)

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

    # -- cases across runs -----------------------------------------------------------------------

    def timeline(self, case_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """``case_id``'s results across runs, newest first, with each run's start and commit."""
        return self._rows(
            "SELECT c.run_id, r.started_at, r.git_commit, c.run_index, c.agent, c.suite, c.line, c.status,"
            " c.duration_ms, c.tokens, c.cost, c.error, c.cached, c.fingerprint, c.content_hash"
            " FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ?"
            " ORDER BY r.started_at DESC, r.id DESC, c.run_index DESC LIMIT ?",
            [case_id, limit],
        )

    def flaky(self, window: int | None = None, case_ids: Iterable[str] | None = None) -> list[Flaky]:
        """The flaky cases (see the module docstring), most flips first; only those of
        ``case_ids`` when given. ``window``: runs per case looked at (default: the setting)."""
        window = window or self.settings.flaky_window
        where, params = _among(case_ids)
        rows = self._query(
            f"SELECT suite, case_id, agent, status, content_hash FROM ({_RANKED.format(where=where)})"
            " WHERE age <= ? ORDER BY age DESC",
            [*params, window],
        ).fetchall()
        seen: dict[CaseKey, list[tuple[str, str]]] = {}
        for suite, case_id, agent, status, content in rows:  # oldest first
            seen.setdefault(CaseKey(suite, case_id, agent), []).append((status, content))
        found = []
        for key, results in seen.items():
            current = results[-1][1]
            verdicts = [status == "passed" for status, content in results if content == current]
            passed = sum(verdicts)
            if 0 < passed < len(verdicts):
                flips = sum(a != b for a, b in itertools.pairwise(verdicts))
                found.append(Flaky(key, passed, len(verdicts) - passed, flips, results[-1][0], len(verdicts)))
        return sorted(found, key=lambda f: (-f.flips, f.key))

    def last_failed(self, suites: Iterable[str]) -> set[CaseKey]:
        """The cases of ``suites`` (suite keys) whose latest recorded run failed or errored in it."""
        names = list(suites)
        marks = ",".join("?" * len(names))
        rows = self._query(
            f"SELECT DISTINCT suite, case_id, agent FROM ({_RANKED.format(where=f'AND c.suite IN ({marks})')})"
            " WHERE age = 1 AND status != 'passed'",
            names,
        ).fetchall()
        return {CaseKey(*row) for row in rows}

    def durations(self, case_ids: Iterable[str]) -> dict[str, float]:
        """Each case's mean duration (ms) over its latest 5 results; cases never run are absent."""
        where, params = _among(case_ids, "case_id")
        rows = self._query(
            "SELECT case_id, avg(duration_ms) FROM (SELECT case_id, duration_ms, row_number() OVER"
            " (PARTITION BY case_id ORDER BY rowid DESC) AS n FROM cases"
            f" WHERE status != 'skipped' {where}) WHERE n <= 5 GROUP BY case_id",
            params,
        ).fetchall()
        return {case_id: float(ms) for case_id, ms in rows}


_FIX = " (fix the path in specrun.yaml's history setting, or run with --no-history)"
_MOVE = "; move it aside (or delete it: the history is lost) and rerun, or run with --no-history"


def _prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _among(case_ids: Iterable[str] | None, column: str = "c.case_id") -> tuple[str, list[str]]:
    """A condition keeping the rows of ``case_ids`` (all rows when None), and its parameter."""
    if case_ids is None:
        return "", []
    return f"AND {column} IN (SELECT value FROM json_each(?))", [json.dumps(sorted(set(case_ids)))]


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
        db.execute("PRAGMA journal_mode = WAL")  # lasts with the file: readers never wait for a writer
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
            db.execute(f"PRAGMA user_version = {FORMAT}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
