"""The JSONL result stream: a ``start`` line, one ``result`` line per case as it completes, a ``summary``.

The engine writes it on every run (``-o FILE.jsonl`` only says where; else it is a temporary
file), as a plugin of the run on the lifecycle hooks, and whole-file reporters read it back in
``run_finished``. The results the runner reports together (those of one turn of the event loop)
are flushed together at the loop's next turn, as the run history commits them: a killed run
keeps every result it had reported before that turn, at one write per burst instead of one per
line. The summary line is written last: a stream without one is a run that did not get to its
end. Secret values are masked here, so every report built from the stream is clean too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import IO, Any

from .. import hookimpl
from .._core.data import json_line
from .._core.kinds import Reporter
from .._core.redact import redact_json
from .._core.results import Result, RunInfo


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
