"""``specrun rejudge``: a run whose agent is a replay of a recorded run's answers.

The recorded run is a result stream (a file) or a run of the history (its id, or a unique
prefix of it). Every selected case runs as in a normal run, but its agent is never called and
its hooks never run (they set up the agent): the recorded answer (each recorded turn's, in
dynamic mode) is handed to the case's current assertions and checkpoints. A case is matched to
its record by (suite path from the project root, case id, agent, run index).

- no record for it: not run (the summary's ``not_run`` counts it; the command lists it);
- its input changed since the recorded run: ``skipped`` ("not rejudged: input changed"); the
  recorded output answers another question, and a verdict is never faked;
- the recorded run has no answer (the agent crashed, timed out, was skipped): not rejudged either,
  with the recorded status (``error`` or ``skipped``) and why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .._core.data import Context, Message, Response, Status, ToolCall, Usage, json_line
from .._core.errors import SpecrunError, UsageError
from .._core.identity import ResultKey, case_suite, suite_key
from .._core.kinds import Check, Job, Session, Simulator, SimulatorState, SimulatorTurn
from .._core.redact import redact_json
from .._core.results import Result
from .limits import Meter, case_limits, judged_answer

if TYPE_CHECKING:
    from .._history.store import History


class Recorded:
    """Where each result record of a recorded run is (a line's byte offset in its stream, a row of
    the history), by ``ResultKey``: memory holds one small entry per result, and a record is read
    again when its case is rejudged. ``source`` names the run in messages and in the rejudge's
    start line (``stream PATH`` or ``run ID``)."""

    def __init__(self, source: str):
        self.source = source
        self.places: dict[ResultKey, int] = {}
        self.runs = 1  # the highest run index recorded: a run no record has would be nothing but not-run cases

    def add(self, key: ResultKey, place: int, where: str) -> None:
        if key in self.places:
            raise UsageError(f"{where}: case {key.id!r} (agent {key.agent!r}) run {key.run} is recorded twice")
        self.places[key] = place
        self.runs = max(self.runs, key.run)

    def record(self, key: ResultKey) -> dict[str, Any]:
        """The record of ``key``, read again; a ``SpecrunError`` when it is no longer there."""
        record = self._read(self.places[key])
        if not isinstance(record, dict) or record.get("id") != key.id:
            raise SpecrunError(f"{self.source} changed since the rejudge began: the record of {key.id!r} is gone")
        return record

    def _read(self, place: int) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Close what reading the records again opened."""


class _StreamRecording(Recorded):
    def __init__(self, path: Path):
        super().__init__(f"stream {path}")
        self.path = path
        self._file: IO[bytes] | None = None

    def _read(self, place: int) -> Any:
        if self._file is None:
            self._file = open(self.path, "rb")  # kept for the run; closed by close()
        self._file.seek(place)
        try:
            return json.loads(self._file.readline())
        except ValueError:
            return None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class _HistoryRecording(Recorded):
    def __init__(self, history: History, run_id: str):
        super().__init__(f"run {run_id}")
        self.history = history  # open for the run: its records are read from it case by case

    def _read(self, place: int) -> Any:
        return self.history.case_result(place)

    def close(self) -> None:
        self.history.close()


def read_recorded(spec: str, root: Path, config: dict[str, Any]) -> Recorded:
    """The run ``spec`` names: a result stream file, else a run id of the history."""
    path = Path(spec)
    if path.is_file():
        return _bounded(_read_stream(path, root))
    if path.exists() or any(sep in spec for sep in ("/", "\\")) or spec.endswith(".jsonl"):
        raise UsageError(f"{spec}: no such result stream file")
    from .._history.store import History, HistoryError

    try:
        history = History.open(root, config)
    except HistoryError as exc:
        raise UsageError(f"{spec}: not a stream file, and no run history to look the run up in ({exc})") from None
    try:
        return _bounded(_read_history(history, spec))
    except BaseException:
        history.close()
        raise


