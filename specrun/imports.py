"""Resolve ``module.func`` / ``module:func`` references to Python callables next to a suite or agent.

Suites are trusted like test code: a reference names a module in one of the search folders
(the suite's, then the agent's), imported under its own name with its folder on ``sys.path``,
as pytest does: two different files with the same module name are a clear error, not a
silent mix-up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import UsageError


def split_ref(ref: str) -> tuple[str, str]:
    """``"pkg.mod.Func"`` or ``"pkg.mod:Func"`` → ``("pkg.mod", "Func")``."""
    ref = ref.strip()
    for prefix in ("scripts:", "python:"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    module, sep, name = ref.rpartition(":") if ":" in ref else ref.rpartition(".")
    if not sep or not module or not name:
        raise UsageError(f"invalid reference {ref!r}: expected module.function or module:function")
    return module, name


def find_module(module: str, search: Iterable[Path]) -> Path | None:
    """The file of ``module`` (dotted, relative) in the first search folder holding it."""
    rel = Path(*module.split("."))
    for folder in search:
        for candidate in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _import_file(path: Path, module_name: str) -> Any:
    """Import ``path`` as ``module_name`` with its root folder on ``sys.path`` (pytest's
    "prepend" mode), so that the module and its siblings share one instance of each import."""
    existing = sys.modules.get(module_name)
    if existing is not None:
        loaded = getattr(existing, "__file__", None)
        if loaded and Path(loaded).resolve() == path:
            return existing
        raise UsageError(
            f"module {module_name!r} at {path} clashes with {loaded or 'a module'} imported earlier "
            "under the same name; give one of them a unique name"
        )
    root = path.parent
    for _ in range(module_name.count(".") + (path.name == "__init__.py")):
        root = root.parent
    add_import_root(root)
    return importlib.import_module(module_name)


def add_import_root(folder: Path) -> None:
    """Put ``folder`` first on ``sys.path`` unless it is there already."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def load_callable(ref: str, search: Iterable[Path]) -> Callable[..., Any]:
    """The function ``ref`` names, from a module file in ``search`` or an importable module.

    A missing module or attribute is a ``UsageError`` that says where it looked.
    """
    module_name, attr = split_ref(ref)
    folders = list(search)
    path = find_module(module_name, folders)
    try:
        if path is not None:
            module = _import_file(path, module_name)
        else:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                where = ", ".join(str(f) for f in folders) or "the import path"
                raise UsageError(f"cannot find module {module_name!r} for {ref!r} (looked in {where})") from None
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"importing {module_name!r} for {ref!r} failed: {type(exc).__name__}: {exc}") from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise UsageError(f"{module_name!r} has no function {attr!r} (for {ref!r})")
    return func
