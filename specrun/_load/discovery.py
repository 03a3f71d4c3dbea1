"""Which files a folder search loads as suites: decided by name and location, never by content.

The rule (docs/suite-format.md, "Folders"): a file ending in ``.jsonl``, ``.yaml``, ``.yml`` or
``.json`` is a suite unless

- it or a folder on its way is hidden (the name starts with ``.``);
- a folder on its way is ``fixtures``, ``node_modules`` or ``__pycache__``;
- it is an agent or config file (``agent.yaml``, ``specrun.yaml``, ...);
- it is a JSON Schema for editors (``*.schema.json``, as ``specrun schema > specrun.schema.json``
  writes);
- it is an output: ``output-*.jsonl`` or ``output-*.json``, as the default result stream
  ``output-<timestamp>.jsonl`` is named.

A folder search never follows a symbolic link to a folder (it could loop). Every file or
folder passed over is reported with the reason, so ``-v`` can say what was not loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .documents import SUITE_EXTENSIONS

CONFIG_NAMES = frozenset({"agent.yaml", "agent.yml", "specrun.yaml", "specrun.yml", "test-config.yaml"})
SKIPPED_DIRS = frozenset({"fixtures", "node_modules", "__pycache__", "__snapshots__"})
OUTPUT_PREFIX = "output-"
OUTPUT_EXTENSIONS = (".jsonl", ".json")
SCHEMA_EXTENSIONS = tuple(".schema" + ext for ext in SUITE_EXTENSIONS)


def folder_skip_reason(name: str) -> str | None:
    """Why a folder search does not enter a folder of this name, or None."""
    if name.startswith("."):
        return "hidden folder"
    if name in SKIPPED_DIRS:
        return f"{name}/ folders hold data, not suites"
    return None


def file_skip_reason(name: str) -> str | None:
    """Why a file of this name (with a suite extension) is not a suite, or None when it is one."""
    lower = name.lower()
    if name.startswith("."):
        return "hidden file"
    if name in CONFIG_NAMES:
        return "agent or config file"
    if lower.endswith(SCHEMA_EXTENSIONS):
        return "JSON Schema file (*.schema.json)"
    if lower.startswith(OUTPUT_PREFIX) and lower.endswith(OUTPUT_EXTENSIONS):
        return "specrun output (output-*.jsonl, output-*.json)"
    return None


def skip_reason(path: Path, folders: Iterable[str] = ()) -> str | None:
    """Why a folder search passes over ``path`` (``folders``: those between the searched folder
    and the file), or None when it loads it as a suite."""
    if path.suffix.lower() not in SUITE_EXTENSIONS:
        return "not a suite extension (.jsonl, .yaml, .yml, .json)"
    for folder in folders:
        reason = folder_skip_reason(folder)
        if reason is not None:
            return f"in {folder}/: {reason}"
    return file_skip_reason(path.name)


def find_suite_files(root: Path, skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Suite files under ``root``, recursively, in a stable order; what is passed over (folders,
    and files with a suite extension) is appended to ``skipped`` with the reason."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        kept = []
        for name in sorted(dirnames):
            folder = Path(dirpath, name)
            reason = folder_skip_reason(name)
            if reason is None and folder.is_symlink():
                reason = "symbolic link to a folder: not followed"
            if reason is None:
                kept.append(name)
            elif skipped is not None:
                skipped.append((folder, reason))
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.lower().endswith(SUITE_EXTENSIONS):
                continue
            reason = file_skip_reason(name)
            if reason is None:
                found.append(Path(dirpath, name))
            elif skipped is not None:
                skipped.append((Path(dirpath, name), reason))
    return found