def _read_history(history: History, spec: str) -> Recorded:
    run = history.run(spec)
    if run is None and len(several := [r["id"] for r in history.runs(1000) if r["id"].startswith(spec)]) > 1:
        raise UsageError(
            f"{spec}: the id of more than one run starts so ({', '.join(several[:3])}, ...): give more of it"
        )
    if run is None:
        raise UsageError(f"{spec}: no such stream file, nor a run of that id in {history.path} (see specrun history)")
    recorded = _HistoryRecording(history, run["id"])
    for number, row in enumerate(history.case_places(run["id"]), 1):
        if not row["is_record"]:  # the stream's line, as the history keeps it
            raise UsageError(f"{history.path}: run {run['id']}, result {number}: not a result record")
        key = ResultKey(str(row["suite"]), str(row["case_id"]), str(row["agent"] or ""), int(row["run_index"] or 1))
        recorded.add(key, row["rowid"], f"{history.path}: run {run['id']}, result {number}")
    return recorded


def _read_stream(path: Path, root: Path) -> Recorded:
    """Where a stream's result records are; its ``file`` paths are read from the ``working_dir``
    its start line names (streams without one: from here)."""
    from .._report.stream import numbered_stream

    recorded, start, start_line = _StreamRecording(path), None, 0
    base = Path.cwd()
    suites: dict[str, str] = {}  # by the records' `file`: one key string per suite, not per result
    agents: dict[str, str] = {}
    read = at = 0  # the last line read and where it starts
    for read, at, record in numbered_stream(path):
        where = f"{path}:{read}"
        kind = record.get("type", "result")
        if kind == "start":
            start, start_line = record, read
            if not isinstance(record.get("working_dir") or "", str):
                got = record["working_dir"]
                raise UsageError(f"{where}: field `working_dir`: expected a folder's path, got {got!r}")
            base = Path(record.get("working_dir") or base)
        elif kind == "result":
            file, case_id = record.get("file"), record.get("id")
            if not isinstance(case_id, str) or not isinstance(file, str):
                raise UsageError(f"{where}: a result record needs a string `id` and `file`")
            run = _int(record.get("run"), 0)
            if run < 1:
                raise UsageError(f"{where}: field `run`: expected a positive integer, got {record.get('run')!r}")
            runs = _int(start.get("runs"), run) if start is not None else run
            if run > runs:  # the rejudge would plan that many runs of every case
                past = f"{run} is past the {runs} run(s) of its start line (line {start_line})"
                raise UsageError(f"{where}: field `run`: {past}")
            suite = suites.get(file)
            if suite is None:
                suite = suites[file] = suite_key(base / file, root)
            agent = str(record.get("agent") or "")
            recorded.add(ResultKey(suite, case_id, agents.setdefault(agent, agent), run), at, where)
    cut = _cut_short(path, read, at)
    if cut and not read:  # no line is a record: not a stream a run was writing, whatever its last line is
        raise UsageError(f"{path}:{cut}: not a specrun result stream (not a JSON record)")
    if cut:  # the reader passes over a last line cut short; a rejudge names it (its case is evidence)
        raise UsageError(
            f"{path}:{cut}: not a JSON record: the line is cut short (the recorded run was killed while"
            " writing it); remove it to rejudge the rest"
        )
    if start is None and not recorded.places:
        raise UsageError(f"{path}:1: not a specrun result stream (no start or result line)")
    return recorded


def _bounded(recorded: Recorded) -> Recorded:
    """``recorded``, if its highest run could have been recorded: a rejudge plans that many runs of
    every case, and a run's results are at least as many as its repetitions (each is a case's)."""
    if recorded.runs > len(recorded.places):
        raise UsageError(
            f"{recorded.source}: a result of run {recorded.runs:,}, but {len(recorded.places):,} result(s) in"
            " all: not the record of a run (each repetition of a run has results of its own)"
        )
    return recorded


def _cut_short(path: Path, line: int, offset: int) -> int:
    """The number of a line with text past ``line`` (the last record read, at ``offset``; 0: none
    read): the reader passes over a last line cut short. 0 when there is none. Read 64 KiB at a
    time, up to the first byte of text: that line may be as long as the file."""
    blank = 0  # the line ends before the text
    with open(path, "rb") as f:
        f.seek(offset)
        if line:
            f.readline()
        while chunk := f.read(2**16):
            text = chunk.lstrip()
            blank += chunk[: len(chunk) - len(text)].count(b"\n")
            if text:
                return line + blank + 1
    return 0


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _same_input(case_input: list[Message], recorded: Any) -> bool:
    """Whether the case asks what the recorded run was asked (masked as the stream masks it)."""
    current = json.loads(redact_json(json_line([m.to_dict() for m in case_input]))) if case_input else None
    return bool(current == recorded)


