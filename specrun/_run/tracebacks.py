"""The traceback of what the user's code raised (an agent, a hook), for its case's result.

A result says ``agent error: ValueError: bad input``; its ``traceback`` says where. It starts at
the user's first frame: specrun's frames above it (the runner, the target, the worker thread)
and the standard library's are left out, as they say nothing about the agent. It is masked
like everything else specrun writes (before it is cut, so no cut can leave half a secret) and
bounded: a long one keeps its start (the agent's entry) and its end (where it raised).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sysconfig
import traceback
from types import FrameType, TracebackType

from .._core.errors import SpecrunError, TargetError
from .._core.redact import redact

MAX_CHARS = 10_000
HEAD = 2_000  # of MAX_CHARS, kept from the start; the rest from the end
_STDLIB = tuple({sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")})
_INSTALLED = ("site-packages", "dist-packages")  # may live under the stdlib folder: never ours


def user_traceback(exc: BaseException | None) -> str | None:
    """The traceback of the user's exception behind ``exc``, or None when there is none: a
    ``TargetError`` carries the agent's exception as its cause; any other ``SpecrunError`` is
    specrun's own message, with no user code behind it."""
    while isinstance(exc, TargetError):
        exc = exc.__cause__
    if exc is None or isinstance(exc, SpecrunError):
        return None
    try:
        found = traceback.TracebackException(type(exc), exc, _from_user(exc.__traceback__), compact=True)
        _relative_files(found, os.getcwd())
        return _bounded(redact("".join(found.format())))
    except Exception:  # evidence on top of the error message: never the reason a case or the run fails
        return None


def _relative_files(found: traceback.TracebackException, cwd: str) -> None:
    """Files under the working folder named relative to it, as pytest names them: shorter, no
    home folder in a report, and the same in a Ray worker's copy of the project as here."""
    seen: set[int] = set()
    todo: list[traceback.TracebackException | None] = [found]
    while todo:
        one = todo.pop()
        if one is None or id(one) in seen:
            continue
        seen.add(id(one))
        for frame in one.stack:
            if frame.filename.startswith(cwd + os.sep):
                frame.filename = frame.filename[len(cwd) + 1 :]
        todo += [one.__cause__, one.__context__]


@functools.cache
def _plugin_packages() -> tuple[str, ...]:
    """specrun's and every installed plugin's top-level packages (the ``specrun`` entry points):
    a plugin's frames (a target's, the worker thread's) are not the user's either."""
    found = {ep.value.split(".")[0].split(":")[0] for ep in importlib.metadata.entry_points(group="specrun")}
    return tuple(sorted({"specrun", *found}))


def _ours(frame: FrameType) -> bool:
    name = str(frame.f_globals.get("__name__") or "")
    if name.split(".")[0] in _plugin_packages():
        return True
    file = frame.f_code.co_filename
    return file.startswith(_STDLIB) and not any(part in file for part in _INSTALLED)


def _from_user(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from its first frame that is not specrun's or the standard library's (all of it
    when every frame is: then specrun's frames are the story)."""
    first = tb
    while first is not None and _ours(first.tb_frame):
        first = first.tb_next
    return first or tb


def _bounded(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    cut = len(text) - MAX_CHARS
    return f"{text[:HEAD]}\n... ({cut} characters left out) ...\n{text[-(MAX_CHARS - HEAD) :]}"
