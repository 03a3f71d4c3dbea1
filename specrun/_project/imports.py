"""Resolve ``module.func`` / ``module:func`` references to Python callables next to a suite or agent.

Suites are trusted like test code: a reference names a module in one of the search folders
(the suite's, then the agent's), imported under its own name with its folder on ``sys.path``,
as pytest does: two different files with the same module name are a clear error, not a
silent mix-up.

A Python function's name has no hyphen, so a reference whose last part has one names a file,
as V2's ``scripts:tests.validate-expense`` does: ``tests/validate-expense.py``, looked for in
the search folders and then in each folder above the first, up to the agent's (the nearest
holding ``agent.yaml``) or the project root; its function is the file's name spelt as Python
(``validate_expense``), else ``Assert`` (V1's ``scripts.test.Assert``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._core.errors import UsageError


def _bare(ref: str) -> str:
    ref = ref.strip()
    for prefix in ("scripts:", "python:"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    return ref


def split_ref(ref: str) -> tuple[str, str]:
    """``"pkg.mod.Func"`` or ``"pkg.mod:Func"`` → ``("pkg.mod", "Func")``."""
    ref = _bare(ref)
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


# Where the folder search for a file reference stops: the agent's folder, or the project root.
_TOP_MARKS = ("agent.yaml", "agent.yml", "specrun.yaml", "specrun.yml")
_FILE_FUNCTION = "Assert"  # V1's script function name, when none is named like the file


def script_file(ref: str) -> Path | None:
    """The relative file a reference names when its last part is no Python name
    (``tests.validate-expense`` → ``tests/validate-expense.py``); None for ``module.function``."""
    parts = _bare(ref).split(".")
    if ":" in parts[-1] or parts[-1].isidentifier() or not all(parts):
        return None
    return Path(*parts[:-1], parts[-1] + ".py")


def _file_folders(folders: list[Path]) -> list[Path]:
    """``folders``, then each folder above the first up to the agent's or the project's."""
    found = list(folders)
    if folders:
        for folder in folders[0].resolve().parents:
            found.append(folder)
            if any((folder / name).is_file() for name in _TOP_MARKS):
                break
    return list(dict.fromkeys(found))


def ref_problem(ref: str, search: Iterable[Path]) -> str | None:
    """Why ``ref`` cannot be loaded from ``search``, found without importing it; None when its
    module (or file) is there. A missing function is found only when it is loaded."""
    folders = list(search)
    file = script_file(ref)
    if file is not None:
        looked = _file_folders(folders)
        if not any((f / file).is_file() for f in looked):
            return _no_file(ref, file, looked)
        return None
    try:
        module, _ = split_ref(ref)
    except UsageError as exc:
        return str(exc)
    if find_module(module, folders) is None and not _importable(module):
        where = ", ".join(str(f) for f in folders)
        return f"cannot find module {module!r} for {ref!r} (looked in {where} and the import path)"
    return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _no_file(ref: str, file: Path, looked: list[Path]) -> str:
    where = ", ".join(str(f) for f in looked) or "no folder"
    return f"cannot find {file} for {ref!r} (a name with '-' names a file, not a function; looked in {where})"


def _file_callable(ref: str, file: Path, folders: list[Path], objects: bool = False) -> Any:
    """The function of the script file ``file`` (see the module docstring)."""
    looked = _file_folders(folders)
    path = next((f / file for f in looked if (f / file).is_file()), None)
    if path is None:
        raise UsageError(_no_file(ref, file, looked))
    path = path.resolve()
    name = _bare(ref)  # has a hyphen: no import statement can reach (or clash with) it
    module = sys.modules.get(name)
    if module is None or Path(getattr(module, "__file__", "") or "").resolve() != path:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        add_import_root(path.parent)  # its sibling modules import as they would next to a suite
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise UsageError(f"importing {path} for {ref!r} failed: {type(exc).__name__}: {exc}") from exc
        sys.modules[name] = module
    names = (file.stem.replace("-", "_"), _FILE_FUNCTION)
    wanted = (lambda f: f is not None) if objects else callable
    func = next((f for f in (getattr(module, n, None) for n in names) if wanted(f)), None)
    if func is None:
        raise UsageError(f"{path} has no function {names[0]!r} or {names[1]!r} (for {ref!r})")
    return func


def load_callable(ref: str, search: Iterable[Path], *, objects: bool = False) -> Any:
    """The function ``ref`` names, from a module file in ``search`` or an importable module,
    or from the script file a hyphenated name names (see the module docstring); with
    ``objects``, whatever object it names (a framework's agent).

    A missing module or attribute is a ``UsageError`` that says where it looked.
    """
    folders = list(search)
    file = script_file(ref)
    if file is not None:
        return _file_callable(ref, file, folders, objects)
    module_name, attr = split_ref(ref)
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
    if not callable(func) and not (objects and func is not None):
        raise UsageError(f"{module_name!r} has no function {attr!r} (for {ref!r})")
    return func
