"""Regular expressions that a suite or an agent file supplies, compiled for RE2 (google-re2).

Python's ``re`` backtracks: ``(a+)+$`` against a 100 KB reply runs for longer than the age of
the universe, in C code that holds the GIL, so the event loop, the case timeout and SIGINT all
wait for it. RE2 matches in time linear in the text, whatever the pattern. The constructs it
cannot run that way (backreferences, lookaround, atomic groups, possessive repeats) do not
compile, so they are reported at validation instead of running slowly. Every pattern specrun
takes from a user (``regex`` assertions, ``--run``, the ``process`` target's ``prompt``) is
compiled here.
"""

from __future__ import annotations

import functools
import re
from typing import Protocol

FLAGS = ("i", "m", "s", "a")
"""Letter flags: ignore case, multiline ``^``/``$``, dot matches newline, ASCII (RE2's
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only already)."""


class PatternError(ValueError):
    """A pattern that cannot be compiled; the message says why, quoting the pattern. ``flags`` is
    True when the flags were wrong (a letter that is not one of ``FLAGS``), not the pattern."""

    flags = False


class FlagError(PatternError):
    """A flag letter that is not one of ``FLAGS``."""

    flags = True


class Match(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...
    def group(self, index: int = 0) -> str: ...
    def groups(self) -> tuple[str | None, ...]: ...


class Pattern(Protocol):
    """A compiled pattern: ``search(text, pos)`` as Python's ``re.Pattern.search``."""

    @property
    def groups(self) -> int: ...
    def search(self, text: str, pos: int | None = None) -> Match | None: ...


@functools.lru_cache(maxsize=128)  # a suite repeats its patterns; compiled ones are immutable
def compile_pattern(pattern: str, flags: str = "") -> Pattern:
    """``pattern`` with letter ``flags`` (see ``FLAGS``), compiled for linear-time matching.

    Raises ``PatternError`` (``flags`` true for an unknown flag) for a pattern that is invalid
    or uses what RE2 cannot match in linear time.
    """
    import re2

    if "x" in flags:
        raise FlagError("regex flag 'x' (verbose) is not supported: RE2 has no verbose mode")
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise FlagError(f"unknown regex flag {''.join(unknown)!r} (allowed: {', '.join(FLAGS)})")
    options = re2.Options()
    options.log_errors = False  # the error is ours to report, not absl's to print on stderr
    options.case_sensitive = "i" not in flags
    options.dot_nl = "s" in flags
    source = f"(?m){pattern}" if "m" in flags else pattern  # RE2 has no option for multiline
    try:
        return re2.compile(source, options)
    except re2.error as exc:
        raise PatternError(_explain(pattern, source, exc)) from None


# What RE2's reason means when Python's re takes the pattern.
_UNSUPPORTED = (
    (re.compile(r"escape sequence: \\[1-9gk]|operator: \(\?P$"), "backreferences are not supported"),
    (re.compile(r"operator: \(\?[=!]"), "lookahead is not supported"),
    (re.compile(r"operator: \(\?<[=!]"), "lookbehind is not supported"),
    (re.compile(r"operator: \(\?>"), "atomic groups are not supported"),
    (re.compile(r"operator: \(\?\("), "conditionals are not supported"),
    (re.compile(r"repetition operator: .*\+$"), "possessive repeats are not supported"),
    (re.compile(r"repetition size"), "a repeat count is at most 1000"),
    (re.compile(r"escape sequence: \\Z$"), "write \\z for the end of the text"),
)


def _explain(pattern: str, source: str, exc: Exception) -> str:
    raw = exc.args[0] if exc.args else ""
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    reason = reason.removesuffix(f": {source}")  # "missing ): <the whole pattern>"
    message = f"invalid regex {pattern!r}: {reason}"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return message  # a plain mistake: Python would reject it too
    why = next((note for found, note in _UNSUPPORTED if found.search(reason)), "not RE2 syntax")
    return f"{message} ({why}: regexes run on RE2, which matches in linear time)"
