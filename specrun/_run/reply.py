"""A standard case's reply: its input sent to the agent's session, within the case's time and
limits; when there is no reply to judge, the ``Result`` that says why (what the agent did
before it stopped, its calls and its cost, kept on it)."""

from __future__ import annotations

import time
from types import CoroutineType  # what inspect.iscoroutine tests, without its call per case

from .._core.data import TIMEOUT_ERROR, Response, format_duration
from .._core.errors import SpecrunError, TargetError
from .._core.kinds import Job, Session
from .._core.results import Result
from .deadline import within
from .limits import LimitExceeded, Meter
from .tracebacks import user_traceback
from .turns import in_turn, turn_of


async def reply(job: Job, session: Session, rate_limited: bool, meter: Meter, timeout: float) -> Response | Result:
    """The agent's answer to ``job``'s input, or the case's result when it gave none: over a
    limit (failed), out of time, or an error of the agent's or its target's."""
    case, turn = job.case, turn_of(job.case.input)
    try:
        started = time.perf_counter()
        answer = session.send(case.input)
        eager = not rate_limited and isinstance(answer, CoroutineType)  # see specrun._run.deadline
        with meter.watching():
            replied = await within(answer, meter.budget(timeout), eager)
        response = in_turn(Response.of(replied), turn)
        if response.latency_ms is None:
            response.latency_ms = (time.perf_counter() - started) * 1000
        return response
    except LimitExceeded as over:  # stopped mid-reply
        done = in_turn(meter.so_far, turn)
        return Result(case, "failed", run=job.run, error=str(over), response=done, usage=done.usage if done else None)
    except TimeoutError:
        if over_time := meter.out_of_time(timeout):
            return Result(case, "failed", run=job.run, error=over_time)
        return Result(case, "error", run=job.run, error=f"{TIMEOUT_ERROR} {format_duration(timeout)}")
    except TargetError as exc:
        done = in_turn(exc.response, turn)
        result = Result(case, "error", run=job.run, error=str(exc), response=done, usage=done and done.usage)
        result.traceback = user_traceback(exc)
        return result
    except SpecrunError as exc:
        return Result(case, "error", run=job.run, error=str(exc))
    except Exception as exc:
        error = f"agent error: {type(exc).__name__}: {exc}"
        return Result(case, "error", run=job.run, error=error, traceback=user_traceback(exc))
