"""A run's lifecycle hooks (``run_started``, ``case_finished``, ``run_finished``) and who gets them.

Everything that watches a run is a plugin on these hooks: the installed plugins, and the run's
own plugins (the console, the result stream, each ``-o`` reporter), registered on the plugin
manager for the run and unregistered after it, as pytest's terminal reporter is. pluggy's
order applies: the run's reporters first, then the installed plugins, then the stream, then
the console (the stream's summary line is written once every report is).

Each implementation is called on its own, not through one pluggy call: the first one that
raises is kept (the run ends with exit 3 naming it) and skipped from then on, so one broken
consumer never costs the stream, the others or the run a result.
"""

from __future__ import annotations

import inspect
from typing import Any

from .._core.kinds import Reporter
from .._project.plugin_manager import Plugins


class Lifecycle:
    """The lifecycle hooks of one run, with ``run_plugins`` registered while it is entered."""

    def __init__(self, plugins: Plugins, run_plugins: list[object]):
        self.manager = plugins.manager
        self.run_plugins = run_plugins
        self.broken: dict[int, str] = {}  # id of a plugin -> its first failure
        self._known: dict[str, list[Any]] = {}  # hook -> its implementations (see _impls)

    def __enter__(self) -> Lifecycle:
        self._known.clear()
        for plugin in reversed(self.run_plugins):  # pluggy calls the last registered first
            self.manager.register(plugin, name=f"specrun-run-{id(plugin)}")
        return self

    def __exit__(self, *exc: object) -> None:
        for plugin in self.run_plugins:
            if self.manager.is_registered(plugin):
                self.manager.unregister(plugin)

    def _impls(self, hook: str) -> list[Any]:
        """The implementations of ``hook`` that have not failed, in pluggy's call order; looked up
        once per hook (``case_finished`` is called for every result), again after a failure."""
        impls = self._known.get(hook)
        if impls is None:
            every = reversed(getattr(self.manager.hook, hook).get_hookimpls())
            impls = self._known[hook] = [impl for impl in every if id(impl.plugin) not in self.broken]
        return impls

    def call(self, hook: str, **kwargs: Any) -> None:
        """Call every implementation of ``hook`` that has not failed yet."""
        impls = self._known.get(hook)  # (looked up here first: this runs for every result)
        for impl in impls if impls is not None else self._impls(hook):
            if id(impl.plugin) in self.broken:  # failed earlier in this same call
                continue
            try:
                impl.function(*map(kwargs.__getitem__, impl.argnames))  # no list made per call
            except Exception as exc:
                self._fail(impl, hook, exc)

    async def finish(self, **kwargs: Any) -> None:
        """``run_finished``, awaiting the implementations that are ``async``."""
        for impl in self._impls("run_finished"):
            if id(impl.plugin) in self.broken:
                continue
            try:
                done = impl.function(*[kwargs[name] for name in impl.argnames])
                if inspect.isawaitable(done):
                    await done
            except Exception as exc:  # one broken reporter must not cost the others (or the results)
                self._fail(impl, "run_finished", exc)

    def failure(self, plugin: object) -> str | None:
        """Why ``plugin`` was skipped, if it was."""
        return self.broken.get(id(plugin))

    def _fail(self, impl: Any, hook: str, exc: Exception) -> None:
        plugin = impl.plugin
        if isinstance(plugin, Reporter):
            who = f"{plugin.name} reporter ({plugin.path})"
        elif any(plugin is p for p in self.run_plugins):
            who = type(plugin).__name__
        else:
            who = f"the {hook} hook of plugin {impl.plugin_name!r}"
        self.broken[id(plugin)] = f"{who} failed: {type(exc).__name__}: {exc}"
        self._known.clear()
