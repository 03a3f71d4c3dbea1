"""The JSONL result stream: a ``start`` line, one ``result`` line per case as it completes, a ``summary``.

Each line is flushed when written, so a killed run keeps every result it had. Secret values
are masked here, so every report built from the stream is clean too.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from specrun.kinds import Reporter
from specrun.model import json_line
from specrun.redact import redact_json
from specrun.results import Result, RunInfo


class JsonlReporter(Reporter):
    name = "jsonl"
    description = "Streams results as JSON lines (the default output)."
    extensions = (".jsonl",)

    def __init__(self, path: Path, options: dict[str, Any] | None = None):
        super().__init__(path, options)
        self._file: IO[str] | None = None

    def _write(self, line: str) -> None:
        assert self._file is not None
        self._file.write(redact_json(line) + "\n")
        self._file.flush()

    def start(self, info: RunInfo) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._write(json_line({"type": "start", "specrun_report": "jsonl", **info.to_dict()}))

    def add(self, result: Result) -> None:
        self._write(result.line)  # sealed: strict JSON, its encoding failures already the case's error

    def finish(self, summary: dict[str, Any], results_path: Path) -> None:
        self._write(json_line(summary))
        assert self._file is not None
        self._file.close()
