"""What a run produces: each assertion's and each case's result, and what the run was."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .data import (
    DEFAULT_LOCALE,
    DEFAULT_TEAM,
    DEFAULT_TIMEOUT,
    DEFAULT_USER,
    MISSING,
    Case,
    Context,
    Response,
    Status,
    ToolCall,
    Usage,
    json_line,
)
from .errors import EvaluationError
from .fingerprint import fingerprint
from .redact import redact_json


@dataclass
class Verdict:
    """What an assertion decided. ``passed`` is the raw verdict; ``negate`` is applied by the engine,
    which then settles it: ``type`` names the assertion and ``status`` is ``passed``, ``failed``,
    ``error`` (no verdict could be reached) or ``skipped`` (an optional checkpoint never reached).
    A settled verdict is what a result's ``assertions`` hold; its ``passed`` has negate applied."""

    passed: bool
    message: str = ""
    expected: Any = None
    actual: Any = None
    score: float | None = None
    details: dict[str, Any] | None = None
    usage: Usage | None = None  # tokens and cost spent deciding (a judge's model calls): the case's too
    error: bool = False  # not decided (``message`` says why): the assertion is an ``error``, never guessed
    type: str = ""  # the assertion's type, once settled
    status: Status | None = None  # None until the engine settles the verdict

    @staticmethod
    def checked(passed: Any, score: Any, source: str) -> tuple[bool, float | None]:
        """``passed`` and ``score`` as code outside specrun returned them (a script, an evaluator),
        or ``EvaluationError``: ``passed`` must be a boolean (not 1, "no" or None), ``score`` a finite
        number (not a boolean) or None. A verdict is never guessed from a truthy value."""
        if not isinstance(passed, bool):
            raise EvaluationError(
                f"{source} returned passed={passed!r} ({type(passed).__name__}); expected True or False"
            )
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
        ):
            raise EvaluationError(f"{source} returned a non-numeric score {score!r}")
        return passed, score

    @classmethod
    def settled(
        cls,
        type: str,
        status: Status,
        message: str = "",
        expected: Any = None,
        actual: Any = None,
        score: float | None = None,
        details: dict[str, Any] | None = None,
        usage: Usage | None = None,
    ) -> Verdict:
        """A settled verdict of assertion ``type``: the fields of an ``assertions`` item of a result record."""
        error = status == "error"
        return cls(status == "passed", message, expected, actual, score, details, usage, error, type, status)

    def to_dict(self) -> dict[str, Any]:
        """The settled verdict as a result record has it (``type``, ``status``, then what is set)."""
        status = self.status or ("error" if self.error else "passed" if self.passed else "failed")
        data: dict[str, Any] = {"type": self.type, "status": status}
        if self.message:
            data["message"] = self.message
        if self.expected is not None:
            data["expected"] = self.expected
        if self.actual is not None:
            data["actual"] = self.actual
        if self.score is not None:
            data["score"] = self.score
        if self.details:
            data["details"] = self.details
        return data


