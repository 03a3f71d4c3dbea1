"""Which case a span is evidence for, and how much of it is kept.

Each case that runs with traces on opens a :class:`CaseTrace` on the run's :class:`Router`
under a trace id of its own; a span is the case's when it carries that trace id (its context
was propagated from the case: the OpenTelemetry context specrun set around the agent call, a
``traceparent`` header, ``TRACEPARENT``), never because of when it arrived. A span of no open
case (one that came after its case ended, or from elsewhere) is counted and dropped.

Memory is bounded per case (``MAX_CASE_SPANS`` spans, ``MAX_CASE_CHARS`` of attributes) and
over the run's open cases together (``MAX_HELD_CHARS``); what does not fit is dropped and
counted, on the case (its record and a warning say so) and in the run's summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable

from .spans import Span

MAX_CASE_SPANS = 2_000
MAX_CASE_CHARS = 4 * 1024 * 1024
MAX_HELD_CHARS = 64 * 1024 * 1024


class CaseTrace:
    """The spans of one case's trace, in arrival order; ``root_id`` is the case's root span
    (the parent of the agent's first spans), which no agent sends."""

    __slots__ = (
        "_ids",
        "_missing",
        "_tops",
        "_tops_seen",
        "_waiter",
        "chars",
        "dropped",
        "listener",
        "loop",
        "root_id",
        "spans",
        "taken",
        "trace_id",
    )

    def __init__(self, trace_id: int, root_id: int):
        self.trace_id, self.root_id = trace_id, root_id
        self.spans: list[Span] = []
        self.chars = 0
        self.dropped = 0
        self.taken = 0  # spans already read as a turn's evidence
        self._ids: set[int] = set()
        self._missing: set[int] = set()  # parents named by a span and not received (yet)
        self._tops = 0  # spans whose parent is the root (or none): the agent's own top-level spans
        self._tops_seen = 0
        self._waiter: asyncio.Event | None = None
        # Told on ``loop``'s thread as spans arrive while a reply is under way (the case's limits).
        self.listener: Callable[[], None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def _add(self, span: Span) -> None:
        self.spans.append(span)
        self.chars += span.size
        self._ids.add(span.span_id)
        self._missing.discard(span.span_id)
        if span.parent_id in (self.root_id, 0):  # 0: an agent that kept the trace id but started a root
            self._tops += 1
        elif span.parent_id and span.parent_id not in self._ids:
            self._missing.add(span.parent_id)

    def take(self) -> list[Span]:
        """The spans that came since the last ``take``: one turn's evidence."""
        new, self.taken = self.spans[self.taken :], len(self.spans)
        return new

    def turn_started(self) -> None:
        """Mark where a turn starts: ``complete`` then waits for a top-level span of this turn."""
        self._tops_seen = self._tops

    @property
    def complete(self) -> bool:
        """The turn's trace looks whole: a new top-level span came, and every parent a span
        names has come too (children end, and are exported, before their parents)."""
        return self._tops > self._tops_seen and not self._missing

    async def settle(self, grace: float) -> None:
        """Wait until the turn's trace is ``complete``, ``grace`` seconds at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while not self.complete and (remaining := deadline - loop.time()) > 0:
            self._waiter = waiter = asyncio.Event()
            try:
                await asyncio.wait_for(waiter.wait(), remaining)
            except TimeoutError:
                break
            finally:
                self._waiter = None

    def _arrived(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
        if self.listener is not None:
            self.listener()

    def _arrived_elsewhere(self) -> None:
        """Spans came from any thread (this process's, even the loop's own in the middle of the
        agent's code): the listener is told from the loop, once that code waits."""
        if self.listener is not None and self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the case is long over
                self.loop.call_soon_threadsafe(self._arrived)


class Router:
    """The run's open cases by trace id, and what became of every span it was given."""

    def __init__(self) -> None:
        self.cases: dict[int, CaseTrace] = {}
        self.held = 0  # characters held by the open cases together
        self.spans = 0  # spans kept as some case's
        self.unmatched = 0  # spans of no open case
        self.dropped = 0  # spans of an open case beyond the limits
        self.rejected = 0  # OTLP bodies refused as malformed (400) or too large (413)
        self._lock = threading.Lock()  # in-process spans end in the agent's threads

    def open(self, trace_id: int, root_id: int) -> CaseTrace:
        case = self.cases[trace_id] = CaseTrace(trace_id, root_id)
        return case

    def close(self, case: CaseTrace) -> None:
        """The case is over: later spans of its trace are unmatched; its memory is released
        from the run's budget (its kept spans go with its record)."""
        with self._lock:
            if self.cases.pop(case.trace_id, None) is not None:
                self.held -= case.chars

    def deliver(self, spans: Iterable[Span], notify: bool = True) -> int:
        """Give each span to its case; the number dropped for the limits. ``notify`` (on the
        event loop's thread) wakes a case waiting for its spans; else (maybe another thread)
        its listener is told from the loop."""
        dropped = 0
        woken: dict[int, CaseTrace] = {}
        with self._lock:
            for span in spans:
                case = self.cases.get(span.trace_id)
                if case is None:
                    self.unmatched += 1
                    continue
                if (
                    len(case.spans) >= MAX_CASE_SPANS
                    or case.chars + span.size > MAX_CASE_CHARS
                    or self.held + span.size > MAX_HELD_CHARS
                ):
                    case.dropped += 1
                    dropped += 1
                    continue
                case._add(span)
                self.held += span.size
                self.spans += 1
                woken[case.trace_id] = case
            self.dropped += dropped
        for case in woken.values():
            if notify:
                case._arrived()
            else:
                case._arrived_elsewhere()
        return dropped

    def counts(self) -> dict[str, int]:
        """The run summary's ``traces``: spans kept, unmatched and dropped, OTLP bodies rejected."""
        return {"spans": self.spans, "unmatched": self.unmatched, "dropped": self.dropped, "rejected": self.rejected}

    def add(self, counts: dict[str, int]) -> None:
        """Count ``counts`` (another process's ``counts()``: an executor's worker's) with this run's."""
        with self._lock:
            for name in ("spans", "unmatched", "dropped", "rejected"):
                setattr(self, name, getattr(self, name) + int(counts.get(name, 0)))
