"""specrun._run.tracebacks: the traceback a result keeps of the user's exception, masked and bounded."""

from __future__ import annotations

import pytest

from specrun._core.errors import TargetError, UsageError
from specrun._run.tracebacks import HEAD, MAX_CHARS, user_traceback


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_a_target_error_gives_the_agents_exception_and_specruns_own_errors_none():
    try:
        try:
            raise KeyError("missing")
        except KeyError as exc:
            raise TargetError("agent error: KeyError: 'missing'") from exc
    except TargetError as wrapped:
        trace = user_traceback(wrapped)
    assert trace is not None and trace.endswith("KeyError: 'missing'\n") and "TargetError" not in trace
    assert user_traceback(raised(TargetError("HTTP 500 from http://x"))) is None  # nothing of the user's behind it
    assert user_traceback(raised(UsageError("unknown agent"))) is None
    assert user_traceback(None) is None


def test_a_long_traceback_keeps_its_start_and_end_and_no_part_of_a_secret(monkeypatch: pytest.MonkeyPatch):
    secret = "correct-horse-battery-staple"
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    # The secret straddles the point where the middle is cut: masked first, so no half of it is left.
    head = 'Traceback (most recent call last):\n  File "'
    filler = "x" * (HEAD - len(head) - 200)
    message = filler + secret + "y" * 5 * MAX_CHARS + " the end"
    trace = user_traceback(raised(ValueError(message)))
    assert trace is not None and len(trace) < MAX_CHARS + 100
    assert trace.startswith("Traceback (most recent call last):") and trace.endswith(" the end\n")
    assert "characters left out" in trace
    assert "[REDACTED:SERVICE_TOKEN]" in trace
    assert not any(secret[i : i + 6] in trace for i in range(len(secret) - 5))
