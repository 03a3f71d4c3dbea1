"""The JSONL result stream: a ``start`` line, one ``result`` line per case as it completes, a ``summary``.

The engine writes it on every run (``-o FILE.jsonl`` only says where; else it is a temporary
file), as a plugin of the run on the lifecycle hooks. The results the runner reports together
(those of one turn of the event loop) are flushed together at the loop's next turn, as the run
history commits them: a killed run keeps every result it had reported before that turn, at one
write per burst instead of one per line. The summary line is written last: a stream without one
is a run that did not get to its end. Secret values are masked here, so every report built from
the stream is clean too.

It is read back here too: ``iter_stream`` (``numbered_stream``: with line numbers) and ``scan``
are the one reader of a stream, for the whole-file reports (which share one scan per run), the
GitHub Actions summary, ``merge``, ``diff``, ``rejudge`` and the direct answer of ``specrun -i``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .. import hookimpl
from .._core.data import json_line
from .._core.errors import UsageError
from .._core.kinds import Reporter
from .._core.redact import redact_json
from .._core.results import Result, RunInfo
from .stability import Aggregator, CaseStats


class ResultStream(Reporter):
    """The result stream, at ``path``; its hooks run after every other reporter's."""

    name = "jsonl"
    description = "Streams results as JSON lines (the default output)."
    extensions = (".jsonl",)

    def __init__(self, path: Path, options: dict[str, Any] | None = None):
        super().__init__(path, options)
        self._file: IO[str] | None = None
        self._flushing = False  # a flush is due at the loop's next turn

    def _write(self, line: str, masked: bool = False, now: bool = True) -> None:
        assert self._file is not None
        self._file.write((line if masked else redact_json(line)) + "\n")
        if now:
            self._file.flush()
        elif not self._flushing:
            self._flushing = True
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no event loop: write it now
                self.flush()

    def flush(self) -> None:
        """Write out the lines not flushed yet (the runner calls it before it exits at once)."""
        self._flushing = False
        if self._file is not None and not self._file.closed:
            self._file.flush()

    @hookimpl(trylast=True)
    def run_started(self, info: RunInfo) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._write(json_line({"type": "start", "specrun_report": "jsonl", **info.to_dict()}))

    @hookimpl(trylast=True)
    def case_finished(self, result: Result) -> None:
        # Sealed: strict JSON, its encoding failures already the case's error; masked once for all.
        self._write(result.public_line, masked=True, now=False)

    @hookimpl(trylast=True)
    def run_finished(self, summary: dict[str, Any], stream: Path) -> None:
        self._write(json_line(summary))
        assert self._file is not None
        self._file.close()


# -- reading it back (every report, merge and diff read it through here) ---------------------


def iter_stream(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(byte offset, record)`` for each line of a JSONL result stream.

    A last line cut short (a killed writer) is ignored; any other bad line is a ``UsageError``.
    """
    for _, offset, record in numbered_stream(path):
        yield offset, record


def numbered_stream(path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(line number, byte offset, record)`` for each line of a stream, read as ``iter_stream`` reads it."""
    with open(path, "rb") as f:
        offset = 0
        pending: tuple[int, Exception] | None = None
        for lineno, raw in enumerate(f, 1):
            if pending:
                raise UsageError(f"{path}:{pending[0]}: not a JSON record: {pending[1]}")
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as exc:
                pending = (lineno, exc)
                continue
            if not isinstance(record, dict):
                what = type(record).__name__
                raise UsageError(f"{path}:{lineno}: expected a JSON object, got {what}")
            yield lineno, start, record


def read_at(path: Path, offsets: Iterable[int]) -> Iterator[dict[str, Any]]:
    """The records at the given byte offsets of a stream file, in that order."""
    with open(path, "rb") as f:
        for offset in offsets:
            f.seek(offset)
            yield json.loads(f.readline())


@dataclass
class Stream:
    """A scanned result stream: its start and summary lines and the aggregated cases."""

    path: Path
    start: dict[str, Any]
    summary: dict[str, Any] | None
    aggregator: Aggregator

    def records(self, case: CaseStats) -> Iterator[dict[str, Any]]:
        """The result records of one case, in run order."""
        records = list(read_at(self.path, case.offsets or ()))
        return iter(sorted(records, key=lambda r: int(r.get("run") or 0)))


def scan(
    path: Path, min_pass_rate: float | None = None, check: Callable[[int, dict[str, Any]], None] | None = None
) -> Stream:
    """Read a stream once, keeping per-case statistics and each result line's offset.

    The gate is ``min_pass_rate`` when given, else the one in the stream's summary line.
    ``check(offset, record)`` sees each record first and may reject it (a stream from elsewhere).
    While the run's reports are written (``sharing_scans``), the reports that read the same
    stream at the same gate share one scan: each whole-file report no longer reads it again.
    """
    shared = _SHARED.get()
    key = None
    if shared is not None and check is None:
        key = (os.path.realpath(path), os.path.getsize(path), min_pass_rate)  # appended to: a new size, a new scan
        known = shared.get(key)
        if known is not None:
            return known
    start: dict[str, Any] = {}
    summary: dict[str, Any] | None = None
    agg = Aggregator(min_pass_rate)
    for offset, record in iter_stream(path):
        if check is not None:
            check(offset, record)
        kind = record.get("type", "result")
        if kind == "result":
            agg.add(record, offset)
        elif kind == "start":
            start = record
            if start.get("runs"):
                agg.runs = int(start["runs"])
        elif kind == "summary":
            summary = record
            if min_pass_rate is None and record.get("min_pass_rate") is not None:
                agg.set_gate(float(record["min_pass_rate"]))
    scanned = Stream(path, start, summary, agg)
    if shared is not None and key is not None:
        shared[key] = scanned
    return scanned


_SHARED: contextvars.ContextVar[dict[tuple[str, int, float | None], Stream] | None] = contextvars.ContextVar(
    "specrun_shared_scans", default=None
)


@contextlib.contextmanager
def sharing_scans() -> Iterator[None]:
    """Within this block (the runner's ``run_finished``), ``scan`` reads each stream once for
    every report that asks; the scans are dropped at its end."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)
