"""Recording a run into the history (:mod:`specrun._history.store`): a plugin of the run, like the stream.

``run_started`` writes the run's row (its command line, agents, the git commit); each
``case_finished`` adds the case's row, committed together with the others that come within
0.1 s (``COMMIT_AFTER_S``; one transaction per burst of results, not per result);
``run_finished`` writes the totals and ``suites_hash``, a hash of the cases that ran (each
case's suite and content hash, whatever their order), summed up from the results as they come:
the cases are not read again for it. A killed run keeps every result committed before it died;
its row has no end.

Writes are made on the event loop, not in a thread: a thread of its own was measured to cost
more CPU (about 45 ms per 1,000 cases, in handing the interpreter lock back and forth for each
row) than the commits it took off the loop (in WAL mode a commit does not wait for the disk;
only a run's first write, which creates the WAL file, and closing, which checkpoints it, do).
A write that fails is kept and raised at the next hook: the run ends with exit 3 naming it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import hookimpl
from .._core.data import Case, to_json
from .._core.identity import CaseKey, case_suite, suite_key
from .._core.redact import redact, redact_json
from .._core.results import Result, RunInfo
from .._run.runner import Job
from .revision import git_commit
from .store import History, HistoryError

if TYPE_CHECKING:
    from .._run.plan import Jobs, Plan


def new_run_id() -> str:
    """A run id that sorts by time: ``20261130-231035-3fa2c1``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def content_hash(case: Case) -> str:
    """A hash of what the case asks and checks (its resolved definition, not its name or place):
    results of an edited case are not compared with those from before the edit."""
    definition = [
        [m.to_dict() for m in case.input],
        case.expected,
        [a.to_dict() for a in case.assertions],
        [(c.id, c.assertion.to_dict(), c.after, c.required) for c in case.checkpoints] if case.checkpoints else [],
        case.options,
        case.metadata,
        case.simulator,
        case.target,
        [case.before, case.after, case.user, case.team, case.locale, case.skip, case.timeout, case.max_turns],
        case.min_pass_rate,
    ]
    try:
        return _digest(to_json(definition))
    except (ValueError, RecursionError):  # NaN or a recursive YAML alias: strict JSON refuses them
        return _digest(repr(definition))


def mark_flaky(history: History, jobs: Jobs, root: Path, revisions: dict[str, str]) -> None:
    """Mark the jobs of the cases that are flaky in ``history`` (their results say so), as the
    jobs are made: every flaky case of the history is asked for (there are few), not the plan's
    ids, which would be read whole first. A case is marked only when this run measures what
    made it flaky: the same content against its agent at the same revision (``revisions``, by
    agent id); an edited case or a changed agent starts afresh here too."""
    flaky = {f.key: (f.content_hash, f.revision) for f in history.flaky()}
    if not flaky:
        return
    known: dict[int, str] = {}

    def mark(job: Job) -> None:
        seen = flaky.get(CaseKey(case_suite(job.case, root, known), job.case.id, job.agent.id))
        # the content hash only of the few flaky cases: no cost per case
        job.flaky = seen is not None and seen == (content_hash(job.case), revisions.get(job.agent.id))

    jobs.mark = mark
    for job in jobs.held or ():  # made already (an executor that ships them)
        mark(job)


# Rows are committed together: at most COMMIT_AFTER_S after the first of them, or once there are
# COMMIT_ROWS. Each commit rewrites the pages it touched (the indexes', case_state's) in the WAL
# file: committing every turn of the event loop (about 50 rows at --parallel 50 against an agent
# that answers at once) cost about a third of the recording's CPU.
COMMIT_AFTER_S = 0.1
COMMIT_ROWS = 2000

