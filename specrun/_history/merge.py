"""``specrun merge``: join the result streams of a run's shards into one stream and its reports.

Each shard's stream records which part of which selection it ran (``shard`` in its ``start``
line, see :mod:`specrun._run.shard`). ``merge`` refuses streams that are not parts of one partition
(other suites, filters or agents, another version of a case, another split, another ``--runs``
or gate) and shards that overlap, with a ``UsageError`` naming the files (and the edited case);
it then writes one stream, with a ``start`` line for the whole selection and a ``summary``
recomputed from every result, from which the ``-o`` reports are written as a run writes them.
A case run against several agents is one case per agent. A missing shard, a shard cut short (no
summary line), one with fewer results than it planned (``not_run``) or one that could not
write every result makes the merged run ``incomplete``; an interrupted shard makes it
interrupted: its exit code is never that of a complete run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._core.errors import UsageError
from .._core.identity import CaseKey
from .._report.stability import Aggregator
from .._report.stream import iter_stream


@dataclass
class Part:
    """One stream to merge: its start line, the shards it covers, its summary line if any."""

    path: Path
    start: dict[str, Any]
    shards: list[int]
    summary: dict[str, Any] | None = None

    @property
    def shard(self) -> dict[str, Any]:
        return self.start["shard"]

    @property
    def merged(self) -> bool:
        """A stream ``merge`` wrote (of some of the shards), merged again with the others."""
        return "indexes" in self.shard

    @property
    def planned(self) -> int:
        """The results it set out to have: its cases times ``--runs`` (a merged stream's
        shards' together)."""
        if self.shard.get("planned") is not None:
            return int(self.shard["planned"])
        return int(self.start.get("total_cases") or 0) * int(self.start.get("runs") or 1)


def read_part(path: Path) -> Part:
    """A stream's start line, checked to be a shard's; a ``UsageError`` otherwise."""
    if not path.is_file():
        raise UsageError(f"{path}: no such result stream")
    first = next((record for _, record in iter_stream(path)), None)
    if not isinstance(first, dict) or first.get("type") != "start":
        raise UsageError(f"{path}: not a specrun result stream (.jsonl): its first line is no start record")
    shard = first.get("shard")
    if not isinstance(shard, dict):
        raise UsageError(f"{path}: not a shard's stream: its run had no --shard I/N")
    try:
        count, selected = int(shard["count"]), int(shard["selected"])
        shards = [int(i) for i in shard.get("indexes") or [shard["index"]]]
        str(shard["selection"]), str(shard["partition"]), int(shard.get("planned") or 0)
        contents = shard.get("contents") or {}  # older streams have none
        if not all(
            isinstance(ids, dict) and all(isinstance(h, str) for h in ids.values()) for ids in contents.values()
        ):
            raise TypeError("contents: expected file -> case id -> hash")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        expected = "index, count, selected, selection, partition, contents"
        raise UsageError(f"{path}:1: field shard: expected {expected} ({exc})") from None
    if count < 1 or selected < 0 or not all(1 <= i <= count for i in shards):
        raise UsageError(f"{path}:1: field shard: shard {shards} of {count} is out of range")
    return Part(path, first, shards)


_RUN = "merge the shards of one run"
_CHECKS: list[tuple[str, Any, str, bool]] = [  # what must agree, how to read it, why, show the values
    (
        "ran different selections of cases",
        lambda p: p.shard["selection"],
        "other suites, --run filters or agents (or other versions of them); " + _RUN,
        False,
    ),
    ("are parts of different splits", lambda p: p.shard["count"], "their --shard counts differ", True),
    (
        "split the cases differently",
        lambda p: p.shard["partition"],
        "their shards were balanced by different duration histories; give every shard job the same"
        " .specrun/history.db, or none",
        False,
    ),
    ("ran with different --runs", lambda p: p.start.get("runs") or 1, _RUN, True),
    ("ran with different --min-pass-rate", lambda p: (p.summary or {}).get("min_pass_rate"), _RUN, True),
]


def _edited(a: Part, b: Part) -> tuple[str, str] | None:
    """A case (file, id) both shards selected whose content differs between them."""
    theirs = b.shard.get("contents") or {}
    for file, ids in (a.shard.get("contents") or {}).items():
        other = theirs.get(file) or {}
        for case_id, digest in ids.items():
            if other.get(case_id, digest) != digest:
                return file, case_id
    return None


def check_parts(parts: list[Part]) -> None:
    """Every part belongs to one partition of one selection, and no two overlap."""
    first = parts[0]
    for part in parts[1:]:
        edited = _edited(first, part) if part.shard["selection"] != first.shard["selection"] else None
        if edited:
            raise UsageError(
                f"{first.path} and {part.path} ran different versions of case {edited[1]!r} of {edited[0]}:"
                " the suites changed between the shards' runs; run every shard from the same version of the suites"
            )
        for what, value, why, show in _CHECKS:
            if value(part) != value(first):
                values = f" ({value(first)} and {value(part)})" if show else ""
                raise UsageError(f"{first.path} and {part.path} {what}{values}: {why}")
    owner: dict[int, Part] = {}
    for part in parts:
        for index in part.shards:
            if index in owner:
                count = part.shard["count"]
                raise UsageError(
                    f"{owner[index].path} and {part.path} both hold shard {index}/{count}: overlapping shards"
                )
            owner[index] = part


def merge(paths: list[Path], out: IO[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Merge the shard streams at ``paths`` into ``out`` (a JSONL stream); return its start and
    summary lines. Every result line is copied as it was written (already redacted)."""
    from .report_loading import load_side

    for path in paths:
        load_side(path)  # every field a report reads is of the right type, no case twice
    parts = [read_part(path) for path in paths]
    for part in parts:
        part.summary = next((r for _, r in iter_stream(part.path) if r.get("type") == "summary"), None)
    check_parts(parts)
    first = parts[0].start
    shard = parts[0].shard
    covered = sorted(i for p in parts for i in p.shards)
    runs = int(first.get("runs") or 1)
    agents = sorted({a.strip() for p in parts for a in str(p.start.get("agent_id") or "").split(",") if a.strip()})
    start = {
        **first,
        "agent_id": ", ".join(agents),
        "total_cases": shard["selected"],
        "started_at": min(str(p.start.get("started_at") or "") for p in parts),
        "shard": {
            **{k: v for k, v in shard.items() if k != "index"},
            "indexes": covered,
            "planned": sum(p.planned for p in parts),
        },
    }
    tested = sorted({str(a) for p in parts for a in p.start.get("agents") or []})  # a shard may have some only
    if tested:
        start["agents"] = tested
    out.write(json.dumps(start, ensure_ascii=False) + "\n")
    gate = (parts[0].summary or {}).get("min_pass_rate")
    aggregator = Aggregator(gate, runs)
    holder: dict[CaseKey, Path] = {}  # a case with each of its agents is in one shard
    written: dict[Path, int] = {}
    for part in parts:
        for _, record in iter_stream(part.path):
            if record.get("type", "result") != "result":
                continue
            key = CaseKey.of(record)
            if holder.setdefault(key, part.path) != part.path:
                at = f" with agent {key.agent!r}" if key.agent else ""
                raise UsageError(
                    f"case {key.id!r} of {key.suite}{at} is in {holder[key]} and {part.path}: overlapping shards"
                )
            written[part.path] = written.get(part.path, 0) + 1
            aggregator.add(record)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    durations = [float(p.summary["duration_ms"]) for p in parts if p.summary and p.summary.get("duration_ms")]
    interrupted = any((p.summary or {}).get("interrupted") for p in parts)
    summary = aggregator.summary(max(durations) if durations else None, interrupted)
    not_run = max(0, int(shard["selected"]) * runs - summary["total_runs"])
    summary = {"type": "summary", **summary, "not_run": not_run}
    incomplete = _incomplete(parts, covered, int(shard["count"]), written)
    if not_run and not incomplete:  # whatever the shards say of themselves, results are missing
        incomplete.append(f"{not_run} of the {int(shard['selected']) * runs} planned results are missing")
    if incomplete:
        summary["incomplete"] = "; ".join(incomplete)
    out.write(json.dumps(summary, ensure_ascii=False) + "\n")
    return start, summary


def _incomplete(parts: list[Part], covered: list[int], count: int, written: dict[Path, int]) -> list[str]:
    """Why the merged run lacks results: missing shards, shards cut short, with results missing
    or incomplete."""
    reasons = []
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in covered]
    if missing:
        reasons.append(f"shard{'s' * (len(missing) > 1)} {', '.join(missing)} not merged")
    for part in parts:
        lacking = part.planned - written.get(part.path, 0)
        # A merged stream's own summary counted the shards it lacked then: recounted here instead.
        own = None if part.merged else part.summary
        if part.summary is None:
            reasons.append(f"{part.path} has no summary line (its run was killed or had not finished)")
        elif own and own.get("incomplete"):
            reasons.append(f"{part.path}: {own['incomplete']}")
        elif lacking > 0:
            reasons.append(f"{part.path} lacks {lacking} of the {part.planned} results it planned (not run)")
        elif own and own.get("not_run"):
            reasons.append(f"{part.path}: {own['not_run']} planned runs did not run")
    return reasons
