"""Shared by the whole-file reporters: the re-read result stream and its display helpers.

A whole-file reporter keeps nothing during the run; in ``run_finished`` it scans the streamed JSONL
once (per-case statistics and each line's offset, see ``specrun._report.stream.scan``) and then
reads the records of one case at a time while it writes, so memory does not grow with outputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ... import __version__
from ..._core.data import format_duration
from ..._core.kinds import Reporter
from ..._core.results import utc_timestamp
from ..._run.matrix import Matrix, matrix
from ..display import visible
from ..outputs import atomic_writer
from ..stability import CaseStats
from ..stream import Stream, scan

ICONS = {"passed": "✅", "failed": "❌", "error": "⚠️", "skipped": "⏭️"}
LABELS = {"passed": "Passed", "failed": "Failed", "error": "Error", "skipped": "Skipped"}
ORDER = {"failed": 0, "error": 1, "passed": 2, "skipped": 3}  # the viewer's order (specrun.viewer.store)


def failures_first(cases: list[CaseStats]) -> list[CaseStats]:
    """``cases`` failed first, then errors, passed, skipped; each group keeps its suite order."""
    return sorted(cases, key=lambda c: ORDER.get(c.status, len(ORDER)))


def as_text(value: Any) -> str:
    """An output or value for display: text as is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return visible(value)
    return visible(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False, default=str))


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit} more characters; see the JSON report)"


# A text report's size is bounded per case whatever the agent says: each text is clipped to the
# reporter's ``max_chars``, and so is the number of runs and turns shown (0 lifts all three).
MAX_RUN_DETAILS = 5  # runs shown in full per case, the failing ones first
MAX_TURNS = 20  # turns shown per conversation: the first and the last ten


