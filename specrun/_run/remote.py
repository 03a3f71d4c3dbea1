"""Running a run's cases in another process: what an executor ships, and the worker that runs them.

``RemoteRun.of(runner, jobs)`` is the whole run in one picklable object, sent once (each case
and agent once, however many runs): the project's root and config, the run's options, the
cases and their agents. A job then travels as three integers and its flaky mark. In a worker process,
``RemoteWorker`` rebuilds the project, the plugins, the model client and a local
:class:`~specrun._run.runner.Runner` from it, with every path under the driver's project root moved
to the worker's copy of the project, and runs one job at a time on one event loop, exactly as
the local executor does (timeouts, case hooks, model calls). A SIGINT to the worker (how Ray
cancels a task) stops the case in flight as an interrupt stops a local one: ``error:
interrupted``, its ``after`` hook still run (within the run's ``interrupt_grace``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.data import Case
from .._core.errors import UsageError
from .._core.kinds import CaseCancelled
from .._project.project import Agent, Project
from .runner import Job, Runner, RunOptions


@dataclass
class RemoteRun:
    """A run, picklable: see the module docstring."""

    root: Path
    cwd: Path  # the driver's working folder, which relative paths are relative to
    config: dict[str, Any]
    options: RunOptions
    cases: list[Case]
    agents: list[Agent]

    @classmethod
    def of(cls, runner: Runner, jobs: list[Job]) -> RemoteRun:
        """The run of ``runner`` that ``jobs`` need, ready to pickle."""
        cases = list({id(j.case): j.case for j in jobs}.values())
        agents = list({id(j.agent): j.agent for j in jobs}.values())
        options = dataclasses.replace(runner.options, executor="local", executor_options={})  # a worker runs locally
        return cls(runner.project.root, Path.cwd(), runner.project.config, options, cases, agents)

    def indexes(self) -> tuple[dict[int, int], dict[int, int]]:
        """Where each case and agent (by ``id()``) is in the lists: how a job is addressed."""
        return {id(c): i for i, c in enumerate(self.cases)}, {id(a): i for i, a in enumerate(self.agents)}

    def worker(self, root: Path) -> RemoteWorker:
        """A worker in this process that runs this run's jobs, with the project copied to ``root``."""
        return RemoteWorker(self, root)

    def moved_to(self, root: Path) -> None:
        """Point every path under the driver's project root at ``root``, the worker's copy."""
        if root == self.root:
            return

        def move(path: Path) -> Path:
            try:
                return root / (self.cwd / path).relative_to(self.root)
            except ValueError:
                return path  # outside the project: only there if the machines share it

        for suite in {id(c.suite): c.suite for c in self.cases if c.suite is not None}.values():
            suite.path = move(suite.path)
        for agent in self.agents:
            agent.base_dir = move(agent.base_dir)
            agent.path = agent.path and move(agent.path)
            agent.extra_hook_dirs = [move(d) for d in agent.extra_hook_dirs]
        self.root = root


class RemoteWorker:
    """Runs the jobs of one ``RemoteRun`` in this process, with the project at ``root``."""

    def __init__(self, run: RemoteRun, root: Path):
        from .._project.plugin_manager import default_plugins
        from .session import model_client

        if run.options.update_snapshots and root != run.root:  # they would land in the copy, not the project
            raise UsageError("--update-snapshots cannot run in a worker with its own copy of the project")
        run.moved_to(root)
        self.run_spec = run
        plugins = default_plugins()
        project = Project(root, plugins.registry, run.config)
        self.runner = Runner(project, plugins, run.options, models=model_client(project, run.options.no_cache))
        self.loop = asyncio.new_event_loop()  # one loop for every job: targets keep their connections
        self._told: dict[str, Any] = {}  # the run summary's counts as ``summary`` last gave them

    def run(self, case: int, agent: int, run: int, flaky: bool = False) -> tuple[dict[str, Any], str]:
        """Run one job (``Job``'s fields, the case and agent by index); its result's record and JSON line."""
        job = Job(self.run_spec.cases[case], self.run_spec.agents[agent], run, flaky)
        result = self.loop.run_until_complete(self._run(job))
        return result.record(), result.line

    def summary(self) -> dict[str, Any]:
        """What this worker's cases added to the run summary since the last call: the counts of
        their traces (spans kept, unmatched, dropped, rejected), for the driver's
        ``ExecutorHost.add_summary``. Spans that reach the worker after its last case are not in it."""
        now = self.runner.project.trace_summary()
        told, self._told = self._told, now
        return {key: {name: n - told.get(key, {}).get(name, 0) for name, n in now[key].items()} for key in now}

    async def _run(self, job: Job) -> Any:
        task = asyncio.current_task()
        assert task is not None

        def cancel() -> None:  # the driver cancelled the case: stop it as an interrupt stops a local one
            self.runner.interrupt("SIGINT")
            task.cancel()

        handled = False
        with contextlib.suppress(ValueError, RuntimeError):  # not the main thread: no handler
            self.loop.add_signal_handler(signal.SIGINT, cancel)
            handled = True
        try:
            return await self.runner.run_one(job)
        except CaseCancelled as cancelled:
            return cancelled.result
        finally:
            self.runner.interrupt(None)  # the worker's next case is a case like any other
            if handled:
                self.loop.remove_signal_handler(signal.SIGINT)

    def close(self) -> None:
        """Close the targets and the model client, then the loop."""
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(self.runner.project.aclose())
            if self.runner.models is not None:
                self.loop.run_until_complete(self.runner.models.aclose())
        self.loop.close()
