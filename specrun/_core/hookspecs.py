"""The plugin author's reference: every hook specrun calls, what it receives and what to return.

A plugin is a module or object with functions marked ``@specrun.hookimpl`` whose names match
the hooks below. Declare it in your distribution's ``pyproject.toml``::

    [project.entry-points.specrun]
    my_plugin = "my_package.my_module"

Type hooks receive a ``register`` callable; call it once per class you contribute. Each class
subclasses a kind from :mod:`specrun._core.kinds` and carries a unique ``name`` and the JSON Schema of
its parameters (``params_schema``), from which ``specrun schema`` and validation are composed.
Lifecycle hooks observe a run; their return values are ignored. A ``Reporter`` implements
them by name, without the marker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pluggy

from .kinds import Adapter, AssertionType, Executor, Reporter, Simulator, Source, Target
from .results import Result, RunInfo
from .summary import Summary

hookspec = pluggy.HookspecMarker("specrun")


# -- types ------------------------------------------------------------------------------------


@hookspec
def register_assertion_types(register: Callable[[type[AssertionType]], None]) -> None:
    """Register assertion types.

    :param register: call ``register(MyAssertion)`` for each :class:`specrun._core.kinds.AssertionType`
        subclass; its ``name`` is the ``type`` users write in ``assertions``.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_targets(register: Callable[[type[Target]], None]) -> None:
    """Register target types: kinds of agent under test (``python``, ``http``, ...).

    :param register: call ``register(MyTarget)`` for each :class:`specrun._core.kinds.Target` subclass;
        its ``name`` is the ``type`` of an agent file's ``target`` mapping.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_sources(register: Callable[[type[Source]], None]) -> None:
    """Register input sources: ``-i NAME:spec`` loads cases from the source called ``NAME``.

    :param register: call ``register(MySource)`` for each :class:`specrun._core.kinds.Source` subclass.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_simulators(register: Callable[[type[Simulator]], None]) -> None:
    """Register simulated users for dynamic cases (``simulator: {type: NAME, ...}``).

    :param register: call ``register(MySimulator)`` for each :class:`specrun._core.kinds.Simulator`.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_reporters(register: Callable[[type[Reporter]], None]) -> None:
    """Register reporters; ``-o FILE`` picks the one whose ``extensions`` match FILE.

    :param register: call ``register(MyReporter)`` for each :class:`specrun._core.kinds.Reporter`.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_executors(register: Callable[[type[Executor]], None]) -> None:
    """Register executors: where a run's cases execute (``--executor NAME``, ``executor:`` in
    ``specrun.yaml``); ``local`` is one.

    :param register: call ``register(MyExecutor)`` for each :class:`specrun._core.kinds.Executor`.

    Called once when the plugin manager is built. Return nothing.
    """


@hookspec
def register_adapters(register: Callable[[type[Adapter]], None]) -> None:
    """Register framework adapters: how a ``python`` target runs a framework's agent object
    (pydantic-ai, LangGraph, the OpenAI Agents SDK...) and reads its tool calls and usage.

    :param register: call ``register(MyAdapter)`` for each :class:`specrun._core.kinds.Adapter`.

    Called once when the plugin manager is built. Return nothing.
    """


# -- lifecycle --------------------------------------------------------------------------------
#
# Every consumer of a run is a plugin on these three hooks: installed plugins, and the run's own
# (the console, the JSONL result stream, each ``-o`` reporter), registered for the run only.
# An implementation may take any subset of a hook's arguments. One that raises is skipped for
# the rest of the run, which then ends with exit 3 naming it; the other consumers get every result.


@hookspec
def run_started(info: RunInfo) -> None:
    """Observe the start of a run, after every suite validated and before the first case.

    :param info: the run's agent, inputs, case count and settings.
    """


@hookspec
def case_finished(result: Result) -> None:
    """Observe one case's final result (one call per case and run), in completion order.

    :param result: the result; ``result.case`` is the case, ``result.to_dict()`` its record.
    """


@hookspec
def run_finished(info: RunInfo, summary: Summary, stream: Path) -> None:
    """Observe the end of a run, interrupted or not (``summary.interrupted``).

    Called on the run's reporters first, then on installed plugins, then on the result stream
    (which writes its summary line last), then on the console. A reporter's implementation
    may be ``async``.

    :param info: the run's settings, as given to ``run_started``.
    :param summary: the totals: the stream's summary line, a mapping (``summary["passed"]``)
        whose fields are also typed attributes (``summary.passed``, ``summary.incomplete``).
    :param stream: the path of the JSONL result stream; whole-file reporters read the results
        back from it (``specrun._report.stream.scan``) instead of keeping them in memory.
    """