class BadRecord(ValueError):
    """A recorded answer a rejudge cannot read back as the run recorded it (a stream edited, or
    written by something else): its case is an ``error``, never judged on a part of it."""


def _tool_call(data: Any, where: str) -> ToolCall:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise BadRecord(f"`{where}` is not a tool call (a mapping with a string `name`)")
    if not isinstance(data.get("arguments", {}), dict):
        raise BadRecord(f"`{where}.arguments` is not a mapping")
    for key, kind in (("id", str), ("step", int), ("turn", int)):
        if data.get(key) is not None and (not isinstance(data[key], kind) or isinstance(data[key], bool)):
            raise BadRecord(f"`{where}.{key}` is not a{'n integer' if kind is int else ' string'}")
    if data.get("status") not in (None, "ok", "error"):
        raise BadRecord(f"`{where}.status` is not ok or error")
    return ToolCall(**{key: data[key] for key in TOOL_CALL_FIELDS if key in data})  # later fields: not ours


TOOL_CALL_FIELDS = ("name", "arguments", "result", "id", "status", "step", "turn")


def _amount(value: Any) -> bool:
    """Whether ``value`` is a number a run records: finite, not negative (JSON reads NaN too)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _usage(data: dict[str, Any], where: str) -> Usage:
    counts = {key: data.get(key, 0) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadRecord(f"`{where}.{key}` is not a count")
    cost = data.get("cost")
    if cost is not None and not _amount(cost):
        raise BadRecord(f"`{where}.cost` is not a cost")
    return Usage(**counts, cost=None if cost is None else float(cost))


def _response(data: dict[str, Any], usage_key: str = "agent_usage") -> Response:
    """The answer a record (or a recorded turn) holds, as the assertions saw it; ``BadRecord``
    for a field that cannot be what the run recorded."""
    response = Response(content=data.get("output"), state=data.get("state"))
    calls = data.get("tool_calls")
    if isinstance(calls, list):  # [] too: reported, none called; no key: not known
        response.tool_calls = [_tool_call(c, f"tool_calls[{i}]") for i, c in enumerate(calls)]
    elif calls is not None:
        raise BadRecord("`tool_calls` is not a list")
    latency = data.get("latency_ms")
    if latency is not None and not _amount(latency):
        raise BadRecord("`latency_ms` is not a duration")
    if latency is not None:
        response.latency_ms = float(latency)
    if isinstance(data.get(usage_key), dict):
        response.usage = _usage(data[usage_key], usage_key)
    if isinstance(data.get("warnings"), list):
        response.warnings = [str(w) for w in data["warnings"]]
    return response


MISSING_LISTED = 20
"""How many of the cases not run (no record) are listed after the run."""


class Replay:
    """What a rejudge run needs from the recorded one (see the module docstring)."""

    def __init__(self, recorded: Recorded, root: Path):
        self.recorded, self.root = recorded, root
        self.missing: list[str] = []  # the first runs with no record, as the command lists them
        self.not_run = 0  # how many there are
        self._suites: dict[int, str] = {}

    def key(self, job: Job) -> ResultKey:
        return ResultKey(case_suite(job.case, self.root, self._suites), job.case.id, job.agent.id, job.run)

    def keep(self, job: Job) -> bool:
        """Whether ``job`` has a record to rejudge; the ones that have none are not run, and listed."""
        if self.key(job) in self.recorded.places:
            return True
        self.not_run += 1
        if len(self.missing) < MISSING_LISTED:  # a count past them: a recording of other cases costs no memory
            self.missing.append(f"{job.case.location} {job.case.id} (agent {job.agent.id}, run {job.run})")
        return False

    def check_covers(self, suites: set[str], agents: list[str]) -> None:
        """A ``UsageError`` when no record is of one of these suites (keys from the project root)
        and agents: the rejudge would run nothing."""
        recorded = self.recorded.places
        if any(key[0] in suites and key[2] in agents for key in recorded):
            return
        source = self.recorded.source
        theirs = sorted({key[2] for key in recorded if key[0] in suites})
        if theirs:
            raise UsageError(
                f"{source} has these suites' cases for agent {', '.join(theirs)}, not {', '.join(agents)}:"
                f" name it with -n {theirs[0]}"
            )
        raise UsageError(f"none of these suites' cases is in {source}: nothing to rejudge")

    async def execute(self, runner: Any, job: Job, ctx: Context) -> Result:
        """The case's result from its recorded answer: judged, or not rejudged and why
        (``runner``: the run's ``Runner``, for its services and options; not imported, no circle)."""
        case, source = job.case, self.recorded.source
        try:
            record = self.recorded.record(self.key(job))
        except SpecrunError as exc:
            return Result(case, "error", run=job.run, error=f"not rejudged: {exc}")
        if not _same_input(case.input, record.get("input")):
            why = f"not rejudged: input changed since {source}: its recorded output answers another question"
            return Result(case, "skipped", run=job.run, error=why)
        answered = record.get("output") is not None or "tool_calls" in record or record.get("turns")
        if not answered or record.get("status") == "skipped":
            status: Status = "skipped" if record.get("status") == "skipped" else "error"
            why = f"not rejudged: {source} has no answer to judge ({record.get('status')}: {record.get('error')})"
            return Result(case, status, run=job.run, error=why)
        try:  # every recorded answer read back before any is judged
            turns = (record.get("turns") or []) if case.dynamic else []
            if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
                raise BadRecord("`turns` is not a list of turns")
            answers = [_response(t) for t in turns] if case.dynamic else [_response(record)]
        except BadRecord as exc:
            return Result(case, "error", run=job.run, error=f"not rejudged: {source}: the record of {case.id!r}: {exc}")
        services, timeout = runner.services(job.run), case.timeout or runner.options.timeout
        meter = Meter(case_limits(case.limits, runner.project.config))
        if case.dynamic:
            from .conversation import run_conversation

            simulator = _ReplayedUser(turns, record.get("ended"), source)
            return await run_conversation(
                job, _ReplayedAgent(answers), ctx, services, runner.plugins.registry, timeout, None, meter, simulator
            )
        registry, kind = runner.plugins.registry, str(job.agent.target.get("type"))
        check = Check(answers[0], case, ctx, services, case.input, kind)
        success = registry.get("target", kind).success_states  # a class's: no target is built
        return await judged_answer(check, success, registry, timeout, meter, job.run)


class _ReplayedAgent(Session):
    """The agent's side of a recorded conversation: the Nth recorded answer to the Nth message
    sent (counted here: an opening history's user messages are no turns of the conversation)."""

    def __init__(self, answers: list[Response]):
        self.answers, self.sent = answers, 0

    async def send(self, messages: list[Message]) -> Response:
        self.sent += 1
        if self.sent > len(self.answers):  # the user side ends first: never reached
            raise SpecrunError(f"the recorded conversation has no answer for turn {self.sent}")
        return self.answers[self.sent - 1]


class _ReplayedUser(Simulator):
    """The simulated user's side of a recorded conversation. Past its last turn, the verdict is
    the recording's when it ended on the simulator's word (``ended: goal``); else nothing can
    say what the agent would have answered next, and the case is an error."""

    def __init__(self, turns: list[dict[str, Any]], ended: Any, source: str):
        super().__init__({"type": "replay"}, Path.cwd())
        self.turns, self.ended, self.source = turns, ended, source

    async def next_turn(self, state: SimulatorState) -> SimulatorTurn:
        if state.turn <= len(self.turns):
            return SimulatorTurn(str(self.turns[state.turn - 1].get("input") or ""))
        if self.ended == "goal":
            return SimulatorTurn("", goal_achieved=True)
        raise SpecrunError(
            f"the conversation of {self.source} ends after turn {len(self.turns)}"
            f" ({', '.join(state.pending) or 'no checkpoint'} pending): what the agent would have said next is not"
            " known; run the case again"
        )
