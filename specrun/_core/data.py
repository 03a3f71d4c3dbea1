"""The data that moves through a run: suites and cases in, responses out (results: :mod:`specrun._core.results`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from .durations import format_duration as format_duration  # re-exported: the engine imports them from here
from .durations import parse_duration as parse_duration
from .jsontext import json_line as json_line  # re-exported: where the engine has always found it
from .jsontext import to_json
from .parts import part_bytes, part_url

Status = Literal["passed", "failed", "error", "skipped"]

DEFAULT_USER = "test-user"
DEFAULT_TEAM = "test-team"
DEFAULT_LOCALE = "en-us"
ENVIRONMENT_DEFAULTS = {  # V1's TestEnvironment: what every case's context carries, and its defaults
    "user": DEFAULT_USER,
    "team": DEFAULT_TEAM,
    "locale": DEFAULT_LOCALE,
    "client_type": "test",
    "client_ip": "127.0.0.1",
    "referer": "test",
    "accept": "standard",
}
DEFAULT_TIMEOUT = 120.0  # a case's; one model call's is llm.DEFAULT_CALL_TIMEOUT
TIMEOUT_ERROR = "timeout after"  # how a timed-out run's error begins (the seed's wording; counted as timeouts)
DEFAULT_MAX_TURNS = 20

TOOL_CALL_PART = "tool_call"  # the content part of a tool-call input: {type, name, arguments}


@dataclass(slots=True)
class Message:
    """One chat message; ``content`` is text or a list of content parts (text/image/audio/file).

    ``name``, ``tool_calls`` and ``tool_call_id`` carry a tool-using history as the chat
    wire format has it (an assistant's calls, then ``tool`` messages answering them).
    """

    role: str
    content: str | list[dict[str, Any]]
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        """The text of the message, its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.get("text", "") for p in self.content if p.get("type") == "text")

    @property
    def attachments(self) -> list[dict[str, Any]]:
        """Non-text content parts (each resolved ``file://`` part carries ``path`` and ``mime``)."""
        if isinstance(self.content, str):
            return []
        return [p for p in self.content if p.get("type") != "text"]

    # An attachment's bytes, or its URL (a data URL for a local file or inline data).
    part_bytes = staticmethod(part_bytes)
    part_url = staticmethod(part_url)

    @property
    def tool_request(self) -> ToolCall | None:
        """The tool this message asks to call (a case's ``input: {tool, arguments}``), or None."""
        if isinstance(self.content, str):
            return None
        part = next((p for p in self.content if p.get("type") == TOOL_CALL_PART), None)
        return ToolCall(part["name"], dict(part.get("arguments") or {})) if part else None

    @classmethod
    def calling(cls, tool: str, arguments: dict[str, Any] | None = None) -> Message:
        """A user message that asks to call ``tool`` with ``arguments`` (what ``{tool, arguments}`` loads as)."""
        return cls("user", [{"type": TOOL_CALL_PART, "name": tool, "arguments": dict(arguments or {})}])

    def to_dict(self) -> dict[str, Any]:
        if isinstance(self.content, str):
            data: dict[str, Any] = {"role": self.role, "content": self.content}
        else:
            parts = [{k: v for k, v in p.items() if k not in ("path", "mime")} for p in self.content]
            data = {"role": self.role, "content": parts}
        # each named, not looked up by name: a case's input is made a dict twice per run
        if self.name is not None:
            data["name"] = self.name
        if self.tool_calls is not None:
            data["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data


@dataclass
class ToolCall:
    """A tool the agent called: its name, arguments and, when known, its result, call id,
    ``status`` (``"ok"``, or ``"error"`` when the call failed), ``step`` (the model step that
    issued it: calls of one step were made in parallel, one step after another in sequence) and
    ``turn`` (the user turn of the conversation it belongs to, from 1)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    id: str | None = None
    status: Literal["ok", "error"] | None = None
    step: int | None = None
    turn: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.result is not None:
            data["result"] = self.result
        for key in ("id", "status", "step", "turn"):
            if (value := getattr(self, key)) is not None:
                data[key] = value
        return data


class _NotReported(list[ToolCall]):
    """``Response.tool_calls`` when the target said nothing of tools: unknown, not ``[]`` (none)."""


@dataclass
class Usage:
    """Tokens and cost (USD) spent; ``cost`` is None when the backend did not say."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None

    def add(self, other: Usage | None) -> None:
        if other is None:
            return
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost": self.cost,
        }


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"  # unpickled (in an executor's worker) as this module's one MISSING, so `is` holds


