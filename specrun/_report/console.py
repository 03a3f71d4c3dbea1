"""The console layout of the seeds: header, one line per case, failure details, summary, banner.

Agent text is always printed as ``rich.text.Text`` (never parsed as markup), so an agent that
answers ``[red]`` or ANSI escapes cannot restyle the console. In parallel runs each case is
printed whole when it completes; on a terminal a live progress line sits below. What is
printed of a result is read from its record, as the stream has it.

The console writes to its own copy of stdout, so a Python agent that closes or replaces
``sys.stdout`` cannot silence it; when stdout's reader goes away (``specrun ... | head``) it
stops printing and the run goes on, its stream, reports and exit code unchanged.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from .. import hookimpl
from .._core.data import format_duration, to_json
from .._core.redact import redact
from .._core.results import Result, RunInfo
from .display import terminal_line, terminal_text
from .rates import disagreed, interval_text, pair_lines, summary_rate_text
from .stability import verdict

if TYPE_CHECKING:
    from rich.console import Console

RULE = "═" * 63
THIN = "─" * 63
STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim"}
MATRIX_ROWS = 40  # cases shown in the console's agent x case matrix; the reports have all
MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "-"}
BANNERS = {
    "passed": ("✨ {} ✨", "bold green"),
    "failed": ("❌ {}", "bold red"),
    "interrupted": ("⚠ {}", "bold yellow"),
    "incomplete": ("⚠ {}", "bold yellow"),
}


def clean(text: Any, limit: int | None = None) -> str:
    """Agent text made safe for a terminal: secrets masked, control codes removed, optionally
    cut to one line of ``limit`` characters."""
    value = redact(str(text))
    return terminal_text(value) if limit is None else terminal_line(value, limit, "...")


def own_stdout(stderr: bool = False) -> IO[str] | None:
    """A text file on a duplicate of stdout's (``stderr``: stderr's) descriptor: the stream
    itself when it has no descriptor (a test's capture), None when there is none at all."""
    out = sys.stderr if stderr else sys.stdout
    try:
        fd = os.dup(out.fileno())
    except (AttributeError, OSError, ValueError):  # no stdout (``>&-``), or not a real file
        return out
    out.flush()  # what was printed before keeps its place
    return os.fdopen(fd, "w", 1 if out.line_buffering else -1, encoding=out.encoding, errors="replace")


class PlainConsole:
    """The console of a pipe or a log (no terminal, no colours: rich would print the same text),
    so that a run writing to one never imports rich (about 20 ms of each start)."""

    is_terminal = False
    color_system = None

    def __init__(self, file: IO[str]):
        self.file = file


def surely_plain(file: IO[str] | None) -> bool:
    """rich would find ``file`` no terminal: not a tty, and none of what makes rich think
    otherwise (``FORCE_COLOR``, ``TTY_COMPATIBLE``, Jupyter, a file rich itself proxies)."""
    if file is None or hasattr(file, "rich_proxied_file") or hasattr(builtins, "get_ipython"):
        return False
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    try:
        return file.isatty() is False
    except (AttributeError, OSError, ValueError):
        return False


def reader_gone(out: IO[str], original: IO[str] | None = None) -> None:
    """stdout's (or ``original``'s) reader went away: send what is still buffered for ``out``
    and that stream to /dev/null, so that it cannot fail the exit either (as pytest does)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for file in (out, original or sys.__stdout__):
        if file is not None:
            with contextlib.suppress(OSError, ValueError):  # not a real file: nothing to redirect
                os.dup2(devnull, file.fileno())
    os.close(devnull)


class ConsoleReport:
    """Prints the run as it goes: a plugin of the run, on the lifecycle hooks (after every other).
    ``tracebacks``: an agent's exception with its traceback; ``stderr``: on stderr, as direct
    mode does to keep stdout for the answer."""

    def __init__(
        self,
        console: Console | PlainConsole | None = None,
        verbose: bool = False,
        quiet: bool = False,
        tracebacks: bool = False,
        stderr: bool = False,
    ):
        self._original = sys.__stderr__ if stderr else sys.__stdout__
        if console is None:
            file = own_stdout(stderr)
            if surely_plain(file):
                assert file is not None
                console = PlainConsole(file)
            else:
                from rich.console import Console

                console = Console(file=file, highlight=False, soft_wrap=False)
        self.console: Console | PlainConsole = console
        self.verbose = verbose
        self.quiet = quiet
        self.tracebacks = tracebacks
        self.done = 0
        self.total = 0
        self._live: Any = None
        self._plain = not self.console.is_terminal and self.console.color_system is None
        self._gone = False
        self.output_paths: list[str] = []
        self._cells: dict[tuple[str, str], dict[str, list[int]]] | None = None  # the agent x case matrix
        self.flaky: dict[str, None] = {}  # the cases flaky in the run history (id, @agent in a matrix), in order
        self.cached = 0  # results whose model calls were all answered from the cache
        self.uncertain: dict[str, None] = {}  # the cases in which a judge's samples disagreed, in order
        self.info: RunInfo | None = None

    def _line(self, *parts: tuple[str, str] | str) -> None:
        if self._gone:
            return
        try:
            if self._plain:  # a log or a pipe: the same text without rich's layout pass (~0.5 ms a line)
                self.console.file.write("".join(p if isinstance(p, str) else p[0] for p in parts) + "\n")
            else:
                from rich.text import Text

                assert not isinstance(self.console, PlainConsole)  # it is always plain
                self.console.print(Text.assemble(*parts), markup=False, highlight=False)
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """stdout's reader went away: print nothing more (see ``reader_gone``)."""
        self._gone = True
        reader_gone(self.console.file, self._original)

    @hookimpl(trylast=True)
    def run_started(self, info: RunInfo) -> None:
        self.info = info
        self.total = info.total_cases * info.runs
        self._cells = {} if len(info.agents) > 1 else None
        modes = (["Dynamic Mode"] if info.mode == "dynamic" else []) + (
            [f"Parallel: {info.parallel}"] if info.parallel > 1 else []
        )
        title = "Agent Test" + (f" ({', '.join(modes)})" if modes else "")
        self._line(RULE)
        self._line((f" {title}", "bold"))
        self._line(RULE)
        rows = [
            ("Agent", info.agent_id),
            ("Connector", info.connector),
            ("Input", f"{', '.join(info.inputs)} ({info.total_cases} test cases)"),
            ("Runs", str(info.runs) if info.runs > 1 else None),
            ("Shard", info.shard and f"{info.shard['index']}/{info.shard['count']} of {info.shard['selected']} cases"),
            ("Simulator", info.simulator),
            ("Timeout", format_duration(info.timeout)),
            ("Parallel", f"{info.parallel} concurrent" if info.parallel > 1 else None),
        ]
        for label, value in rows:
            if value:
                self._line(("ℹ ", "cyan"), f"{label}: ", clean(value))
        self._line(THIN)
        self._line(" Running Tests" + (f" ({info.parallel} parallel)" if info.parallel > 1 else ""))
        self._line(THIN)
        if self.console.is_terminal and not self.quiet:
            from rich.live import Live
            from rich.text import Text

            assert not isinstance(self.console, PlainConsole)  # never a terminal
            self._live = Live(Text(""), console=self.console, transient=True, refresh_per_second=8)
            self._live.start()

    @hookimpl(trylast=True)
    def case_finished(self, result: Result) -> None:
        self.done += 1
        if self._cells is not None and result.agent is not None and result.status != "skipped":
            cell = self._cells.setdefault((result.case.location.file, result.case.id), {})
            counts = cell.setdefault(result.agent, [0, 0])
            counts[0] += result.status == "passed"
            counts[1] += 1
        if result.flaky:  # against this agent: another agent's flaky case is not this one's
            agent = f" @{result.agent}" if self._cells is not None and result.agent else ""
            self.flaky[result.case.id + agent] = None
        self.cached += result.cached
        uncertain = disagreed(result.record())
        if uncertain:
            agent = f" @{result.agent}" if self._cells is not None and result.agent else ""
            self.uncertain[result.case.id + agent] = None
        if not self.quiet or result.status != "passed":
            self._print_case(result, uncertain)
        parallel = self.info.parallel if self.info else 1
        running = min(parallel, self.total - self.done)  # the runner keeps every worker busy
        live = self._live is not None and not self._gone
        if not live and (parallel <= 1 or not running or self.done % parallel or self.quiet):
            return  # nothing to show for this case: the progress line is not even made
        progress = f"[Progress: {self.done}/{self.total} completed" + (f", {running} running...]" if running else "]")
        if live:
            from rich.text import Text

            assert self._live is not None
            self._live.update(Text(progress, style="dim"))
        else:
            self._line((progress, "dim"))  # V2's running count, also in a log: once per batch of cases

    def _print_case(self, result: Result, uncertain: bool = False) -> None:
        case, record = result.case, result.record()
        run = f" run {result.run}" if result.run > 1 else ""
        if self._cells is not None and result.agent:
            run = f" @{clean(result.agent, 30)}{run}"
        status = result.status.upper()
        duration = format_duration(result.duration_ms / 1000)
        self._line(
            "► ",
            (f"[{clean(case.id)}]", "bold"),
            f"{run} ",
            clean(case.title or case.id, 48),  # a dynamic case without a name has no input to show
            " ",
            (status, STYLE[result.status]),
            f" ({duration})",
            (" [flaky]", "yellow") if result.flaky else "",  # its verdict has changed over recent runs
            (" [cached]", "dim") if result.cached else "",  # the judges' replies cost nothing this time
            (" [uncertain]", "yellow") if uncertain else "",  # a judge's samples disagreed
        )
        if record.get("turns") is not None:
            self._print_turns(record)
        if record["error"]:  # labelled with the status: a skip reason is not an error
            self._line("    ", (f"{result.status}: ", STYLE[result.status]), clean(record["error"], 300))
        if self.tracebacks and record.get("traceback"):
            for line in clean(record["traceback"]).rstrip("\n").split("\n"):
                self._line("      ", (line, "dim"))
        for warning in record.get("warnings") or []:
            self._line("    ", ("warning: ", "yellow"), clean(warning, 300))
        for a in record["assertions"]:
            if not isinstance(a, dict) or (a.get("status") == "passed" and not self.verbose):
                continue
            status = str(a.get("status"))
            self._line(
                "    ",
                (f"{MARKS.get(status, '?')} {a.get('type')}", STYLE.get(status, "")),
                ": ",
                clean(a.get("message") or status, 300),
            )
            if status == "failed" and a.get("expected") is not None:
                self._line("      expected: ", clean(a["expected"], 200))
                self._line("      actual:   ", clean(a.get("actual"), 200))
        if self.verbose and result.response is not None:
            output = record["output"]
            text = output if isinstance(output, str) else "" if output is None else to_json(output)
            self._line("    output: ", clean(text, 500))

    def _print_turns(self, record: dict[str, Any]) -> None:
        turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
        checkpoints = [c for c in record.get("checkpoints") or [] if isinstance(c, dict)]
        by_turn: dict[int, list[str]] = {}
        for c in checkpoints:
            if c.get("reached_at_turn"):
                by_turn.setdefault(c["reached_at_turn"], []).append(c["id"])
        for i, turn in enumerate(turns):
            last = i == len(turns) - 1
            branch, pipe = ("└─", "   ") if last else ("├─", "│  ")
            files = [str(name) for name in turn.get("attachments") or []]
            self._line(
                f"  {branch} Turn {turn['turn']}: ",
                f'"{clean(turn.get("input", ""), 40)}"',
                f" + [{clean(', '.join(files), 60)}]" if files else "",
                " → ",
                f'"{clean(turn.get("output", ""), 40)}"',
            )
            tools = [str(c.get("name")) for c in turn.get("tool_calls") or [] if isinstance(c, dict)]
            called = f" (tool: {clean(', '.join(tools), 60)})" if tools else ""
            for cp in by_turn.get(turn["turn"], []):
                self._line(f"  {pipe}└─ ", ("✓ checkpoint: ", "green"), clean(cp), called)
            if tools and not by_turn.get(turn["turn"]):
                self._line(f"  {pipe}└─ ", ("tool: ", "cyan"), clean(", ".join(tools), 60))
        reached = sum(1 for c in checkpoints if c.get("passed"))
        count = f"{len(turns)} turn{'s' * (len(turns) != 1)}"
        self._line(f"     {count}, {reached}/{len(checkpoints)} checkpoints")

    def _duration(self, summary: dict[str, Any]) -> str:
        """The run's wall time; in parallel, with V2's effective time per case run."""
        seconds = summary.get("duration_ms", 0) / 1000
        text = format_duration(seconds)
        parallel = self.info.parallel if self.info else 1
        runs = summary.get("total_runs") or 0
        if parallel > 1 and runs:
            text += f" (effective: {format_duration(seconds / runs)}/test with {parallel} parallel)"
        return text

    def _print_matrix(self, agents: dict[str, dict[str, Any]]) -> None:
        """The agent x case matrix (✓ every run passed; else passed/runs), then each agent's totals."""
        assert self._cells is not None
        names = list(agents)
        width = max(8, *(min(len(clean(n)), 20) for n in names))
        self._line(THIN)
        self._line(" Agents")
        self._line(THIN)
        self._line(f"  {'case':<24}", *(f" {clean(n, 20):>{width}}" for n in names))
        for shown, ((_, case_id), cells) in enumerate(self._cells.items()):
            if shown == MATRIX_ROWS:
                self._line(f"  ... {len(self._cells) - shown} more cases in the reports")
                break
            marks = []
            for n in names:
                ok, runs = cells.get(n, (0, 0))
                text = "-" if not runs else "✓" if ok == runs else f"✗ {ok}/{runs}" if runs > 1 else "✗"
                marks.append((f" {text:>{width}}", "green" if runs and ok == runs else "red" if runs else "dim"))
            self._line(f"  {clean(case_id, 24):<24}", *marks)
        rates = ["-" if agents[n]["pass_rate"] is None else f"{agents[n]['pass_rate']}%" for n in names]
        ms = [agents[n]["avg_duration_ms"] for n in names]
        latency = ["-" if v is None else format_duration(v / 1000) for v in ms]
        costs = ["-" if agents[n]["cost"] is None else f"${agents[n]['cost']:.4f}" for n in names]
        ci = [interval_text(agents[n].get("pass_rate_ci"), False) or "-" for n in names]
        for label, values in (("pass rate", rates), ("95% CI", ci), ("latency", latency), ("cost", costs)):
            self._line(f"  {label:<24}", *(f" {v:>{width}}" for v in values))

    @hookimpl(trylast=True)
    def run_finished(self, summary: dict[str, Any]) -> None:
        if self._live is not None and not self._gone:
            self._live.stop()
        self._line(THIN)
        self._line(" Summary")
        self._line(THIN)
        info = self.info
        rows: list[tuple[str, Any]] = [
            ("Agent", info.agent_id if info else None),
            ("Connector", info.connector if info else None),
            ("Simulator", info.simulator if info else None),
            ("Total", summary.get("total")),
            ("Passed", summary.get("passed")),
            ("Failed", summary.get("failed")),
            ("Errors", summary.get("errors")),
            ("Skipped", summary.get("skipped") or None),
            ("Not run", summary.get("not_run") or None),
            ("Pass Rate", f"{summary['overall_pass_rate']}%" if summary.get("overall_pass_rate") is not None else None),
            ("Duration", self._duration(summary)),
        ]
        usage = summary.get("usage")
        if usage:
            rows.append(("Tokens", usage.get("total_tokens")))
            if usage.get("cost") is not None:
                rows.append(("Cost", f"${usage['cost']:.6f}"))
        if summary.get("runs_per_case", 1) > 1:
            total = f"{summary.get('total')} cases x {summary['runs_per_case']} runs"
            rate = summary_rate_text(summary)  # with the interval of the rate of runs
            rows = [(k, total if k == "Total" else rate if k == "Pass Rate" and rate != "-" else v) for k, v in rows]
            failing = summary.get("consistently_failing_cases")  # not unstable: 0 of N is consistent
            rows += [
                ("Stable", summary.get("stable_cases")),
                ("Unstable", summary.get("unstable_cases")),
                ("Failing", failing and f"{failing} consistently (no run passed)"),
                ("pass^k", f"{summary.get('pass_hat_k')}%"),
                ("pass@k", f"{summary.get('pass_at_k')}%"),
            ]
        for label, cases in (("Flaky", self.flaky), ("Uncertain", self.uncertain)):  # uncertain: samples disagreed
            if cases:
                shown = ", ".join(clean(case, 60) for case in list(cases)[:10])
                rows.append((label, shown + (f" (+{len(cases) - 10})" if len(cases) > 10 else "")))
        if summary.get("traces"):
            rows.append(("Traces", _traces(summary["traces"])))
        if self.cached:
            rows.append(("Cached", f"{self.cached} result{'s' * (self.cached != 1)} judged from the model cache"))
        for path in self.output_paths:
            rows.append(("Output", path))
        for label, value in rows:
            if value is not None:
                self._line(f"  {label + ':':<11}", clean(value))
        if self._cells is not None and summary.get("agents") and any(len(c) > 1 for c in self._cells.values()):
            self._print_matrix(summary["agents"])
        pairs = pair_lines(summary.get("pairwise"))  # the pairwise judge's tally, per pair of agents
        if pairs:
            self._line(THIN)
            self._line(" Pairwise (a win counts when both orders agree)")
            self._line(THIN)
            for line in pairs:
                self._line("  ", clean(line))
        self._line(RULE)
        outcome, label = verdict(summary)  # the exit code is read from the same verdict
        text, style = BANNERS[outcome]
        self._line(("  " + text.format(label), style))
        self._line(RULE)
        try:
            self.console.file.flush()
        except BrokenPipeError:
            self._reader_gone()


def _traces(counts: dict[str, Any]) -> str:
    """The run's spans (``traces: otel``), and what the receiver could not use, when any."""
    said = [f"{counts.get('spans', 0)} spans"]
    for key, what in (
        ("rejected", "OTLP requests rejected (malformed or too large)"),
        ("unmatched", "spans of no running case (late, or not of a case's trace)"),
        ("dropped", "spans dropped (over the per-case or per-run limits)"),
    ):
        if counts.get(key):
            said.append(f"{counts[key]} {what}")
    return "; ".join(said)
