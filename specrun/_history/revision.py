"""An agent's revision: which version of its code and config a result was measured against.

The run history compares a case's results only within one revision (a case is flaky when its
verdict changed while nothing about it did), so one fix that turns a failure into a pass is a
fix, not a flip. Worked out once per agent per run (:func:`agent_revisions`), never per case:

- in a git repository: the commit checked out (``git rev-parse HEAD``) and a hash of the
  uncommitted changes to tracked files (``git diff HEAD``, streamed into the hash, so its size
  costs no memory; the run's own suite and output files left out), plus the agent's module
  files that git does not track yet;
- outside git: a hash of the agent's module files: the ``*.py`` files in its folder (hidden,
  vendored and ``__pycache__`` folders skipped), its ``agent.yaml``, and files its target
  config names (a process target's script). Data files the agent writes as it runs (a
  counter, a cache, a database) are not module files, so they never change the revision;
- in both: the target config and the run's ``-c`` connector, which replaces the agent's model.

A revision that cannot be worked out (git did not answer in time) is unique to the run: the
run's own repeats (``--runs``) still compare, other runs never do.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
import stat as stat_module
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._load.discovery import folder_skip_reason

if TYPE_CHECKING:
    from .._project.project import Agent

GIT_TIMEOUT_S = 10.0
MAX_FILES = 2000  # module files read whole; past these (or MAX_BYTES), their size and mtime stand in
MAX_BYTES = 32 * 2**20
MAX_EXCLUDED = 500  # suite and output files left out of the diff by name
MAX_ENTRIES = 50_000  # files looked at outside git; a bigger folder (a home folder) has no known revision
_AGENT_FILES = frozenset({"agent.yaml", "agent.yml"})


class _TooBig(Exception):
    pass


def in_git(path: Path) -> bool:
    """True when ``path`` is inside a git work tree (a ``.git`` at or above it): no process otherwise."""
    return any((folder / ".git").exists() for folder in [path, *path.parents])


def _git(folder: Path, *args: str) -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", *args],
            cwd=folder,
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",  # file names as the file system has them (os.fsencode gives them back)
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        if done.returncode == 0:
            return done.stdout
    return None


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root``, when it is in a git repository."""
    out = _git(root, "rev-parse", "HEAD") if in_git(root) else None
    return (out.strip() or None) if out else None


def agent_revisions(agents: Iterable[Agent], connector: str | None = None, own: Iterable[Path] = ()) -> dict[str, str]:
    """Each agent's revision (see the module docstring), by agent id. ``connector``: the run's
    ``-c``; ``own``: the run's suite and output files, whose uncommitted changes are left out
    (an edited case starts afresh by its content hash, not every case with it)."""
    repos: dict[str, str | None] = {}  # a repository's top folder -> the hash of its diff
    own = [p.resolve() for p in own]
    found: dict[str, str] = {}
    for agent in agents:
        if agent.id not in found:
            found[agent.id] = _revision(agent, connector, own, repos)
    return found


def _unknown() -> str:
    return "unknown:" + secrets.token_hex(8)


def _revision(agent: Agent, connector: str | None, own: list[Path], repos: dict[str, str | None]) -> str:
    folder = agent.base_dir
    digest = hashlib.blake2b(digest_size=8)
    digest.update(json.dumps([agent.target, connector], sort_keys=True, default=str).encode())
    head = _git(folder, "rev-parse", "HEAD", "--show-toplevel") if in_git(folder) else None
    lines = head.split("\n") if head else []
    if len(lines) < 2:  # outside git, or no commit yet
        try:
            _hash_files(digest, folder, _walk(folder, agent))
        except _TooBig:
            return _unknown()
        return "files:" + digest.hexdigest()
    commit, top = lines[0], lines[1]
    if top not in repos:
        repos[top] = _diff_hash(Path(top).resolve(), own)
    untracked = _git(folder, "ls-files", "--others", "--exclude-standard", "-z", "--", ".")
    if repos[top] is None or untracked is None:
        return _unknown()
    named = _named_files(agent)
    paths = (folder / name for name in untracked.split("\0") if name)
    _hash_files(digest, folder, (p for p in paths if _is_module(p, agent, named) and not _vendored(p, folder)))
    return f"git:{commit[:12]}{repos[top]}:{digest.hexdigest()}"