MISSING: Any = _Missing()
"""Marks a value that is absent, as opposed to JSON ``null``."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """JSON from the whole text, a fenced code block, or the first object/array in prose.

    Returns ``MISSING`` when there is none.
    """
    stripped = text.strip()
    if not stripped:
        return MISSING
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        return value
    return MISSING


@dataclass
class Response:
    """What the agent answered: the one model every assertion and report reads.

    ``content`` is text, or structured output (a dict or list) when the agent returned one.
    ``tool_calls`` are the tools it called; left out, they are not reported (``tools_reported``
    is False: a tool assertion cannot be judged), while ``tool_calls=[]`` reports that none was.
    ``warnings`` say why a target doubts what it read (shown on the case and in its record).
    ``state`` is how the agent's protocol said the turn ended, when it says: an MCP tool
    result's ``ok`` or ``error``, an A2A task's ``completed``, ``failed``, ``input-required``...
    """

    content: Any = None
    tool_calls: list[ToolCall] = field(default_factory=_NotReported)
    usage: Usage | None = None
    latency_ms: float | None = None
    raw: Any = None
    warnings: list[str] = field(default_factory=list)
    state: str | None = None

    @property
    def text(self) -> str:
        """The output as text; structured output as its JSON text."""
        content = self.content
        if type(content) is str:  # the usual answer, read without a cached_property's lock
            return content
        return self._structured_text

    @cached_property
    def _structured_text(self) -> str:
        """``text`` of output that is not a string: its JSON, made once."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return to_json(self.content)

    @classmethod
    def of(cls, value: Any) -> Response:
        """What a target returned (a ``str``, ``dict``, ``list``, number or ``Response``) as a
        ``Response``; a ``TypeError`` naming the type for anything else."""
        if isinstance(value, Response):
            return value
        if value is None or isinstance(value, str | dict | list | int | float | bool):
            return cls(content=value)
        raise TypeError(f"an agent must return str, dict, list or specrun.Response, not {type(value).__name__}")

    @property
    def tools_reported(self) -> bool:
        """Whether the target reported its tool calls (an empty list given on purpose counts)."""
        return bool(self.tool_calls) or not isinstance(self.tool_calls, _NotReported)

    @cached_property
    def json(self) -> Any:
        """Structured output, or JSON found in the text; ``MISSING`` when there is none."""
        if self.content is not None and not isinstance(self.content, str):
            return self.content
        return extract_json(self.text)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"output": self.content}
        if self.tools_reported:
            data["tool_calls"] = [t.to_dict() for t in self.tool_calls]
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.state is not None:
            data["state"] = self.state
        return data


@dataclass(slots=True)
class Location:
    """Where a node of a suite file is: file, 1-based line and column, and its field path."""

    file: str
    line: int = 1
    column: int = 1
    pointer: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Assertion:
    """One assertion: its type, the type's own parameters, and the envelope fields."""

    type: str
    params: dict[str, Any] = field(default_factory=dict)
    negate: bool = False
    message: str | None = None
    location: Location | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, **self.params}
        if self.negate:
            data["negate"] = True
        if self.message:
            data["message"] = self.message
        return data


@dataclass(slots=True)
class Checkpoint:
    """A dynamic-mode milestone: reached when its assertion passes after its ``after`` ones."""

    id: str
    assertion: Assertion
    description: str | None = None
    after: list[str] = field(default_factory=list)
    required: bool = True


@dataclass(slots=True)
class Case:
    """One test case, fully resolved (suite defaults merged, files read)."""

    id: str
    location: Location
    input: list[Message] = field(default_factory=list)
    name: str | None = None
    expected: Any = MISSING
    assertions: list[Assertion] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    before: str | None = None
    after: str | None = None
    user: str | None = None
    team: str | None = None
    locale: str | None = None
    client_type: str | None = None
    client_ip: str | None = None
    referer: str | None = None
    accept: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    skip: bool | str = False
    timeout: float | None = None
    tags: list[str] = field(default_factory=list)
    min_pass_rate: float | None = None
    simulator: dict[str, Any] | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    max_turns: int | None = None
    limits: dict[str, float] = field(default_factory=dict)  # the case's and its defaults' (specrun/_run/limits.py)
    suite: Suite | None = field(default=None, repr=False, compare=False)
    target: str | dict[str, Any] | None = None  # this case's own agent, over the suite's
    tools: list[dict[str, Any]] = field(default_factory=list)  # mocked tools, served over MCP (specrun._mocks)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # generated cases only: what --save writes

    @property
    def dynamic(self) -> bool:
        """True for a simulator-driven case."""
        return self.simulator is not None or bool(self.checkpoints)

    @property
    def title(self) -> str:
        """The name when given, else a preview of the last input message."""
        if self.name:
            return self.name
        if not self.input:
            return ""
        call = self.input[-1].tool_request
        return f"{call.name} {to_json(call.arguments)}" if call else self.input[-1].text


