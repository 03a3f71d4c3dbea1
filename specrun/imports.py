"""Resolve ``module.func`` / ``module:func`` references to Python callables next to a suite or agent.

Suites are trusted like test code: a reference names a module in one of the search folders
(the suite's, then the agent's), imported under a private name so that two folders may each
have their own ``env_test.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import UsageError

_loaded: dict[Path, Any] = {}


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


def _import_file(path: Path) -> Any:
    if path in _loaded:
        return _loaded[path]
    name = f"_specrun_user_{abs(hash(path))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    parent = str(path.parent)
    added = parent not in sys.path
    if added:  # let the module import its siblings
        sys.path.insert(0, parent)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _loaded[path] = module
    return module


def load_callable(ref: str, search: Iterable[Path]) -> Callable[..., Any]:
    """The function ``ref`` names, from a module file in ``search`` or an importable module.

    A missing module or attribute is a ``UsageError`` that says where it looked.
    """
    module_name, attr = split_ref(ref)
    folders = list(search)
    path = find_module(module_name, folders)
    try:
        if path is not None:
            module = _import_file(path)
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