def shown_runs(records: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The runs of a case a text report shows in full, the failing ones first."""
    ordered = sorted(records, key=lambda r: r.get("status") == "passed")
    return ordered if limit <= 0 else ordered[:MAX_RUN_DETAILS]


def shown_turns(record: dict[str, Any], limit: int) -> list[dict[str, Any] | str]:
    """The turns of a dynamic run a text report shows; a note stands for those left out."""
    turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
    if limit <= 0 or len(turns) <= MAX_TURNS:
        return list(turns)
    half = MAX_TURNS // 2
    note = f"… {len(turns) - 2 * half} turns left out here; see the JSON report"
    return [*turns[:half], note, *turns[-half:]]


def message_text(message: Any) -> str:
    """A chat message (or a plain turn input) as ``role: text`` lines."""
    if isinstance(message, dict) and "role" in message:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(
                p.get("text", "") if p.get("type") == "text" else f"[{p.get('type', 'part')}]"
                for p in content
                if isinstance(p, dict)
            )
        return f"{message['role']}: {as_text(content)}"
    return as_text(message)


def input_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(message_text(m) for m in value)
    return as_text(value)


def reason_label(record: dict[str, Any]) -> str:
    """What a record's ``error`` text is, by its status: ``Skipped`` (the reason), ``Failed``
    (e.g. max turns exceeded) or ``Error``; a skip reason or a failure is not an error."""
    return LABELS.get(str(record.get("status")), "Error")


def bad_assertions(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The assertions of a result that failed or could not reach a verdict."""
    return [a for a in record.get("assertions") or [] if isinstance(a, dict) and a.get("status") in ("failed", "error")]


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else format_duration(value / 1000)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


MAX_PLACES = 3  # suites named per timeout in a header; the rest are counted
MAX_VALUES = 4  # timeouts a header lists one by one; more are shown as one range


@dataclass
class Report:
    """What a whole-file reporter writes from: run info, summary, cases in suite order."""

    info: dict[str, Any]
    summary: dict[str, Any]
    stream: Stream
    cases: list[CaseStats]
    multi: bool = False  # cases ran more than once: stability fields are shown

    @property
    def interrupted(self) -> bool:
        return bool(self.summary.get("interrupted"))

    @property
    def incomplete(self) -> str | None:
        """Why the stream lacks results (it could not be written), when it does."""
        return self.summary.get("incomplete") or None

    def incomplete_note(self) -> str:
        """What a report that is ``incomplete`` says at its top."""
        listed = sum(c.runs + c.skipped for c in self.cases)
        return (
            f"not every result could be written to the result stream ({self.incomplete}). The counts "
            f"are the run's, of {self.summary.get('total_runs')} results; only the {listed} written are listed."
        )

    @property
    def matrix(self) -> Matrix:
        """The agent x case matrix; falsy when the run tested one agent."""
        return matrix(self.cases)

    @property
    def agents(self) -> dict[str, dict[str, Any]]:
        """Each agent's totals (pass rate, latency, tokens, cost) when the run tested several."""
        agents = self.summary.get("agents")
        return agents if isinstance(agents, dict) and self.matrix else {}

    def label(self, case: CaseStats) -> str:
        """A case's id, with its agent's when the run tested several."""
        return f"{case.id} [{case.agent}]" if self.agents and case.agent else case.id

    def records(self, case: CaseStats) -> list[dict[str, Any]]:
        """The result records of one case, in run order (read from the stream file now)."""
        return list(self.stream.records(case))

    @property
    def environment(self) -> dict[str, Any]:
        env = self.info.get("environment")
        return dict(env) if isinstance(env, dict) else {}

    @property
    def metadata(self) -> dict[str, Any]:
        info = self.info
        inputs = info.get("inputs") or []
        data: dict[str, Any] = {
            "started_at": info.get("started_at") or None,
            "completed_at": self.summary.get("completed_at") or utc_timestamp(),
            "timestamp": info.get("started_at") or None,  # V1's name for started_at
            "inputs": inputs,
            "input_file": ", ".join(inputs) or None,  # V2's name (one input: its path)
            "target": info.get("target"),
            "runs": info.get("runs") or self.summary.get("runs_per_case") or 1,
            "parallel": info.get("parallel"),
            "timeout_s": info.get("timeout_s"),
            "interrupted": self.interrupted,
            "incomplete": self.incomplete,
            "version": __version__,
        }
        return data

    def title_fields(self) -> list[tuple[str, Any]]:
        """The run's identity, for report headers: agent, target, connector when known."""
        fields = [("Agent", self.info.get("agent_id")), ("Target", self.info.get("target"))]
        fields.append(("Connector", self.info.get("connector")))
        return [(k, v) for k, v in fields if v]

    def timeout_text(self) -> str:
        """The case timeout that applied to the cases that ran, for report headers: ``2.0m``, or
        each value with the suites it applied in, the rest as "others": ``30.0s (suites/a.yaml),
        2.0m (others)``. A suite's ``defaults.timeout`` and a case's own beat the run's ``--timeout``."""
        given = self.info.get("timeout_s")
        run: float | None = given if type(given) in (int, float) else None  # None: a stream that does not say
        used: dict[str, set[float | None]] = {}  # suite file -> the timeouts its cases that ran had
        for c in self.cases:
            if c.runs:
                used.setdefault(c.file, set()).add(c.timeout_s if c.timeout_s is not None else run)
        values = set().union(*used.values()) if used else {run}
        if len(values) == 1:
            return _seconds(run if run in values else next(iter(values)))
        # "others" is the run's timeout when some cases had it, else the one most suites had
        rest = run if run in values else max(values, key=lambda v: (sum(v in u for u in used.values()), v or 0))
        others = sorted(v for v in values - {rest} if v is not None)
        parts = []
        for group in [[v] for v in others] if len(others) <= MAX_VALUES else [others]:  # many: one range
            places = [f if used[f] <= {*group} else f"some cases of {f}" for f in used if used[f] & {*group}]
            more = len(places) - MAX_PLACES
            named = ", ".join(places[:MAX_PLACES]) + (f" and {more} more suite{'s' * (more > 1)}" if more > 0 else "")
            value = _seconds(group[0]) + (f" to {_seconds(group[-1])}" if len(group) > 1 else "")
            parts.append(f"{value} ({named})")
        return ", ".join([*parts, f"{_seconds(rest)} (others)"])


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else format_duration(value)


# What only the runner knows; every count and rate is recomputed from the stream instead, so
# a report is right whatever the caller counted (runs or cases).
_RUNNER_KEYS = ("duration_ms", "interrupted", "not_run", "completed_at", "min_pass_rate", "incomplete")


def load(summary: dict[str, Any], stream: Path) -> Report:
    """Scan the streamed results; statistics come from the stream, run facts from ``summary``.

    When the stream lacks results (``summary["incomplete"]``), the counts are the runner's: a
    stream cut short by a full disk must not make a red run look green.
    """
    results = scan(Path(stream), summary.get("min_pass_rate"))
    merged = results.aggregator.summary()
    for source in (results.summary or {}, summary):
        merged.update({k: v for k, v in source.items() if k in _RUNNER_KEYS or k not in merged})
    if summary.get("incomplete"):
        merged.update(summary)
    merged.pop("type", None)
    cases = results.aggregator.cases()
    multi = int(merged.get("runs_per_case") or 1) > 1 or any(c.runs + c.skipped > 1 for c in cases)
    return Report(results.start, merged, results, cases, multi)


class WholeFileReporter(Reporter):
    """A report written once the run ends: rebuilt from the streamed results (so no result is
    held in memory) and written atomically. Subclasses implement ``render``."""

    def render(self, report: Report, out: IO[str]) -> None:
        raise NotImplementedError

    def run_finished(self, summary: dict[str, Any], stream: Path) -> None:
        report = load(summary, stream)
        with atomic_writer(self.path) as out:
            self.render(report, out)
