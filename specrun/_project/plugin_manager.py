"""Build the plugin manager from the ``specrun`` entry-point group, and the registry from it."""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import Distribution, entry_points
from types import ModuleType
from typing import Any

import pluggy

from .._core import hookspecs
from .._core.errors import PluginError
from .._core.kinds import Reporter
from .._report.stream import ResultStream
from .registry import Registry

ENTRY_POINT_GROUP = "specrun"
DISABLE_ENV = "SPECRUN_DISABLE_PLUGINS"

_TYPE_HOOKS = {
    "assertion": "register_assertion_types",
    "target": "register_targets",
    "source": "register_sources",
    "simulator": "register_simulators",
    "reporter": "register_reporters",
    "executor": "register_executors",
    "adapter": "register_adapters",
}


@dataclass
class PluginInfo:
    """An installed plugin: its entry-point name, distribution and the types it adds."""

    name: str
    distribution: str | None = None
    version: str | None = None
    types: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Plugins:
    """The plugin manager, the registry it filled and what each plugin added."""

    manager: pluggy.PluginManager
    registry: Registry
    infos: list[PluginInfo]

    @property
    def hook(self) -> Any:
        return self.manager.hook


def blocked_names() -> set[str]:
    """Plugin names listed in ``SPECRUN_DISABLE_PLUGINS`` (comma separated)."""
    return {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}


LIFECYCLE_HOOKS = frozenset({"run_started", "case_finished", "run_finished"})


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, where a ``Reporter`` implements the lifecycle hooks by name, unmarked
    (as pytest's ``pytest_*`` functions need no marker)."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name in LIFECYCLE_HOOKS and isinstance(plugin, Reporter):
            opts = {
                "wrapper": False,
                "hookwrapper": False,
                "optionalhook": False,
                "tryfirst": False,
                "trylast": False,
                "specname": None,
            }
        return opts


def get_plugin_manager(extra: list[Any] | None = None, use_entry_points: bool = True) -> Plugins:
    """Load every plugin of the ``specrun`` entry-point group (less blocked ones), plus ``extra``.

    A plugin that fails to import, a misspelt hook, or a type name claimed twice is a
    ``PluginError`` naming the plugin and its distribution.
    """
    pm = PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    blocked = blocked_names()
    infos: list[PluginInfo] = []
    if use_entry_points:
        # Each distribution's name and version parsed once: ``ep.dist.name`` parses METADATA anew.
        named: dict[Distribution, tuple[str, str]] = {}
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.dist is not None and ep.dist not in named:
                meta = ep.dist.metadata
                named[ep.dist] = (meta["Name"], meta["Version"])
            dist, version = named[ep.dist] if ep.dist is not None else (None, None)
            if ep.name in blocked or (dist and dist in blocked):
                pm.set_blocked(ep.name)
                continue
            try:
                module = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.name!r} from distribution {dist or '?'} failed to import: {type(exc).__name__}: {exc}"
                ) from exc
            info = PluginInfo(ep.name, dist, version)
            _register(pm, module, info)
            infos.append(info)
    for plugin in extra or []:
        info = PluginInfo(getattr(plugin, "__name__", None) or type(plugin).__name__)
        _register(pm, plugin, info)
        infos.append(info)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin) or repr(exc.plugin)
        dist = next((i.distribution for i in infos if i.name == name), None)
        raise PluginError(f"plugin {name!r}{_from(dist)}: {exc}") from exc
    registry = Registry()
    registry.register("reporter", ResultStream, "specrun")  # the engine's own: -o FILE.jsonl names its path
    by_name = {info.name: info for info in infos}
    for kind, hook_name in _TYPE_HOOKS.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            info = by_name.get(impl.plugin_name) or PluginInfo(impl.plugin_name)

            def register(cls: Any, _kind: str = kind, _info: PluginInfo = info) -> None:
                registry.register(_kind, cls, _info.name, _info.distribution)
                _info.types.setdefault(_kind, []).append(cls.name)

            try:
                impl.function(register=register)
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {info.name!r}{f' ({info.distribution})' if info.distribution else ''} "
                    f"failed in {hook_name}: {type(exc).__name__}: {exc}"
                ) from exc
    return Plugins(pm, registry, infos)


def _from(distribution: str | None) -> str:
    return f" from distribution {distribution}" if distribution else ""


def _register(pm: pluggy.PluginManager, plugin: Any, info: PluginInfo) -> None:
    """Register one plugin; a hook whose arguments do not match its spec is a ``PluginError``."""
    try:
        pm.register(plugin, name=info.name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {info.name!r}{_from(info.distribution)}: {exc}") from exc


@functools.cache
def default_plugins() -> Plugins:
    """The process-wide plugins, from the installed entry points."""
    return get_plugin_manager()


def discover(package: str, base: type) -> Iterator[type]:
    """Yield the ``base`` subclasses defined in each submodule of ``package``.

    First-party families use it so that a new module in a family needs no new entry point.
    """
    root: ModuleType = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, base)
                and value.__module__ == module.__name__
                and "name" in vars(value)
            ):
                yield value


def registrar(package: str, base: type) -> Callable[[Callable[[type], None]], None]:
    """A ``register_*`` hook body that registers every ``base`` subclass found in ``package``."""

    def register_all(register: Callable[[type], None]) -> None:
        for cls in discover(package, base):
            register(cls)

    return register_all
