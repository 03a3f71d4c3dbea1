"""The plugin API: everything a plugin imports besides ``specrun`` itself, and all of it stable.

A plugin subclasses a kind (:class:`AssertionType`, :class:`Target`, :class:`Source`,
:class:`Simulator`, :class:`Reporter`, :class:`Executor`) and registers it from a hook marked
``@specrun.hookimpl`` (or with :func:`registrar`). What the engine hands a plugin is typed data
(the spine below) and small Protocols of what it may call (:class:`CaseLoader` through
:class:`SourceContext`, :class:`ExecutorHost`, ``Services.models``); errors say what went wrong
in the user's words; a few helpers do what every plugin of a kind needs. Nothing else of the
engine is public: ``docs/plugins.md`` documents each name here, and
:mod:`specrun.plugin.testing` runs plugins in tests.
"""

from __future__ import annotations

from .. import hookimpl
from .._core.data import MISSING, Assertion, Case, Context, Message, Response, Suite, ToolCall, Usage, parse_duration
from .._core.errors import EvaluationError, SpecrunError, TargetError, UsageError
from .._core.kinds import (
    Adapter,
    AssertionType,
    CaseCancelled,
    Check,
    Executor,
    ExecutorHost,
    Job,
    Reporter,
    Session,
    Simulator,
    SimulatorState,
    SimulatorTurn,
    Source,
    SourceContext,
    Target,
    Verdict,
)
from .._core.results import Result, RunInfo
from .._load.patterns import PatternError, compile_pattern
from .._project.imports import load_callable
from .._project.plugin_manager import registrar
from .._report.display import shorten
from .._run.blocking import run_blocking
from .._run.proctree import ProcessTree

__all__ = [
    "MISSING",
    "Adapter",
    "Assertion",
    "AssertionType",
    "Case",
    "CaseCancelled",
    "Check",
    "Context",
    "EvaluationError",
    "Executor",
    "ExecutorHost",
    "Job",
    "Message",
    "PatternError",
    "ProcessTree",
    "Reporter",
    "Response",
    "Result",
    "RunInfo",
    "Session",
    "Simulator",
    "SimulatorState",
    "SimulatorTurn",
    "Source",
    "SourceContext",
    "SpecrunError",
    "Suite",
    "Target",
    "TargetError",
    "ToolCall",
    "Usage",
    "UsageError",
    "Verdict",
    "compile_pattern",
    "hookimpl",
    "load_callable",
    "parse_duration",
    "registrar",
    "run_blocking",
    "shorten",
]
