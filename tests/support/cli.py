"""Run the ``specrun`` CLI inside the test process, as a subprocess would run it.

Starting ``specrun`` as a process costs its imports every time (litellm alone takes seconds);
``run_cli`` calls the CLI's entry point (``specrun.cli.main.main``) instead, with the working
folder, environment and standard streams of that one call, and puts back afterwards what a run
changes in its process: the folder, ``os.environ``, ``sys.path``, the agent modules it imported
from the project, the garbage collector's tuning, the SIGINT/SIGTERM handlers and the secrets
registered for redaction. Tests of process-level behaviour (signals, closed stdout, process
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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

SPECRUN = str(Path(sys.executable).with_name("specrun"))


@contextlib.contextmanager
def _process_state(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    from specrun import redact

    folder, environ, path = os.getcwd(), dict(os.environ), list(sys.path)
    modules = set(sys.modules)
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
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
        added = [Path(p).resolve() for p in sys.path if p not in path]
        sys.path[:] = path
        for name in set(sys.modules) - modules:  # the project's agents and hooks: a new run imports its own
            file = getattr(sys.modules[name], "__file__", None) or ""
            if any(Path(file).resolve().is_relative_to(root) for root in added):
                del sys.modules[name]
        if gc.get_freeze_count() > frozen:
            gc.unfreeze()
        gc.set_threshold(*threshold)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        registered = getattr(redact, "_registered", None)
        if registered is not None:
            registered.clear()
            registered.update(secrets)


def run_cli(
    args: Sequence[str], cwd: Path | str, env: Mapping[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``specrun ARGS`` run in ``cwd`` with environment ``env`` (default: this process's), in
    process; its exit code and what it printed, as ``subprocess.run(..., text=True)`` gives them."""
    from specrun.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with (
        _process_state(Path(cwd), dict(os.environ) if env is None else env),
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