def _diff_hash(top: Path, own: list[Path]) -> str | None:
    """``+`` and a hash of ``git diff HEAD`` (tracked files' uncommitted changes, but those of
    ``own``), read in chunks; empty for a clean tree; None when git failed or took longer than
    ``GIT_TIMEOUT_S``."""
    excluded = [f":(exclude,literal){p.relative_to(top).as_posix()}" for p in own if p.is_relative_to(top)]
    if len(excluded) > MAX_EXCLUDED:  # a command line that long may not start: their edits count then
        excluded = []
    args = ["git", "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--", ".", *excluded]
    digest, size = hashlib.blake2b(digest_size=6), 0
    try:
        with subprocess.Popen(args, cwd=top, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
            timer = threading.Timer(GIT_TIMEOUT_S, proc.kill)  # a stuck git must not hold the run
            timer.start()
            try:
                for chunk in iter(functools.partial(proc.stdout.read, 1 << 16), b""):  # type: ignore[union-attr]
                    digest.update(chunk)
                    size += len(chunk)
                code = proc.wait()
            finally:
                timer.cancel()
    except OSError:
        return None
    if code != 0:
        return None
    return "+" + digest.hexdigest() if size else ""


def _is_module(path: Path, agent: Agent, named: frozenset[str]) -> bool:
    return path.suffix == ".py" or path.name in _AGENT_FILES or path.name in named


def _vendored(path: Path, top: Path) -> bool:
    parts = path.relative_to(top).parts[:-1] if path.is_relative_to(top) else ()
    return any(folder_skip_reason(p) or p == "site-packages" for p in parts)


def _named_files(agent: Agent) -> frozenset[str]:
    """Names of the files in the agent's folder that its target config mentions (a script)."""
    words: set[str] = set()
    stack: list[object] = [agent.target]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and len(value) < 4096:
            words.update(w.strip("'\"") for w in value.split())
    found = set()
    for word in words:
        with contextlib.suppress(OSError, ValueError):
            if word and (agent.base_dir / word).is_file():
                found.add(Path(word).name)
    return frozenset(found)


def _walk(folder: Path, agent: Agent) -> Iterator[Path]:
    """The agent's module files under ``folder`` and its ``hooks`` folder (see the module
    docstring), its agent file too."""
    named = _named_files(agent)
    if agent.path is not None:
        yield agent.path
    seen = 0
    hooks = [d for d in agent.extra_hook_dirs if not d.resolve().is_relative_to(folder.resolve())]
    for top in [folder, *hooks]:
        for dirpath, dirnames, filenames in os.walk(top):
            seen += len(dirnames) + len(filenames)
            if seen > MAX_ENTRIES:
                raise _TooBig
            if "pyvenv.cfg" in filenames:  # a virtual environment holds libraries, not the agent
                dirnames.clear()
                continue
            dirnames[:] = [d for d in dirnames if folder_skip_reason(d) is None and d != "site-packages"]
            for name in filenames:
                if _is_module(Path(name), agent, named):
                    yield Path(dirpath, name)


def _hash_files(digest: Any, top: Path, paths: Iterable[Path]) -> None:
    """Add each file's name (from ``top``) and content, in name order; past ``MAX_FILES`` files
    or ``MAX_BYTES`` bytes, its size and modification time instead."""
    read = 0
    for n, path in enumerate(sorted(set(paths))):
        name = path.relative_to(top) if path.is_relative_to(top) else path
        digest.update(b"\0" + os.fsencode(name) + b"\0")
        try:
            stat = path.stat()
            if not stat_module.S_ISREG(stat.st_mode):  # a FIFO named like a module would block the read
                digest.update(b"not a file")
            elif n < MAX_FILES and read + stat.st_size <= MAX_BYTES:
                data = path.read_bytes()
                read += len(data)
                digest.update(hashlib.blake2b(data, digest_size=16).digest())
            else:
                digest.update(f"{stat.st_size} {stat.st_mtime_ns}".encode())
        except OSError:
            digest.update(b"unreadable")
