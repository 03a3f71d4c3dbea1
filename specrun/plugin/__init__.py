"""The plugin API: everything a plugin imports besides ``specrun`` itself.

A plugin subclasses a kind (:class:`AssertionType`, :class:`Target`, :class:`Source`,
:class:`Simulator`, :class:`Reporter`, :class:`Executor`), registers it from a hook marked ``@specrun.hookimpl``
(or with :func:`registrar`), and works with the data types, errors and helpers below. The
names here are stable; the engine modules they come from are not. ``docs/plugins.md``
documents each one; :mod:`specrun.plugin.testing` runs plugins in tests.
"""

from __future__ import annotations

from .. import hookimpl
from .._core.data import (
    MISSING,
    Assertion,
    Case,
    Context,
    Message,
    Response,
    Suite,
    ToolCall,
    Usage,
    as_response,
    extract_json,
    format_duration,
    json_line,
    parse_duration,
    to_json,
)
from .._core.errors import EvaluationError, PluginError, SpecrunError, TargetError, UsageError
from .._core.kinds import (
    AssertionType,
    CaseCancelled,
    Check,
    Executor,
    ExecutorHost,
    Job,
    Plugin,
    Reporter,
    Session,
    Simulator,
    SimulatorState,
    SimulatorTurn,
    Source,
    SourceContext,
    Target,
    Verdict,
    checked_verdict,
)
from .._core.redact import redact, redact_json
from .._core.redact import register as register_secret
from .._core.results import Result, RunInfo, utc_timestamp
from .._core.services import Models, Parsed, Services
from .._history.snapshots import Snapshot
from .._judges.judging import DATA_RULES, JUDGE_THRESHOLD, JudgeReply, data_block, parse_verdict
from .._judges.matching import DEFAULT_MODE as DEFAULT_COMPARE_MODE
from .._judges.matching import MATCH_THRESHOLD as COMPARE_THRESHOLD
from .._judges.matching import MODES as COMPARE_MODES
from .._judges.matching import alternatives, compare
from .._load.patterns import FlagError, PatternError, compile_pattern
from .._models.client import DEFAULT_CALL_TIMEOUT as MODEL_TIMEOUT
from .._models.client import DEFAULT_RETRIES as MODEL_RETRIES
from .._models.client import Completion, ModelClient, ModelError
from .._models.limiter import LIMITERS, endpoint_key, retry_after
from .._models.wire import excerpt, openai_messages, parse_openai_reply, parse_tool_call
from .._project.imports import find_module, load_callable, ref_problem, split_ref
from .._project.plugin_manager import registrar
from .._report.display import md_block, md_text, shorten, visible
from .._report.outputs import atomic_writer
from .._report.stability import CaseStats, Stream, scan
from .._run.blocking import run_blocking
from .._run.matrix import Matrix, matrix
from .._run.proctree import ProcessTree
from .._run.remote import RemoteRun, RemoteWorker
from .._run.settings import INTERRUPT_GRACE

__all__ = [
    "COMPARE_MODES",
    "COMPARE_THRESHOLD",
    "DATA_RULES",
    "DEFAULT_COMPARE_MODE",
    "INTERRUPT_GRACE",
    "JUDGE_THRESHOLD",
    "LIMITERS",
    "MISSING",
    "MODEL_RETRIES",
    "MODEL_TIMEOUT",
    "Assertion",
    "AssertionType",
    "Case",
    "CaseCancelled",
    "CaseStats",
    "Check",
    "Completion",
    "Context",
    "EvaluationError",
    "Executor",
    "ExecutorHost",
    "FlagError",
    "Job",
    "JudgeReply",
    "Matrix",
    "Message",
    "ModelClient",
    "ModelError",
    "Models",
    "Parsed",
    "PatternError",
    "Plugin",
    "PluginError",
    "ProcessTree",
    "RemoteRun",
    "RemoteWorker",
    "Reporter",
    "Response",
    "Result",
    "RunInfo",
    "Services",
    "Session",
    "Simulator",
    "SimulatorState",
    "SimulatorTurn",
    "Snapshot",
    "Source",
    "SourceContext",
    "SpecrunError",
    "Stream",
    "Suite",
    "Target",
    "TargetError",
    "ToolCall",
    "Usage",
    "UsageError",
    "Verdict",
    "alternatives",
    "as_response",
    "atomic_writer",
    "checked_verdict",
    "compare",
    "compile_pattern",
    "data_block",
    "endpoint_key",
    "excerpt",
    "extract_json",
    "find_module",
    "format_duration",
    "hookimpl",
    "json_line",
    "load_callable",
    "matrix",
    "md_block",
    "md_text",
    "openai_messages",
    "parse_duration",
    "parse_openai_reply",
    "parse_tool_call",
    "parse_verdict",
    "redact",
    "redact_json",
    "ref_problem",
    "register_secret",
    "registrar",
    "retry_after",
    "run_blocking",
    "scan",
    "shorten",
    "split_ref",
    "to_json",
    "utc_timestamp",
    "visible",
]