_HASHES_KEPT = 256  # cases whose content hash is kept: their other runs finish close by


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class HistoryRecorder:
    """Records one run into ``history`` (see the module docstring) of ``plan``."""

    def __init__(
        self,
        history: History,
        plan: Plan,
        root: Path,
        argv: list[str],
        stream: Path | None,
        revisions: dict[str, str],
    ):
        self.history = history
        self.run_id = new_run_id()
        self.root = root
        self.argv = argv
        self.stream = stream
        self.plan = plan
        self.revisions = revisions  # agent id -> its revision (specrun._history.revision), worked out once
        self._suites: dict[int, str] = {}  # id(suite) -> its key
        self._pending: list[tuple[Any, ...]] = []
        self._due: asyncio.TimerHandle | None = None  # the commit of the pending rows
        self._failure: str | None = None
        self._cases, self._cases_sum = 0, 0  # suites_hash so far: how many cases, their digests' sum
        self._salts: dict[str, int] = {}  # suite key -> its salt
        # content hashes of the latest cases (their runs, agents); oldest first, dropped in O(1)
        self._hashes: OrderedDict[int, tuple[Case, str]] = OrderedDict()

    @hookimpl
    def run_started(self, info: RunInfo) -> None:
        row = {
            "id": self.run_id,
            "started_at": datetime.now(UTC).isoformat(timespec="microseconds"),
            "argv": json.dumps([redact(a) for a in self.argv], ensure_ascii=False),
            "agents": json.dumps(self.plan.agent_ids, ensure_ascii=False),
            "suites": json.dumps(self._suite_keys(), ensure_ascii=False),
            "git_commit": git_commit(self.root),
            "stream": str(self.stream.resolve()) if self.stream else None,
            "rejudge": redact(info.rejudge) if info.rejudge is not None else None,  # as the start line has it
        }
        self._write(self.history.add_run, row)

    def _suite_keys(self) -> list[str]:
        """The suites of the selected cases, in run order (from the plan's index: no case is read)."""
        suites = (self.plan.suites[n] for n in self.plan.pairs.suite_numbers())
        return list(dict.fromkeys(suite_key(s.path, self.root) for s in suites))

    def _salt(self, suite: str) -> int:
        """What a case's content hash is mixed with in ``suites_hash``: the same case in another
        suite is another case."""
        salt = self._salts.get(suite)
        if salt is None:
            salt = self._salts[suite] = int(_digest(suite), 16)
        return salt

    def _content_hash(self, case: Case) -> str:
        """``content_hash(case)``, once for a case's runs (their results come close
        together); the latest few cases are kept (with the case, so that its id stays its own)."""
        known = self._hashes.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        content = content_hash(case)
        self._hashes[id(case)] = case, content
        if len(self._hashes) > _HASHES_KEPT:
            self._hashes.popitem(last=False)
        return content

    @hookimpl
    def case_finished(self, result: Result) -> None:
        if self._failure:
            raise HistoryError(self._failure)
        record = result.record()
        suite, content = case_suite(result.case, self.root, self._suites), self._content_hash(result.case)
        if result.run == 1:  # each case once per agent, in any order
            self._cases += 1
            self._cases_sum = (self._cases_sum + (int(content, 16) ^ self._salt(suite))) % 2**64
        agent = result.agent or ""  # the runner sets it on every result
        usage = record.get("usage") or {}
        self._pending.append(
            (
                self.run_id,
                result.case.id,
                result.run,
                agent,
                suite,
                result.case.location.line,
                result.status,
                record.get("duration_ms"),
                usage.get("total_tokens"),
                usage.get("cost"),
                redact(record["error"]) if record.get("error") else None,
                int(result.cached),
                result.fingerprint.hex(),  # the statistics' own: one definition of "the same output"
                content,
                result.public_line,
                self.revisions.get(agent),
            )
        )
        if len(self._pending) == 1:
            try:
                self._due = asyncio.get_running_loop().call_later(COMMIT_AFTER_S, self._flush)
            except RuntimeError:  # no event loop: write it now
                self._flush()
        elif len(self._pending) >= COMMIT_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
        rows, self._pending = self._pending, []
        if rows:
            self._write(self.history.add_cases, rows)

    def _write(self, method: Callable[..., None], *args: Any) -> None:
        """One write; its failure is kept (raised at the next hook), and no write is made after it."""
        if self._failure:
            return
        try:
            method(*args)
        except sqlite3.Error as exc:
            self._failure = f"cannot write the run history {self.history.path}: {type(exc).__name__}: {exc}"

    @hookimpl
    def run_finished(self, summary: dict[str, Any]) -> None:
        self._flush()
        usage = summary.get("usage") or {}
        totals = {
            "ended_at": datetime.now(UTC).isoformat(timespec="microseconds"),
            **{k: summary.get(k) for k in ("total", "passed", "failed", "errors", "skipped", "not_run", "duration_ms")},
            "cost": usage.get("cost"),
            "interrupted": int(bool(summary.get("interrupted"))),
            "suites_hash": _digest(f"{self._cases} {self._cases_sum:016x}"),
            "summary": redact_json(to_json(summary)),
        }
        self._write(self.history.end_run, self.run_id, totals)
        self.history.close()
        if self._failure:
            raise HistoryError(self._failure)
