"""A local Ray cluster for a test module: started when collection finishes (support/background.py)
by a program of its own that joins it and waits to be killed, so that its seconds of start-up
overlap the tests before the module's; its processes die with that program's session. No idle
worker is started for that first driver: every task of a specrun run asks for its project's
runtime environment, which an idle worker without it cannot take. ``joined`` joins it from the
test process, as a program that had joined a cluster would have it (tests/test_ray_executor.py
starts its own the same way)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import pytest

from .background import Job

PROGRAM = """
import signal, ray
ray.init(address="local", num_cpus={cpus}, include_dashboard=False, log_to_driver=False,
         _system_config={{"prestart_worker_first_driver": False}})
print(ray.get_runtime_context().gcs_address, flush=True)
while True:
    signal.pause()
"""


def cluster_job(module: str, fixture: str, cpus: int) -> Job:
    """The program that starts a ``cpus``-CPU cluster for ``fixture`` of ``module`` and prints its address."""
    return Job(module, fixture, lambda _: [sys.executable, "-c", PROGRAM.format(cpus=cpus)])


@contextlib.contextmanager
def joined(address: str) -> Iterator[None]:
    """This process joined to the cluster at ``address`` (Ray imported here: half a second)."""
    import ray
    from ray._raylet import Config

    with pytest.MonkeyPatch.context() as patch:
        # A local cluster takes a token (in ~/.ray). ray.init(address="local") turns token mode
        # on for its process (read once, at import: hence the refresh, as ray does it) and those
        # it starts; joining by address does not.
        patch.setenv("RAY_AUTH_MODE", "token")
        Config.initialize("")
        ray.init(address=address, log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()
