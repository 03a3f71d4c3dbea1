"""The ``local`` executor: every case on this process's event loop (the default).

Registered through register_executors (see this package).
"""

from __future__ import annotations

from specrun.plugin import Executor, Job, Result


class LocalExecutor(Executor):
    """Runs each case in this process, ``--parallel`` at once on one event loop."""

    name = "local"
    description = "Runs cases in this process, --parallel at once on one event loop (the default)."

    async def run(self, job: Job) -> Result:
        return await self.host.run_one(job)
