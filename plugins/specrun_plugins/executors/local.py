"""The ``local`` executor: every case on this process's event loop (the default).

Registered through register_executors (see this package).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from specrun.plugin import Executor, Job, Result


class LocalExecutor(Executor):
    """Runs each case in this process, ``--parallel`` at once on one event loop."""

    name = "local"
    description = "Runs cases in this process, --parallel at once on one event loop (the default)."

    def run(self, job: Job) -> Coroutine[Any, Any, Result]:
        # the host's coroutine itself, awaited by the runner: no coroutine of its own per case
        return self.host.run_one(job)
