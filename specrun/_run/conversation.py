"""Dynamic mode: a simulated user talks to the agent while checkpoints are checked after every turn.

Each turn the simulator says something (a case's opening ``input`` ending with a user message
is said first, as is), the agent answers, and every pending checkpoint whose ``after``
checkpoints are reached is checked against that answer (text and tool calls). Checkpoints
reached in one turn unlock the ones that follow them in that same turn. The verdict:

- passed: every required checkpoint reached (the conversation stops right then), or, for a case
  with no required checkpoints, the simulator declared its goal achieved;
- failed: the simulator declared its goal achieved with required checkpoints missing, or
  ``max_turns`` (default 20) ran out;
- error: what could not be judged: the timeout (which bounds the whole conversation and cuts a
  turn short), the agent crashing, the simulator failing or replying unusably, or a checkpoint
  assertion that could not decide.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.data import (
    DEFAULT_MAX_TURNS,
    TIMEOUT_ERROR,
    Case,
    Context,
    Message,
    Response,
    Status,
    Usage,
    format_duration,
)
from .._core.errors import SpecrunError, UsageError
from .._core.kinds import Check, Job, Session, Simulator, SimulatorState, SimulatorTurn
from .._core.results import Result, Verdict
from .._project.registry import Registry
from .limits import LimitExceeded, LimitUnknown, Meter
from .tracebacks import user_traceback
from .turns import Trajectory, in_turn
from .verdicts import evaluate, judge_usage


def simulator_config(case: Case, default_simulator: str | None, registry: Registry) -> dict[str, Any]:
    """The case's simulator config (its ``type`` implied by a shorthand), else ``--simulator``'s."""
    if case.simulator is not None:
        config = dict(case.simulator)
        config.setdefault("type", registry.simulator_for(config).name)
        return config
    if default_simulator:
        return registry.simulator_config(default_simulator)
    raise UsageError(f"dynamic case {case.id!r} has no simulator: add 'simulator' or pass --simulator")


def build_simulator(case: Case, default_simulator: str | None, registry: Registry) -> Simulator:
    """A fresh simulator for one run of one case (scripted ones keep their place in the script)."""
    config = simulator_config(case, default_simulator, registry)
    cls = registry.get("simulator", config["type"])
    base_dir = case.suite.base_dir if case.suite is not None else Path.cwd()
    return cls(config, base_dir)


class _Stop(Exception):
    """Ends the conversation with a status and an error message."""

    def __init__(self, status: Status, error: str | None = None):
        super().__init__(error)
        self.status = status
        self.error = error


@dataclass
class Conversation:
    """The state of one dynamic case as it runs."""

    case: Case
    session: Session
    context: Context
    services: Any
    registry: Registry
    simulator: Simulator
    max_turns: int
    history: list[Message] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    reached: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    spent: bool = False
    response: Response | None = None
    turn: int = 0
    target: str | None = None  # the target's type, for the messages of tool checkpoints
    trajectory: Trajectory = field(default_factory=Trajectory)
    meter: Meter = field(default_factory=lambda: Meter({}))  # the case's limits
    ended: str | None = None  # "goal": the simulator declared its goal achieved (a rejudge replays that)

    # -- checkpoints ----------------------------------------------------------------------------

    @property
    def pending(self) -> list[str]:
        return [c.id for c in self.case.checkpoints if c.id not in self.reached]

    @property
    def missing(self) -> list[str]:
        """Required checkpoints not reached yet."""
        return [c.id for c in self.case.checkpoints if c.required and c.id not in self.reached]

    @property
    def has_required(self) -> bool:
        return any(c.required for c in self.case.checkpoints)

    async def check(self, response: Response) -> None:
        """Check the pending checkpoints against this turn's answer, in dependency order.

        A checkpoint is checked (once per turn) only when every ``after`` checkpoint is reached,
        earlier or in this turn, so a model-judged checkpoint is never asked about early.
        """
        whole = self.trajectory.response(response)
        check = Check(response, self.case, self.context, self.services, list(self.history), self.target, whole)
        tried: set[str] = set()
        progress = True
        while progress:
            progress = False
            for cp in self.case.checkpoints:
                if cp.id in self.reached or cp.id in tried or not all(d in self.reached for d in cp.after):
                    continue
                tried.add(cp.id)
                verdict = await evaluate(cp.assertion, check, self.registry)
                verdict.details = {**(verdict.details or {}), "checkpoint": cp.id, "turn": self.turn}
                self._spend(judge_usage([verdict]), "judge")
                self.verdicts[cp.id] = verdict
                if verdict.status == "error":
                    raise _Stop(
                        "error", f"checkpoint {cp.id} could not be checked in turn {self.turn}: {verdict.message}"
                    )
                if verdict.status == "passed":
                    self.reached[cp.id] = self.turn
                    progress = True

    # -- turns ----------------------------------------------------------------------------------

    def _spend(self, usage: Usage | None, where: str) -> None:
        """Add what ``where`` (agent, judge, simulator) spent; over a limit, the case fails."""
        if usage is not None:
            self.spent = True
            self.usage.add(usage)
        self._counted(self.meter.spend, usage, where)

    @staticmethod
    def _counted(count: Any, *args: Any) -> None:
        try:
            count(*args)
        except LimitExceeded as over:
            raise _Stop("failed", str(over)) from None
        except LimitUnknown as unknown:
            raise _Stop("error", str(unknown)) from None

    async def user_message(self) -> str | None:
        """What the simulated user says this turn; None when it declares its goal achieved."""
        state = SimulatorState(
            self.case,
            list(self.history),
            self.turn,
            self.max_turns,
            list(self.reached),
            self.pending,
            self.context,
            self.services,
        )
        try:
            said: SimulatorTurn = await self.simulator.next_turn(state)
        except SpecrunError as exc:
            raise _Stop("error", f"simulator error: {exc}") from exc
        except Exception as exc:
            raise _Stop("error", f"simulator error: {type(exc).__name__}: {exc}") from exc
        self._spend(said.usage, "simulator")
        if said.goal_achieved:
            return None
        if not said.message.strip():
            raise _Stop("error", "simulator error: an empty message, and the goal not declared achieved")
        return said.message

    async def play(self) -> None:
        """Turn after turn until a verdict; raises ``_Stop`` with it."""
        while self.turn < self.max_turns:
            self.turn += 1
            self._counted(self.meter.turn, self.turn)  # a turn over the limit is never asked for
            # A case's opening input that ends with a user message is said first, as is.
            if not (self.turn == 1 and self.history and self.history[-1].role == "user"):
                message = await self.user_message()
                if message is None:
                    self.ended = "goal"
                    if self.missing:
                        missing = ", ".join(self.missing)
                        why = f"the simulator declared its goal achieved in turn {self.turn}"
                        raise _Stop("failed", f"missing checkpoints: {missing} ({why})")
                    raise _Stop("passed")
                self.history.append(Message("user", message))
            last_user = self.history[-1]
            user_text = last_user.text
            try:
                with self.meter.watching():
                    replied = await self.session.send(list(self.history))
                response = in_turn(Response.of(replied), self.turn)
            except LimitExceeded as over:  # stopped mid-reply: what it had done is kept
                if self.meter.so_far is not None:
                    self.response = in_turn(self.meter.so_far, self.turn)
                    self.trajectory.add(self.response)
                    if self.response.usage is not None:  # on the result; the meter has it already
                        self.spent = True
                        self.usage.add(self.response.usage)
                raise _Stop("failed", f"{over} (in turn {self.turn})") from None
            except SpecrunError as exc:
                failed = getattr(exc, "response", None)  # a failed turn's calls and cost are kept
                if failed is not None:
                    self.response = in_turn(failed, self.turn)
                    self.trajectory.add(failed)
                    self._spend(failed.usage, "agent")
                raise _Stop("error", f"{exc} (in turn {self.turn})") from exc
            except Exception as exc:
                raise _Stop("error", f"agent error: {type(exc).__name__}: {exc} (in turn {self.turn})") from exc
            self.response = response
            self.trajectory.add(response)
            if response.usage is not None:
                self.spent = True
                self.usage.add(response.usage)
            self.history.append(Message("assistant", response.text))
            record: dict[str, Any] = {"turn": self.turn, "input": user_text, "output": response.content}
            files = [_file_name(part) for part in last_user.attachments]
            if files:  # shown as `+ [receipt.jpg]` in the console's turn tree
                record["attachments"] = files
            if response.tools_reported:  # [] when none was called; left out when not known
                record["tool_calls"] = [t.to_dict() for t in response.tool_calls]
            if response.state is not None:  # an A2A task's, which a checkpoint's `state` may check
                record["state"] = response.state
            self.turns.append(record)
            self._counted(self.meter.answered, response)  # its calls and usage; the turn is recorded
            if self.case.tools:  # a call no mock answered fails the case, as a standard case's does
                from .._mocks.session import verdicts as unmocked

                if failed_calls := unmocked(response):
                    raise _Stop("failed", f"{failed_calls[0].message} (in turn {self.turn})")
            await self.check(response)
            if self.has_required and not self.missing:
                raise _Stop("passed")
        missing = f"; missing checkpoints: {', '.join(self.missing)}" if self.missing else ""
        raise _Stop("failed", f"max turns ({self.max_turns}) exceeded{missing}")

    # -- the result -----------------------------------------------------------------------------

    def checkpoint_records(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c.id,
                "description": c.description,
                "reached_at_turn": self.reached.get(c.id),
                "passed": c.id in self.reached,
                "required": c.required,
            }
            for c in self.case.checkpoints
        ]

    def assertion_results(self) -> list[Verdict]:
        """The last verdict of each checkpoint that was checked; missing ones read as failed."""
        results = []
        for c in self.case.checkpoints:
            verdict = self.verdicts.get(c.id)
            if verdict is None:
                continue
            if c.id in self.reached:
                verdict.message = f"checkpoint {c.id} reached in turn {self.reached[c.id]}" + (
                    f": {verdict.message}" if verdict.message else ""
                )
            elif verdict.status == "failed":
                verdict.message = f"checkpoint {c.id} not reached: {verdict.message}"
                if not c.required:
                    verdict.status = "skipped"  # an optional checkpoint never fails a case
            results.append(verdict)
        return results


async def run_conversation(
    job: Job,
    session: Session,
    ctx: Context,
    services: Any,
    registry: Registry,
    timeout: float,
    default_simulator: str | None,
    meter: Meter | None = None,
    simulator: Simulator | None = None,
) -> Result:
    """Run one dynamic case to its verdict (see the module docstring); never raises for the
    case's own failures, only for cancellation. The result's tool calls are every turn's.
    ``simulator``: the user's side, else the case's own (a rejudge replays the recorded one)."""
    case, run = job.case, job.run
    try:
        simulator = simulator or build_simulator(case, default_simulator, registry)
    except SpecrunError as exc:
        return Result(case, "error", run=run, error=str(exc), turns=[], checkpoints=[])
    talk = Conversation(
        case, session, ctx, services, registry, simulator, case.max_turns or DEFAULT_MAX_TURNS, list(case.input)
    )
    talk.target = job.agent.target.get("type")
    talk.meter = meter or Meter({})
    status: Status
    error: str | None
    where = None
    try:
        async with asyncio.timeout(talk.meter.budget(timeout)):
            await talk.play()
        status, error = "error", "the conversation ended without a verdict"  # play() always raises
    except _Stop as stop:
        status, error, where = stop.status, stop.error, user_traceback(stop.__cause__)
    except TimeoutError:
        over_time = talk.meter.out_of_time(timeout, "conversation")
        missing = f"; missing checkpoints: {', '.join(talk.missing)}" if talk.missing else ""
        status, error = "error", f"{TIMEOUT_ERROR} {format_duration(timeout)} in turn {talk.turn}{missing}"
        if over_time:
            status, error = "failed", f"{over_time} in turn {talk.turn}"
    return Result(
        case,
        status,
        run=run,
        response=talk.trajectory.response(talk.response),
        error=error,
        traceback=where,
        assertions=talk.assertion_results(),
        turns=talk.turns,
        checkpoints=talk.checkpoint_records(),
        usage=talk.usage if talk.spent else None,
        ended=talk.ended,
    )


def _file_name(part: dict[str, Any]) -> str:
    """What a turn's attachment is called: its file's name, else its type (``image``)."""
    source = str(part.get("source") or part.get("path") or part.get("url") or "")
    return source.rsplit("/", 1)[-1] or str(part.get("type", "attachment"))
