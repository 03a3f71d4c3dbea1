"""Where a run writes: checked before the first case, locked while the run lasts, and
written atomically (:func:`atomic_writer`, for reports, ``specrun diff`` and the model cache).

A run without ``-o`` streams its results to ``.specrun/runs/output-<time>.jsonl`` under the
project root (:func:`default_stream`): ``.specrun/`` is specrun's own folder (the run history
is there too), and when specrun creates it, it tells git to ignore it (:func:`private_folder`).
A run's outputs (``-o`` files, the default result stream, ``--save``) must not be one of its
inputs, must not be named twice, and must not land where a folder search of its inputs would
read them back as suites. While a run lasts, each output is locked (``flock`` on a hidden
``.NAME.lock`` next to it), so a second run writing the same file stops before it starts,
instead of interleaving lines with the first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO

from .._core.errors import UsageError
from .._load.discovery import skip_reason
from .._load.documents import SUITE_EXTENSIONS
from .._load.problems import display_path

PRIVATE_FOLDER = ".specrun"
RUNS_FOLDER = f"{PRIVATE_FOLDER}/runs"


def default_stream(root: Path) -> Path:
    """Where a run without ``-o`` streams its results: ``.specrun/runs/output-<time>.jsonl``
    under the project ``root`` (with ``-2``, ``-3``... when a run of the same second has the name)."""
    folder, stamp = root / RUNS_FOLDER, datetime.now().strftime("%Y%m%d%H%M%S")
    path, n = folder / f"output-{stamp}.jsonl", 2
    while path.exists():
        path, n = folder / f"output-{stamp}-{n}.jsonl", n + 1
    return path


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) holding a ``.gitignore`` that ignores all of it: what
    specrun keeps for itself (result streams, the model cache) is not for version control."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".gitignore").write_text("# written by specrun\n*\n", "utf-8")


def check_outputs(outputs: Sequence[tuple[str, Path]], reads: Iterable[Path], folders: Iterable[Path]) -> None:
    """Raise ``UsageError`` for an output (``(flag, path)``) that is a folder, is named twice, is
    a file the run reads (``reads``), or lies in a searched input folder (``folders``) under a
    name the search would load as a suite."""
    read = {key for p in reads for key in _names(p)}
    searched = [f.resolve() for f in folders]
    seen: dict[Path | tuple[int, int], str] = {}
    for flag, path in outputs:
        real = path.resolve()
        where = f"{flag} {path}"
        if path.is_dir():
            raise UsageError(f"{where}: is a folder; give a file name")
        names = _names(path)
        if same := next((seen[key] for key in names if key in seen), None):
            raise UsageError(f"{where}: the same file as {same}; every output needs its own file")
        seen.update(dict.fromkeys(names, where))
        if any(key in read for key in names):
            raise UsageError(f"{where}: is an input of this run; writing it would overwrite it")
        if flag == "--save" or path.suffix.lower() not in SUITE_EXTENSIONS:
            continue  # --save writes a suite on purpose
        for folder in searched:
            if real.is_relative_to(folder) and skip_reason(real, real.parent.relative_to(folder).parts) is None:
                raise UsageError(
                    f"{where}: inside the input folder {display_path(folder)}, where the next run would read"
                    " it as a suite; name it output-*.jsonl or output-*.json (folder searches skip those)"
                    " or write it elsewhere"
                )


def _names(path: Path) -> list[Path | tuple[int, int]]:
    """What identifies the file at ``path``: its resolved path and, when it exists, its device
    and inode, which another name of it (a hard link, which ``resolve`` does not see) shares."""
    try:
        stat = path.stat()
    except OSError:
        return [path.resolve()]
    return [path.resolve(), (stat.st_dev, stat.st_ino)]


def same_file(one: Path, other: Path) -> bool:
    """Whether ``one`` and ``other`` name one file (the same path, or a hard link of it)."""
    return bool(set(_names(one)) & set(_names(other)))


class OutputLocks:
    """Exclusive locks on a run's outputs, held from ``acquire`` until the ``with`` block ends."""

    def __init__(self) -> None:
        self._held: list[tuple[Path, int]] = []

    def __enter__(self) -> OutputLocks:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def acquire(self, outputs: Sequence[tuple[str, Path]]) -> None:
        """Lock every output, creating its folder; an output another run holds, or that cannot
        be written, is a ``UsageError`` (nothing is locked then)."""
        try:
            for flag, path in outputs:
                self._lock(flag, path)
        except BaseException:
            self.release()
            raise

    def _lock(self, flag: str, path: Path) -> None:
        where = f"{flag} {path}"
        if path.exists() and not os.access(path, os.W_OK):
            raise UsageError(f"{where}: cannot write it: permission denied")
        lock = path.with_name(f".{path.name}.lock")
        blocking = next((p for p in path.parents if p.exists()), None)
        if blocking is not None and not blocking.is_dir():
            raise UsageError(f"{where}: {blocking} is a file, not a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)  # as the reporters would
        except OSError as exc:
            raise UsageError(f"{where}: cannot create its folder: {exc.strerror or exc}") from None
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise UsageError(f"{where}: cannot write in {path.parent}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UsageError(
                    f"{where}: another specrun run is writing it (it holds {display_path(lock)});"
                    " wait for it to end or choose another file"
                ) from None
            # The holder before us removes the lock file when it ends: when ours is no longer the
            # file at that path, lock the new one, or two runs could each hold a different file.
            try:
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._held.append((lock, fd))
                return
            os.close(fd)

    def release(self) -> None:
        """Remove the lock files, then unlock (in that order: see ``_lock``)."""
        while self._held:
            lock, fd = self._held.pop()
            try:
                lock.unlink(missing_ok=True)
            finally:
                os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: Path, *, durable: bool = True) -> Iterator[IO[str]]:
    """Write to a temporary file in the same folder, then rename it over ``path``.

    Readers see the old file or the whole new one, never half of it; on any exception the
    temporary file is removed and ``path`` is left as it was. ``durable=False`` skips the
    fsync, for files whose loss in a power cut costs nothing (a cache entry: a torn one is a
    miss); an fsync can block for milliseconds on a busy disk. Nothing awaits inside the block:
    the runner handles signals between turns of the event loop, so even the second Ctrl-C
    (which exits at once) never lands in the middle of a write and leaves no temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="\n") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        # mkstemp makes the file private; the file gets the mode of the one it replaces.
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