@dataclass
class Result:
    """The outcome of one run of one case."""

    case: Case = field(repr=False)
    status: Status
    duration_ms: float = 0.0
    run: int = 1
    response: Response | None = None
    error: str | None = None
    traceback: str | None = None  # where the agent's (or a hook's) exception came from (specrun._run.tracebacks)
    assertions: list[Verdict] = field(default_factory=list)  # settled
    turns: list[dict[str, Any]] | None = None
    checkpoints: list[dict[str, Any]] | None = None
    usage: Usage | None = None
    context: Context | None = field(default=None, repr=False)
    agent: str | None = None  # the id of the agent that ran it (runs may test several)
    cached: bool = False  # every cacheable model call of the case (judges, simulators) was a cache hit
    flaky: bool = False  # the case is flaky in the run history (see specrun._history.store)
    ended: str | None = None  # dynamic: "goal" when the simulator declared its goal achieved
    _record: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    _line: str = field(default="", init=False, repr=False, compare=False)
    _public: str | None = field(default=None, init=False, repr=False, compare=False)
    _fingerprint: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def received(cls, case: Case, record: dict[str, Any], line: str) -> Result:
        """A result sealed elsewhere (an executor's worker), from its record and line: what the
        runner reports is that record and line as they were made."""
        assertions = [Verdict.settled(**a) for a in record.get("assertions") or []]
        output, calls = record.get("output"), record.get("tool_calls")
        result = cls(case, record["status"], record.get("duration_ms") or 0.0, record.get("run") or 1)
        result.error, result.traceback, result.assertions = record.get("error"), record.get("traceback"), assertions
        state = record.get("state")
        known = output is not None or calls is not None or state is not None
        result.response = Response(content=output, state=state) if known else None
        if calls is not None and result.response is not None:  # reported, [] included: kept apart from not known
            result.response.tool_calls = [ToolCall(**c) for c in calls if isinstance(c, dict)]
        result.turns, result.checkpoints = record.get("turns"), record.get("checkpoints")
        result.cached, result.flaky = bool(record.get("cached")), bool(record.get("flaky"))
        result._record, result._line = record, line
        return result

    def seal(self) -> None:
        """Make the result final: build its record and strict JSON line, once.

        A part that strict JSON cannot hold (NaN, a cycle, a lone surrogate, a tuple key, a
        5,000-digit integer, a 100,000-deep dict) is recorded as null, and the result becomes an
        ``error`` that names it: the bad output fails its own case and never costs the stream
        (or any other result) a line. The runner seals each result as soon as it is made.
        """
        if self._record is not None:
            return
        record = self.to_dict()
        try:
            self._line = json_line(record)
        except Exception:  # RecursionError included
            problems: list[str] = []
            record = _encodable(record, "", problems, depth=3)
            shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
            why = f"the result cannot be written as JSON; recorded as null: {shown}"
            self.status = "error"
            self.error = f"{record['error']}; {why}" if record.get("error") else why
            record.update(status=self.status, error=self.error)
            self._line = json_line(record)
        self._record = record

    def record(self) -> dict[str, Any]:
        """The ``result`` record (see ``seal``); the stream, the aggregator and every observer
        read this same record."""
        if self._record is None:  # asked for several times a case: sealed once
            self.seal()
            assert self._record is not None
        return self._record

    @property
    def line(self) -> str:
        """The record as one line of strict JSON (see ``seal``)."""
        if self._record is None:
            self.seal()
        return self._line

    @property
    def public_line(self) -> str:
        """``line`` with every secret masked (``redact_json``), as the stream and the run history
        write it; masked once for both."""
        if self._public is None:
            self._public = redact_json(self.line)
        return self._public

    @property
    def fingerprint(self) -> bytes:
        """The output's fingerprint (:func:`specrun._core.fingerprint.fingerprint` of the sealed
        record), computed once for the history, the statistics and whoever else compares outputs."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.record())
        return self._fingerprint

    def to_dict(self) -> dict[str, Any]:
        """The ``result`` record of the JSONL stream (the seed's V1 shape, extended)."""
        case = self.case
        data: dict[str, Any] = {"type": "result", "id": case.id}
        if case.name:
            data["name"] = case.name
        data.update(status=self.status, run=self.run, duration_ms=round(self.duration_ms, 1))
        if self.agent is not None:
            data["agent"] = self.agent
        data["input"] = [m.to_dict() for m in case.input] if case.input else None
        if case.expected is not MISSING:
            data["expected"] = case.expected
        data["output"] = self.response.content if self.response else None
        if self.response and self.response.tools_reported:  # [] says none was called; no key: not known
            data["tool_calls"] = [t.to_dict() for t in self.response.tool_calls]
        if self.response and self.response.state is not None:
            data["state"] = self.response.state
        data["error"] = self.error
        if self.traceback:
            data["traceback"] = self.traceback
        if self.turns is None and self.response is not None:  # what `specrun rejudge` hands the assertions again
            if self.response.latency_ms is not None:
                data["latency_ms"] = round(self.response.latency_ms, 1)
            if self.response.usage is not None:
                data["agent_usage"] = self.response.usage.to_dict()
        if self.response and self.response.warnings:
            data["warnings"] = self.response.warnings
        data["assertions"] = [a.to_dict() for a in self.assertions]
        failing = [a for a in self.assertions if a.status in ("failed", "error")]
        if failing:  # V2's field: the messages alone, for a quick look
            data["assertion_errors"] = [f"{a.type}: {a.message or a.status}" for a in failing]
        if self.turns is not None:
            data["turns"] = self.turns
            data["checkpoints"] = self.checkpoints or []
            data["total_turns"] = len(self.turns)
            if self.ended is not None:
                data["ended"] = self.ended
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.context is not None and self.context.trace is not None and self.context.trace.spans is not None:
            data["trace"] = self.context.trace.to_dict()  # the agent's span tree (traces: otel)
        if self.cached:
            data["cached"] = True
        if self.flaky:
            data["flaky"] = True
        if case.tags:
            data["tags"] = case.tags
        if case.min_pass_rate is not None:
            data["min_pass_rate"] = case.min_pass_rate
        if case.timeout is not None:  # its own or its suite's; else the run's (``timeout_s`` of the start line)
            data["timeout_s"] = case.timeout
        data["file"] = case.location.file
        data["line"] = case.location.line
        return data


def _encodable(value: Any, path: str, problems: list[str], depth: int) -> Any:
    """``value`` with each part that strict JSON cannot hold replaced by None and listed in
    ``problems``; dicts and lists are searched ``depth`` levels deep for those parts."""
    try:
        json_line(value)
        return value
    except Exception as exc:
        failure = exc
    if depth > 0 and isinstance(value, dict) and _encodes(list(value)):
        return {k: _encodable(v, f"{path}.{k}" if path else k, problems, depth - 1) for k, v in value.items()}
    if depth > 0 and isinstance(value, list):
        return [_encodable(v, f"{path}[{i}]", problems, depth - 1) for i, v in enumerate(value)]
    message = f"{path or 'value'} ({type(failure).__name__}: {failure}"[:300] + ")"
    problems.append(message.encode("utf-8", "backslashreplace").decode("utf-8"))
    return None


def _encodes(keys: list[Any]) -> bool:
    try:
        json_line(keys)
    except Exception:
        return False
    return all(isinstance(k, str) for k in keys)


def utc_timestamp() -> str:
    """Now, in the one timestamp format of streams and reports: UTC to the second, as the seeds
    write it (``2025-12-25T10:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunInfo:
    """What a run is: shown in the console header and written as the report's metadata."""

    agent_id: str | None = None
    agents: list[str] = field(default_factory=list)  # every agent the run tests (a matrix when several)
    target: str | None = None
    connector: str | None = None
    inputs: list[str] = field(default_factory=list)
    total_cases: int = 0
    runs: int = 1
    parallel: int = 1
    timeout: float = DEFAULT_TIMEOUT
    user: str = DEFAULT_USER
    team: str = DEFAULT_TEAM
    locale: str = DEFAULT_LOCALE
    simulator: str | None = None
    started_at: str = ""  # utc_timestamp()
    agent_path: str | None = None  # the folder of the agent under test, when there is one agent file
    mode: str = "standard"  # "dynamic" when every case is (the console's header says so)
    project_root: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    shard: dict[str, Any] | None = None  # --shard: which part of which selection (see specrun._run.shard)
    rejudge: str | None = None  # `specrun rejudge`: the recorded run judged again (``stream PATH``, ``run ID``)
    working_dir: str = field(default_factory=os.getcwd)  # what each result's ``file`` is relative to

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "agent_id": self.agent_id,
            **({"agents": self.agents} if len(self.agents) > 1 else {}),
            "agent_path": self.agent_path,
            "target": self.target,
            "connector": self.connector,
            "inputs": self.inputs,
            "total_cases": self.total_cases,
            "runs": self.runs,
            "parallel": self.parallel,
            "timeout_s": self.timeout,
            "environment": {"user_id": self.user, "team_id": self.team, "locale": self.locale},
            "started_at": self.started_at,
            "timestamp": self.started_at,  # V1's name for it
        }
        data["working_dir"] = self.working_dir
        if self.shard is not None:
            data["shard"] = self.shard
        if self.rejudge is not None:
            data["rejudge"] = self.rejudge
        return data
