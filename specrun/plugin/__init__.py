"""The plugin API: everything a plugin imports besides ``specrun`` itself.

A plugin subclasses a kind (:class:`AssertionType`, :class:`Target`, :class:`Source`,
:class:`Simulator`, :class:`Reporter`, :class:`Executor`), registers it from a hook marked ``@specrun.hookimpl``
(or with :func:`registrar`), and works with the data types, errors and helpers below. The
names here are stable; the engine modules they come from are not. ``docs/plugins.md``
documents each one; :mod:`specrun.plugin.testing` runs plugins in tests.
"""

from __future__ import annotations

from .. import hookimpl
from ..blocking import run_blocking
from ..display import md_block, md_text, shorten, visible
from ..errors import EvaluationError, PluginError, SpecrunError, TargetError, UsageError
from ..imports import find_module, load_callable, ref_problem, split_ref
from ..judging import DATA_RULES, JUDGE_THRESHOLD, JudgeReply, data_block, parse_verdict
from ..kinds import (
    AssertionType,
    CaseCancelled,
    Check,
    Executor,
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
from ..limiter import LIMITERS, endpoint_key, retry_after
from ..llm import DEFAULT_CALL_TIMEOUT as MODEL_TIMEOUT
from ..llm import DEFAULT_RETRIES as MODEL_RETRIES
from ..llm import Completion, ModelClient, ModelError
from ..matching import DEFAULT_MODE as DEFAULT_COMPARE_MODE
from ..matching import MATCH_THRESHOLD as COMPARE_THRESHOLD
from ..matching import MODES as COMPARE_MODES
from ..matching import alternatives, compare
from ..matrix import Matrix, matrix
from ..model import (
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
from ..options import INTERRUPT_GRACE
from ..outputs import atomic_writer
from ..patterns import FlagError, PatternError, compile_pattern
from ..plugins import registrar
from ..proctree import ProcessTree
from ..redact import redact, redact_json
from ..redact import register as register_secret
from ..remote import RemoteRun, RemoteWorker
from ..results import Result, RunInfo, utc_timestamp
from ..runner import Job
from ..services import Models, Parsed, Services
from ..snapshots import Snapshot
from ..stability import CaseStats, Stream, scan
from ..wire import excerpt, openai_messages, parse_openai_reply, parse_tool_call

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
