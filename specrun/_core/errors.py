"""Errors whose message is shown to the user as is, with the exit code they map to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .redact import redact


class SpecrunError(Exception):
    """An error the CLI prints without a traceback; ``exit_code`` is what the process returns.

    Its text is redacted wherever it is shown (a result's error, a pytest report, a traceback):
    an agent's or endpoint's message may quote a secret.
    """

    exit_code = 3

    def __str__(self) -> str:
        return redact(super().__str__())


class UsageError(SpecrunError):
    """Bad input or usage: a flag, a path, a config value."""

    exit_code = 2


@dataclass(frozen=True)
class Problem:
    """One mistake in a suite file: where it is and what is wrong."""

    file: str
    line: int
    column: int
    message: str
    pointer: str = ""

    def __str__(self) -> str:
        where = f" (at {self.pointer})" if self.pointer else ""
        return f"{self.file}:{self.line}:{self.column}: {self.message}{where}"


class SuiteError(UsageError):
    """One or more problems found in suite files; every problem is listed."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class PluginError(SpecrunError):
    """A plugin failed to load, or two plugins claim the same type name."""

    exit_code = 2


class ReportError(SpecrunError):
    """A reporter could not write its report (the streamed results are kept)."""


class TargetError(SpecrunError):
    """The agent under test failed: it crashed, hung, or answered with garbage.

    ``response`` may carry what the agent did before failing (tool calls, usage and cost), for
    the case's result to keep.
    """

    response: Any = None


class EvaluationError(SpecrunError):
    """An assertion could not reach a verdict (the result is an ``error``, never a pass or fail).

    ``usage`` may carry the tokens and cost spent before giving up (e.g. unparseable judge replies).
    """

    usage: Any = None
    details: dict[str, Any] | None = None  # kept in the error's assertion result (e.g. a snapshot to approve)
