"""The ``ray`` executor: each case as a Ray task on a cluster (``pip install 'specrun[ray]'``).

Registered through register_executors (see this package). The cluster is ``address:`` in
``specrun.yaml``'s ``executor:`` mapping, else ``RAY_ADDRESS``, else a local one started for
the run (``num_cpus:`` caps it). The project folder travels to the workers as the runtime
environment's ``working_dir`` (with the variables of ``_forwarded_env``), the run itself once
through the object store (``host.remote_run(jobs)``), and each case as a task that
asks for its agent's ``resources`` (``num_cpus`` 1 unless the agent file says, ``num_gpus``,
``memory``, custom resources). A worker runs the case as the local executor would and sends
back its sealed result, with what its cases added to the run summary (the spans their traces
counted: ``host.add_summary``); the driver's runner reports it as its own. A task is never retried
(a case must not call a paid agent twice unseen); a worker that dies makes its case an error.
Cancelling a case (``--fail-fast``, Ctrl-C) cancels its task: Ray interrupts the worker, the
case stops there and its ``after`` hook runs, and the driver waits for that up to the run's
``interrupt_grace`` (``RunOptions``, shipped to the workers with the run).

``--update-snapshots`` is refused before anything runs: a worker's snapshots would be written
into its copy of the project, never into the user's files. So is ``traces: otel`` with a fixed
receiver port (by the engine, for any executor but ``local``): each worker serves its own
cases' mocked tools and listens for their spans, and workers cannot share one port.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import (
    CaseCancelled,
    Executor,
    ExecutorHost,
    Job,
    Result,
    UsageError,
    shorten,
)

# Never shipped: version control, environments, specrun's own state, caches, earlier outputs.
EXCLUDES = [".git", ".venv", "venv", ".specrun", "node_modules", "__pycache__", ".mypy_cache", "output-*.jsonl"]
# The environment a model call needs (keys, endpoints) and specrun's own settings.
FORWARDED_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_VERSION")


def _forwarded_env(names: list[str]) -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k in names or k.startswith("SPECRUN_") or k.endswith(FORWARDED_SUFFIXES)
    }


class RayExecutor(Executor):
    """Runs each case as a Ray task; see the module docstring."""

    name = "ray"
    description = "Runs each case as a Ray task on a cluster (RAY_ADDRESS or address:, else a local one)."
    copies_project = True  # the workers run in a copy: --update-snapshots is refused before anything runs
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "address": {"type": "string", "description": "The cluster (default: RAY_ADDRESS, else a local one)."},
            "num_cpus": {"type": "integer", "minimum": 1, "description": "CPUs of the local cluster started."},
            "env": {"type": "array", "items": {"type": "string"}, "description": "More variables to forward."},
            "runtime_env": {"type": "object", "description": "Merged into the workers' runtime environment."},
        }
    }

    def __init__(self, host: ExecutorHost, options: dict[str, Any]):
        super().__init__(host, options)  # checked against params_schema with specrun.yaml
        if importlib.util.find_spec("ray") is None:
            raise UsageError("the ray executor needs Ray: pip install 'specrun[ray]'")
        self._owned = False  # we started or joined the cluster, and leave it at the end
        self._env: dict[str, Any] | None = None  # per task, when the process had joined a cluster already
        self._box: list[Any] = []
        self._cases: dict[int, int] = {}
        self._agents: dict[int, int] = {}
        self._remotes: dict[int, Any] = {}
        self._cpus = 1

    def _runtime_env(self) -> dict[str, Any]:
        extra = dict(self.options.get("runtime_env") or {})
        env = {
            "working_dir": str(self.host.root),
            **extra,
            "excludes": [*EXCLUDES, *extra.get("excludes", [])],
            "env_vars": {**_forwarded_env(list(self.options.get("env") or [])), **extra.get("env_vars", {})},
        }
        return env

    async def start(self, jobs: list[Job]) -> None:
        import ray

        env = self._runtime_env()
        if ray.is_initialized():  # a program (or a test) that had joined a cluster: ship per task
            self._env = _uploaded(env)
        else:
            address = self.options.get("address") or os.environ.get("RAY_ADDRESS") or "local"
            kwargs: dict[str, Any] = {"address": address, "runtime_env": env, "include_dashboard": False}
            if address == "local" and self.options.get("num_cpus"):
                kwargs["num_cpus"] = self.options["num_cpus"]
            try:
                ray.init(**kwargs, log_to_driver=False, logging_level=logging.ERROR)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UsageError(f"ray executor: cannot join the cluster at {address}: {exc}") from None
            self._owned = True
        try:
            _check_resources(jobs, ray.cluster_resources())
        except UsageError:
            await self.close()
            raise
        run = self.host.remote_run(jobs)
        self._cases, self._agents = run.indexes()
        self._box = [ray.put(run)]  # in a list: a task gets the reference, and fetches the run once per worker
        self._cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def parallel(self) -> int:
        """As many cases in flight as the cluster has CPUs (Ray queues what does not fit)."""
        return self._cpus

    def _remote(self, job: Job) -> Any:
        remote = self._remotes.get(id(job.agent))
        if remote is None:
            import ray

            wanted = dict(job.agent.resources)
            options: dict[str, Any] = {"num_cpus": wanted.pop("num_cpus", 1), "max_retries": 0}
            for key in ("num_gpus", "memory"):
                if key in wanted:
                    options[key] = wanted.pop(key)
            if wanted:
                options["resources"] = wanted
            if self._env is not None:
                options["runtime_env"] = self._env
            remote = self._remotes[id(job.agent)] = ray.remote(run_case).options(**options)
        return remote

    async def run(self, job: Job) -> Result:
        import ray

        started = time.perf_counter()
        case, agent = self._cases[id(job.case)], self._agents[id(job.agent)]
        ref = self._remote(job).remote(self._box, case, agent, job.run, job.flaky)
        try:
            record, line, part = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)  # a SIGINT in the worker: the case stops there as if interrupted, its after hook runs
            grace = self.host.interrupt_grace
            with contextlib.suppress(Exception, asyncio.CancelledError):
                record, line, part = await asyncio.wait_for(asyncio.shield(ref.as_future()), grace)
                self.host.add_summary(part)
                if self.host.interrupted:  # the worker's interrupted result, after hook and all
                    raise CaseCancelled(self._received(job, record, line)) from None
            raise CaseCancelled(self.host.cancelled(job, _ms(started))) from None
        except ray.exceptions.RayError as exc:  # the worker died, or could not be set up
            result = Result(
                job.case, "error", run=job.run, error=f"ray: {type(exc).__name__}: {shorten(str(exc), 500)}"
            )
            result.context = self.host.context_for(job.case, job.run)
            result.duration_ms = _ms(started)
            result.seal()
            return result
        self.host.add_summary(part)  # the spans its traces counted on the worker, for the run's summary
        return self._received(job, record, line)

    def _received(self, job: Job, record: dict[str, Any], line: str) -> Result:
        result = Result.received(job.case, record, line)
        result.context = self.host.context_for(job.case, job.run)
        return result

    async def close(self) -> None:
        import ray

        self._box.clear()
        if self._owned and ray.is_initialized():
            ray.shutdown()


_RAY_NAMES = {"num_cpus": "CPU", "num_gpus": "GPU"}


def _check_resources(jobs: list[Job], cluster: dict[str, float]) -> None:
    """A case asking for more than the whole cluster has would wait for ever: bad input."""
    for agent in {id(j.agent): j.agent for j in jobs}.values():
        for key, wanted in {"num_cpus": 1, **agent.resources}.items():
            have = cluster.get(_RAY_NAMES.get(key, key), 0.0)
            if wanted > have:
                has = f"{have:g}" if have else "none"
                raise UsageError(
                    f"agent {agent.id!r} asks for {key} {wanted:g} per case; the cluster has {has}"
                    f" (resources in {agent.path or 'its agent file'})"
                )


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _uploaded(env: dict[str, Any]) -> dict[str, Any]:
    """``env`` with its local ``working_dir`` uploaded to the cluster, as ``ray.init`` does it for
    a job (a task's runtime environment takes only the URI Ray gives the upload)."""
    from ray._private.runtime_env.working_dir import upload_working_dir_if_needed

    upload: Any = upload_working_dir_if_needed  # private, and its signature moves between versions
    # The zip is built in scratch_dir, by default the working folder: inside the project it packs,
    # it packs itself while it grows (it filled the disk, 75 GB). A folder of its own instead.
    with tempfile.TemporaryDirectory(prefix="specrun-ray-") as scratch:
        try:
            return dict(upload(dict(env), include_gitignore=True, scratch_dir=scratch))
        except TypeError:  # Ray before 2.45 has no include_gitignore
            return dict(upload(dict(env), scratch_dir=scratch))


_WORKER: list[Any] = []  # [run key, its worker]: the run this worker process serves


def run_case(box: list[Any], case: int, agent: int, run: int, flaky: bool) -> tuple[dict[str, Any], str, Any]:
    """The Ray task: run one job of the shipped run here, in the project's copy (the working
    directory Ray made from ``working_dir``); its record, JSON line and the worker's part of the
    run summary since its last job."""
    import ray

    key = box[0].hex()
    if not _WORKER or _WORKER[0] != key:
        if _WORKER:
            _WORKER[1].close()
        _WORKER[:] = [key, ray.get(box[0]).worker(Path.cwd().resolve())]
    record, line = _WORKER[1].run(case, agent, run, flaky)
    return record, line, _WORKER[1].summary()
