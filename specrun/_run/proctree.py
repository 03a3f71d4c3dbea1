"""Agent process trees: nothing an agent process starts outlives its case.

An agent process (the ``process`` target, the ``Test`` API) is started in a new session, so it
leads its own process group, with a tag in its environment (``SPECRUN_PROCESS_TAG``) that the
processes it starts inherit. :meth:`ProcessTree.end` sends SIGTERM to the group and to every
process of the tree, and after the grace period SIGKILL to whatever is left of either, whoever
exited first: a child that ignores SIGTERM does not outlive its parent.

On Linux specrun makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so a
process that leaves the group (``setsid``) and whose parent exits becomes specrun's child,
not init's: the tree is specrun's descendants (``/proc/PID/task/TID/children``) that are in the
group, carry the tag or descend from one that does, and specrun reaps the orphans it ends.
Elsewhere only the process group is ended. :func:`kill_all` ends every live tree at once (a
second Ctrl-C, and when the interpreter exits with a tree still running).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import uuid

TAG_VARIABLE = "SPECRUN_PROCESS_TAG"
_PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
_POLL = 0.05  # seconds between looks at a tree that is still ending
_live: set[ProcessTree] = set()
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); True when it does."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                import ctypes  # a process agent's only: every plugin imports this module

                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        atexit.register(kill_all)
    return _subreaper


def kill_all() -> None:
    """SIGKILL every live tree now."""
    for tree in list(_live):
        tree.kill()


class ProcessTree:
    """One agent process and everything it starts; see the module docstring.

    Create it before starting the process (with ``env`` added to the process's environment and
    ``start_new_session=True``), call :meth:`started` with its pid, and :meth:`end` it.
    """

    def __init__(self) -> None:
        become_subreaper()  # before the process starts: its first orphans must come to us
        self.tag = uuid.uuid4().hex
        self.pid: int | None = None  # the leader's pid, which is also the group's id

    @property
    def env(self) -> dict[str, str]:
        return {TAG_VARIABLE: self.tag}

    def started(self, pid: int) -> None:
        self.pid = pid
        _live.add(self)

    def members(self) -> tuple[set[int], set[int]]:
        """``(running, zombies)``: the tree's processes but the leader; ``zombies`` are those
        that are specrun's own children (adopted orphans), which only specrun can reap."""
        marker = f"{TAG_VARIABLE}={self.tag}".encode()
        me = os.getpid()
        running: set[int] = set()
        zombies: set[int] = set()
        stack = [(child, me, False) for child in _children(me)]
        while stack:
            pid, parent, inside = stack.pop()
            stat = _stat(pid)
            if stat is None:
                continue
            state, group = stat
            inside = inside or group == self.pid or _tagged(pid, marker)
            if inside and pid != self.pid:
                if state != "Z":
                    running.add(pid)
                elif parent == me:
                    zombies.add(pid)
            stack.extend((child, pid, inside) for child in _children(pid))
        return running, zombies

    async def end(self, process: asyncio.subprocess.Process, grace: float) -> None:
        """SIGTERM the tree, SIGKILL what is left of it after ``grace`` seconds; reap it."""
        try:
            running, _ = self.members()
            if process.returncode is None or running or self._group_alive():
                self._send(signal.SIGTERM, running)
                loop = asyncio.get_running_loop()
                deadline = loop.time() + grace
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), grace)
                while (running or self._group_alive()) and loop.time() < deadline:
                    await asyncio.sleep(_POLL)
                    running, zombies = self.members()
                    _reap(zombies)
                if process.returncode is None or running or self._group_alive():
                    self.kill()
            await process.wait()
            for _ in range(int(1 / _POLL)):  # killed orphans turn into zombies of ours shortly
                running, zombies = self.members()
                _reap(zombies)
                if not running and not zombies:
                    break
                await asyncio.sleep(_POLL)
        finally:
            if process.returncode is None:  # end() itself was cancelled: leave nothing running
                self.kill()
            _live.discard(self)

    def kill(self) -> None:
        """SIGKILL the whole tree now (its leader included)."""
        running, _ = self.members()
        self._send(signal.SIGKILL, running)

    def _send(self, sig: int, pids: set[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    def _group_alive(self) -> bool:
        """Whether a process (or an unreaped zombie) is still in the group."""
        if self.pid is None:
            return False
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
        except (OSError, ValueError):
            pass
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, process group)`` of ``pid``, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()  # the name in parentheses may hold spaces
    return fields[0].decode(), int(fields[2])


def _tagged(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def _reap(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
