"""The ``.json`` reporter: one JSON document with ``summary``, ``environment``, ``results``, ``metadata``.

Registered through register_reporters (see this package). The document is written result by
result from the streamed JSONL, never held whole in memory. With ``--runs`` above 1 each result
is a case with its stability fields and ``run_details`` (one entry per run).
"""

from __future__ import annotations

import json
from typing import IO, Any

from ... import __version__
from ..stability import CaseStats
from ._common import Report, WholeFileReporter

_CASE_FIELDS = ("id", "name", "input", "expected", "file", "line", "tags", "min_pass_rate", "type")


def _dump(value: Any, level: int) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("\n", "\n" + "  " * level)


def run_detail(record: dict[str, Any]) -> dict[str, Any]:
    """One run of a case: the result record less what belongs to the case."""
    return {k: v for k, v in record.items() if k not in _CASE_FIELDS}


def case_result(report: Report, case: CaseStats) -> dict[str, Any]:
    """The ``results`` entry of one case."""
    records = report.records(case)
    if not report.multi and len(records) == 1:
        result = {k: v for k, v in records[0].items() if k != "type"}
        if case.status != result.get("status"):
            result["run_status"] = result["status"]
            result["status"] = case.status
        return result
    stats = case.to_dict()
    first = records[0] if records else {}
    result = {"id": stats.pop("id")}
    if "name" in stats:
        result["name"] = stats.pop("name")
    result["status"] = stats.pop("status")
    result["input"] = first.get("input")
    if "expected" in first:
        result["expected"] = first["expected"]
    result.update(stats)
    result["run_details"] = [run_detail(r) for r in records]
    return result


def report_summary(report: Report) -> dict[str, Any]:
    """The summary, with the agent's identity from the run's start line."""
    summary = {k: v for k, v in report.summary.items() if k != "type"}
    for key in ("agent_id", "agent_path", "connector"):  # the seeds' fields, null when not known
        summary.setdefault(key, report.info.get(key))
    if report.info.get("target"):
        summary.setdefault("target", report.info["target"])
    return summary


def write(report: Report, out: IO[str]) -> None:
    """Write the whole document to ``out``, one result at a time."""
    out.write("{\n")
    out.write(f'  "specrun_report": {json.dumps(__version__)},\n')
    out.write(f'  "summary": {_dump(report_summary(report), 1)},\n')
    out.write(f'  "environment": {_dump(report.environment, 1)},\n')
    out.write('  "results": [')
    for i, case in enumerate(report.cases):
        out.write(",\n    " if i else "\n    ")
        out.write(_dump(case_result(report, case), 2))
    out.write("\n  ],\n" if report.cases else "],\n")
    grid = report.matrix
    if grid:  # several agents: which passed which case, at a glance
        rows = [{"id": i, "file": f, "agents": {n: c.status for n, c in cells.items()}} for f, i, cells in grid.rows]
        out.write(f'  "matrix": {_dump({"agents": grid.agents, "cases": rows}, 1)},\n')
    out.write(f'  "metadata": {_dump(report.metadata, 1)}\n')
    out.write("}\n")


class JSONReporter(WholeFileReporter):
    """A JSON report (the seed's shape: summary, environment, results, metadata)."""

    name = "json"
    description = "JSON report: summary, environment, results (with stability), metadata"
    extensions = (".json",)

    def render(self, report: Report, out: IO[str]) -> None:
        write(report, out)