@dataclass
class Suite:
    """A file (or generated batch) of cases, with its default target."""

    path: Path
    cases: Sequence[Case] = field(default_factory=list)  # a suite file's are read from it as iterated
    name: str | None = None
    target: str | dict[str, Any] | None = None
    targets: list[str | dict[str, Any]] | None = None  # each case runs against every one of these
    samples: int | None = None  # judge calls per judge assertion of its cases (specrun._judges.samples)
    pairwise: dict[str, Any] | None = None  # its agents' answers compared two at a time (specrun._judges.pairwise)
    generated: bool = False  # made by a model or script: data only, and what --save writes

    @property
    def base_dir(self) -> Path:
        return self.path.parent


@dataclass
class TraceContext:
    """The case's trace, when its agent file says ``traces: otel`` (``Context.trace``): the W3C
    trace context the agent's spans join, and where an agent in another process sends them.

    A target passes ``traceparent`` on (the ``http`` target as a header) or the whole of
    ``environment()`` (the ``process`` target); spans of ``trace_id`` are the case's evidence
    (docs/targets.md, "Traces"). ``spans`` is the trace as the result records it, set when
    the case's session closes.
    """

    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16: the case's root span, the parent of the agent's first spans
    endpoint: str | None = None  # specrun's OTLP/HTTP receiver (http://127.0.0.1:PORT); None: none listens
    spans: list[dict[str, Any]] | None = None
    dropped: int = 0  # spans of the case's trace beyond what is kept

    @property
    def traceparent(self) -> str:
        """The W3C ``traceparent`` header value: version 00, sampled."""
        return f"00-{self.trace_id}-{self.span_id}-01"

    @property
    def traces_endpoint(self) -> str | None:
        """The receiver's traces URL (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), or None."""
        return f"{self.endpoint}/v1/traces" if self.endpoint else None

    def environment(self) -> dict[str, str]:
        """The variables that point an OpenTelemetry SDK in another process at this trace:
        ``TRACEPARENT`` and, with a receiver, ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
        ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``."""
        env = {"TRACEPARENT": self.traceparent}
        if self.endpoint:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.endpoint
            env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{self.endpoint}/v1/traces"
        return env

    def to_dict(self) -> dict[str, Any]:
        """The result record's ``trace``: the trace id and the kept spans."""
        data: dict[str, Any] = {"trace_id": self.trace_id, "spans": self.spans or []}
        if self.dropped:
            data["dropped"] = self.dropped
        return data


@dataclass
class Context:
    """What a target, hook or assertion knows of the case it serves: its environment (V1's
    TestEnvironment: user, team, locale, client type and IP, referer, accept), its options and
    metadata, ``extra`` (the other keys of ``--ctx``), ``trace`` (its agent traced) and ``mcp_url``."""

    case_id: str
    user: str = DEFAULT_USER
    team: str = DEFAULT_TEAM
    locale: str = DEFAULT_LOCALE
    metadata: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    run: int = 1
    extra: dict[str, Any] = field(default_factory=dict)
    client_type: str = ENVIRONMENT_DEFAULTS["client_type"]
    client_ip: str = ENVIRONMENT_DEFAULTS["client_ip"]
    referer: str = ENVIRONMENT_DEFAULTS["referer"]
    accept: str = ENVIRONMENT_DEFAULTS["accept"]
    trace: TraceContext | None = None  # set by specrun for an agent with ``traces:`` on
    mcp_url: str | None = None  # the MCP server of the case's mocked tools (``tools:``), set by specrun
    # The case's limits watching its agent's reply (set by specrun; see ``progress``).
    _progress: Callable[[Response], None] | None = field(default=None, repr=False, compare=False)

    def progress(self, so_far: Response) -> None:
        """Tell specrun what the reply under way has done so far (its tool calls and usage, all of
        this reply's): called by a session as they happen, from the task awaiting its ``send``. A
        case that has gone over its ``limits:`` is stopped here: this raises
        ``asyncio.CancelledError``, which the session lets through to stop its framework."""
        if self._progress is not None:
            self._progress(so_far)

    def to_dict(self) -> dict[str, Any]:
        # The fields last: an ``extra`` key named like one never hides what ``ctx.<field>`` says.
        return {
            **self.extra,
            "case_id": self.case_id,
            **{name: getattr(self, name) for name in ENVIRONMENT_DEFAULTS},
            "metadata": self.metadata,
            "options": self.options,
            "run": self.run,
        }


@dataclass
class Agent:
    """An agent under test: its id, where it is defined, and its target config."""

    id: str
    target: dict[str, Any]
    base_dir: Path
    path: Path | None = None
    extra_hook_dirs: list[Path] = field(default_factory=list)
    resources: dict[str, float] = field(default_factory=dict)  # what one case needs on an executor (num_cpus, ...)
    traces: dict[str, Any] | None = None  # ``traces:`` of the agent file, as a mapping with ``type``

    @property
    def hook_dirs(self) -> list[Path]:
        """Where the agent's hook modules may live: its ``hooks`` folder, its folder, ``src/``."""
        return [*self.extra_hook_dirs, self.base_dir, self.base_dir / "src"]
