"""Slow setup a test only reads (mypy's verdict, a built wheel, an installed plugin), made by a
process started when collection finishes, so that it runs on the machine's second core while
the tests before it run on the first: a serial run keeps one core busy.

A test module declares a :class:`Job` for one of its fixtures (a support module, for a session
fixture that tests of several modules share); the job starts at collection's end only when a
selected test of that module uses the fixture (``pytest -k foo`` starts nothing it does not
need), else when the fixture first asks for it. Under pytest-xdist each
worker starts it on demand: early, every worker would make it. The process writes into files,
not pipes (a full pipe nobody reads yet would stall it), runs in a session of its own, and is
killed with everything it started when the test session ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

Command = Callable[[Path], Sequence[str | os.PathLike[str]]]

_jobs: list[Job] = []
# The test session the jobs are for: a test's own in-process pytest run (pytester) ends a
# session of its own, which must leave them be.
_session: list[pytest.Session] = []
_lock = threading.Lock()  # a job starts once, from the thread or its fixture, never after the end
_ended: list[bool] = []


class Job:
    """The process ``command(folder)`` returns the argv of (``folder`` a fresh temporary one it
    may prepare and write into), for ``fixture`` of the module named ``module`` (``None``: a
    session fixture, for the tests of any module). ``lasting``: the process keeps what it made
    until stopped, never ending by itself (it starts after every other job)."""

    def __init__(
        self,
        module: str | None,
        fixture: str,
        command: Command,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        lasting: bool = False,
    ) -> None:
        self.module, self.fixture, self.command, self.cwd, self.env = module, fixture, command, cwd, env
        self.lasting = lasting
        self.folder: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        _jobs.append(self)

    def start(self) -> None:
        """Start the process, unless it started already (or the session ended)."""
        with _lock:
            if self.process is None and not _ended:
                self._start()

    def _start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"specrun-{self.fixture}-"))
        argv = self.command(self.folder)
        with (self.folder / "stdout.txt").open("wb") as out, (self.folder / "stderr.txt").open("wb") as err:
            self.process = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def result(self, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """What ``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)`` returns
        for it, once it ended (started now if it did not start yet)."""
        self.start()
        assert self.process is not None and self.folder is not None
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        read = lambda name: (self.folder / name).read_text(errors="replace")  # noqa: E731
        return subprocess.CompletedProcess(
            self.process.args, self.process.returncode, read("stdout.txt"), read("stderr.txt")
        )

    def first_line(self, timeout: float = 120) -> str:
        """The first line the process printed, once printed (started now if it did not start
        yet), for a process that prints what it made and keeps it until stopped."""
        self.start()
        assert self.process is not None and self.folder is not None
        deadline = time.monotonic() + timeout
        while True:
            text = (self.folder / "stdout.txt").read_text(errors="replace")
            if "\n" in text:
                return text.split("\n", 1)[0]
            ended = self.process.poll() is not None
            if ended or time.monotonic() > deadline:
                text += (self.folder / "stderr.txt").read_text(errors="replace")
                self.stop()
                raise AssertionError(f"{self.fixture} {'ended' if ended else 'printed nothing in time'}: {text}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Kill the process and whatever it started (its session), and remove its folder."""
        if self.process is not None:
            # Its whole session, even once it ended: a process it started may remain, in a
            # process group of its own (Ray's workers are).
            for pid in [self.process.pid, *_in_session(self.process.pid)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # ended already
                    pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:  # nothing of it remains
                pass
            self.process.wait()
            self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def wanted(self, session: pytest.Session) -> bool:
        """Whether a selected test of the module (of any, for a session fixture) uses the fixture."""
        return any(
            self.module in (None, item.module.__name__) and self.fixture in getattr(item, "fixturenames", ())
            for item in session.items
            if isinstance(item, pytest.Function)
        )


def _in_session(sid: int) -> list[int]:
    """The processes of session ``sid`` (none where there is no /proc)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # ended while listed
            continue
        if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
            pids.append(int(stat.parent.name))
    return pids


def start_wanted(session: pytest.Session, first: Callable[[], subprocess.Popen[bytes] | None] | None = None) -> bool:
    """At collection's end: start ``first`` (a function starting a process of its own, or
    nothing) and every job a selected test needs, in turn (not in an xdist worker, nor when only
    collecting). Whether it did."""
    if _session:  # a test's own in-process pytest run
        return False
    _session.append(session)
    if os.environ.get("PYTEST_XDIST_WORKER") or session.config.option.collectonly:
        return False
    # Those that never end last, whatever declared them first (a support module a conftest imports).
    wanted = sorted((job for job in _jobs if job.wanted(session)), key=lambda job: job.lasting)
    threading.Thread(target=_in_turn, args=(first, wanted), name="background-setup", daemon=True).start()
    return True


def _in_turn(first: Callable[[], subprocess.Popen[bytes] | None] | None, jobs: list[Job]) -> None:
    """Start ``first`` and the jobs one at a time, each when the one before ended: at once they
    took both cores from the first tests. (A job that never ends, as the Ray cluster's program,
    comes last: the tests that use it run last.) A fixture that asks first starts its own job at once."""
    process = first() if first is not None else None
    for job in jobs:
        if process is not None:
            process.wait()
        job.start()
        process = job.process


def stop_all(session: pytest.Session) -> None:
    """At the session's end: no process of a job outlives it."""
    if _session and session is not _session[0]:  # a test's own in-process pytest run
        return
    with _lock:
        _ended.append(True)
    for job in _jobs:
        job.stop()
