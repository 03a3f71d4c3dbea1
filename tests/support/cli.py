"""Run the ``specrun`` CLI inside the test process, as a subprocess would run it.

Starting ``specrun`` as a process costs its imports every time (litellm alone takes seconds);
``run_cli`` calls the CLI's entry point (``specrun.cli.main.main``) instead, with the working
folder, environment and standard streams of that one call, and puts back afterwards what a run
changes in its process: the folder, ``os.environ``, ``sys.path``, the agent modules of test
projects (hidden during the call too), the garbage collector's tuning (it freezes nothing), the SIGINT/SIGTERM
handlers and the secrets registered for redaction. Tests of process-level behaviour (signals, closed stdout, process
trees, the installed entry point) keep starting a real process.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TypeVar

SPECRUN = str(Path(sys.executable).with_name("specrun"))


def _folders(*paths: str) -> tuple[str, ...]:
    return tuple(os.path.join(f, "") for p in paths for f in {os.path.abspath(p), os.path.realpath(p)})


# Never project modules, even when a checkout lives under the temp folder (as CI's clone may):
# specrun, its plugins and schemas, the tests and every installed package. (The example
# projects under suites/ and examples/ are projects like any other.)
_REPO = Path(__file__).resolve().parents[2]
_OURS = _folders(*(str(_REPO / p) for p in ("specrun", "plugins", "schemas", "tests")), sys.prefix, sys.base_prefix)


# The modules already found to be nobody's project (ours, installed, built in): once litellm is
# loaded sys.modules holds thousands, and every call would look at each of them twice again. A
# plain dict: a weak one's lookups, 20 million over the session, took more than a second.
_NEVER: dict[str, ModuleType] = {}


def _project_modules(folders: tuple[str, ...]) -> list[str]:
    """Modules imported from ``folders``: the agents and hooks of projects, which a new
    ``specrun`` process has not imported (two projects may each have a ``bot.py``)."""
    found, never = [], _NEVER
    for name, module in sys.modules.copy().items():  # one step: a thread may be importing
        if never.get(name) is module:
            continue
        file = str(getattr(module, "__file__", "") or "")
        if not file or file.startswith(_OURS):
            never[name] = module
        elif file.startswith(folders):
            found.append(name)
    return found


def _no_freeze() -> None:
    """``gc.freeze`` during an in-process run (see ``_process_state``)."""


@contextlib.contextmanager
def _process_state(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    from specrun._core import redact

    folder, environ, path = os.getcwd(), dict(os.environ), list(sys.path)
    temporary = _folders(tempfile.gettempdir())  # where tests make their projects
    hidden = {name: sys.modules.pop(name) for name in _project_modules(temporary)}
    # A run freezes what it loaded (session.py) and what is left as it exits (main.py): here
    # the test process lives on, and what froze would never be swept (nor can part of the
    # frozen objects be put back, so unfreezing would unfreeze what the tests froze: conftest.py).
    threshold, freeze = gc.get_threshold(), gc.freeze
    gc.freeze = _no_freeze
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    secrets = dict(getattr(redact, "_registered", {}))
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.chdir(folder)
        os.environ.clear()
        os.environ.update(environ)
        imported_from = _folders(*(p for p in sys.path if p not in path))
        sys.path[:] = path
        for name in _project_modules(temporary + imported_from):
            del sys.modules[name]
        sys.modules.update(hidden)
        gc.freeze = freeze
        gc.set_threshold(*threshold)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        registered = getattr(redact, "_registered", None)
        if registered is not None:
            registered.clear()
            registered.update(secrets)


def _settings(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith("SPECRUN_")}


def run_cli(
    args: Sequence[str], cwd: Path | str, env: Mapping[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``specrun ARGS`` run in ``cwd`` with environment ``env`` (default: this process's), in
    process; its exit code and what it printed, as ``subprocess.run(..., text=True)`` gives them.

    ``SPECRUN_*`` settings that differ from this process's (such as ``SPECRUN_DISABLE_PLUGINS``)
    are read once per process, so such a call starts a real ``specrun`` instead.
    """
    from specrun.cli.main import main

    environ = dict(os.environ) if env is None else dict(env)
    if _settings(environ) != _settings(os.environ):
        return subprocess.run([SPECRUN, *args], cwd=cwd, env=environ, input=stdin, capture_output=True, text=True)
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with (
        _process_state(Path(cwd), environ),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        stdin_was, sys.stdin = sys.stdin, io.StringIO(stdin)
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.stdin = stdin_was
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return subprocess.CompletedProcess(["specrun", *args], returncode, out.getvalue(), err.getvalue())


T = TypeVar("T")


def at_once(*calls: Callable[[], T]) -> list[T]:
    """What each of ``calls`` returns, each called in a thread of its own: independent
    ``specrun`` processes that a test starts and waits for, on every core instead of one by one."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]
