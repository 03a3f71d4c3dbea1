"""The console layout of the seeds: header, one line per case, failure details, summary, banner.

Agent text is always printed as ``rich.text.Text`` (never parsed as markup), so an agent that
answers ``[red]`` or ANSI escapes cannot restyle the console. In parallel runs each case is
printed whole when it completes; on a terminal a live progress line sits below.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

from .model import Result, RunInfo, format_duration
from .redact import redact

RULE = "═" * 63
THIN = "─" * 63
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\x1b\[[0-9;?]*[A-Za-z]")
STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim"}


def clean(text: Any, limit: int | None = None) -> str:
    """Agent text made safe for one terminal line: control codes removed, optionally cut."""
    value = _CONTROL.sub("", redact(str(text)))
    if limit is not None:
        value = " ".join(value.split())
        if len(value) > limit:
            value = value[: limit - 3] + "..."
    return value


class ConsoleReport:
    """Prints the run as it goes; an ``Observer`` of the runner."""

    def __init__(self, console: Console | None = None, verbose: bool = False, quiet: bool = False):
        self.console = console or Console(highlight=False, soft_wrap=False)
        self.verbose = verbose
        self.quiet = quiet
        self.done = 0
        self.total = 0
        self._live: Any = None
        self._plain = not self.console.is_terminal and self.console.color_system is None
        self.output_paths: list[str] = []

    def _line(self, *parts: tuple[str, str] | str) -> None:
        if self._plain:  # a log or a pipe: the same text without rich's layout pass (~0.5 ms a line)
            self.console.file.write("".join(p if isinstance(p, str) else p[0] for p in parts) + "\n")
            return
        self.console.print(Text.assemble(*parts), markup=False, highlight=False)

    def start(self, info: RunInfo) -> None:
        self.total = info.total_cases * info.runs
        title = "Agent Test" + (f" (Parallel: {info.parallel})" if info.parallel > 1 else "")
        self._line(RULE)
        self._line((f" {title}", "bold"))
        self._line(RULE)
        rows = [
            ("Agent", info.agent_id),
            ("Connector", info.connector),
            ("Input", f"{', '.join(info.inputs)} ({info.total_cases} test cases)"),
            ("Runs", str(info.runs) if info.runs > 1 else None),
            ("Simulator", info.simulator),
            ("Timeout", format_duration(info.timeout)),
        ]
        for label, value in rows:
            if value:
                self._line(("ℹ ", "cyan"), f"{label}: ", clean(value))
        self._line(THIN)
        self._line(" Running Tests" + (f" ({info.parallel} parallel)" if info.parallel > 1 else ""))
        self._line(THIN)
        if self.console.is_terminal and not self.quiet:
            from rich.live import Live

            self._live = Live(Text(""), console=self.console, transient=True, refresh_per_second=8)
            self._live.start()

    def case_done(self, result: Result) -> None:
        self.done += 1
        if not self.quiet or result.status != "passed":
            self._print_case(result)
        if self._live is not None:
            self._live.update(Text(f"[Progress: {self.done}/{self.total} completed]", style="dim"))

    def _print_case(self, result: Result) -> None:
        case = result.case
        run = f" run {result.run}" if result.run > 1 else ""
        status = result.status.upper()
        duration = format_duration(result.duration_ms / 1000)
        self._line(
            "► ",
            (f"[{clean(case.id)}]", "bold"),
            f"{run} ",
            clean(case.title, 48),
            " ",
            (status, STYLE[result.status]),
            f" ({duration})",
        )
        if result.turns is not None:
            self._print_turns(result)
        if result.error:
            self._line("    ", ("error: ", STYLE.get(result.status, "red")), clean(result.error, 300))
        for warning in result.response.warnings if result.response else []:
            self._line("    ", ("warning: ", "yellow"), clean(warning, 300))
        for a in result.assertions:
            if a.status != "passed" or self.verbose:
                mark = {"passed": "✓", "failed": "✗", "error": "!"}.get(a.status, "?")
                self._line(
                    "    ", (f"{mark} {a.type}", STYLE.get(a.status, "")), ": ", clean(a.message or a.status, 300)
                )
                if a.status == "failed" and a.expected is not None:
                    self._line("      expected: ", clean(a.expected, 200))
                    self._line("      actual:   ", clean(a.actual, 200))
        if self.verbose and result.response is not None:
            self._line("    output: ", clean(result.response.text, 500))

    def _print_turns(self, result: Result) -> None:
        turns = result.turns or []
        by_turn: dict[int, list[str]] = {}
        for c in result.checkpoints or []:
            if c.get("reached_at_turn"):
                by_turn.setdefault(c["reached_at_turn"], []).append(c["id"])
        for i, turn in enumerate(turns):
            last = i == len(turns) - 1
            branch, pipe = ("└─", "   ") if last else ("├─", "│  ")
            self._line(
                f"  {branch} Turn {turn['turn']}: ",
                f'"{clean(turn.get("input", ""), 40)}"',
                " → ",
                f'"{clean(turn.get("output", ""), 40)}"',
            )
            for cp in by_turn.get(turn["turn"], []):
                self._line(f"  {pipe}└─ ", ("✓ checkpoint: ", "green"), clean(cp))
        reached = sum(1 for c in result.checkpoints or [] if c.get("passed"))
        self._line(f"     {len(turns)} turns, {reached}/{len(result.checkpoints or [])} checkpoints")

    def finish(self, summary: dict[str, Any]) -> None:
        if self._live is not None:
            self._live.stop()
        self._line(THIN)
        self._line(" Summary")
        self._line(THIN)
        rows = [
            ("Total", summary.get("total")),
            ("Passed", summary.get("passed")),
            ("Failed", summary.get("failed")),
            ("Errors", summary.get("errors")),
            ("Skipped", summary.get("skipped") or None),
            ("Not run", summary.get("not_run") or None),
            ("Pass Rate", f"{summary['overall_pass_rate']}%" if summary.get("overall_pass_rate") is not None else None),
            ("Duration", format_duration(summary.get("duration_ms", 0) / 1000)),
        ]
        usage = summary.get("usage")
        if usage:
            rows.append(("Tokens", usage.get("total_tokens")))
            if usage.get("cost") is not None:
                rows.append(("Cost", f"${usage['cost']:.6f}"))
        if summary.get("runs_per_case", 1) > 1:
            rows[0] = ("Total", f"{summary.get('total')} cases x {summary['runs_per_case']} runs")
            rows += [
                ("Stable", summary.get("stable_cases")),
                ("Unstable", summary.get("unstable_cases")),
                ("pass^k", f"{summary.get('pass_hat_k')}%"),
                ("pass@k", f"{summary.get('pass_at_k')}%"),
            ]
        for path in self.output_paths:
            rows.append(("Output", path))
        for label, value in rows:
            if value is not None:
                self._line(f"  {label + ':':<11}", clean(value))
        self._line(RULE)
        bad = (summary.get("failed") or 0) + (summary.get("errors") or 0)
        if summary.get("interrupted"):
            self._line(("  ⚠ INTERRUPTED: partial results written", "bold yellow"))
        elif bad:
            self._line((f"  ❌ {bad} TEST{'S' if bad > 1 else ''} FAILED", "bold red"))
        else:
            self._line(("  ✨ ALL TESTS PASSED ✨", "bold green"))
        self._line(RULE)
