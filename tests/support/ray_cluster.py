"""One local Ray cluster for the test session (tests/conftest.py registers its fixture): its start
costs about 4 s of CPU, so the modules that run on a cluster (tests/test_ray_executor.py,
tests/test_ray_evidence.py) share it rather than each starting its own. It is started when
collection finishes (support/background.py) by a program of its own that joins it and waits to be
killed, so that its seconds of start-up overlap the tests before theirs; its processes die with
that program's session, at the session's end. Two CPUs: the executor's tests run two cases at
once and ask for both for one. No idle worker is started for that first driver: every task of a
specrun run asks for its project's runtime environment, which an idle worker without it cannot
take. ``joined`` joins it from the test process, as a program that had joined a cluster would
have it; each module joins and leaves it on its own."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import pytest

from .background import Job

PROGRAM = """
import signal, ray
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
         _system_config={"prestart_worker_first_driver": False})
print(ray.get_runtime_context().gcs_address, flush=True)
while True:
    signal.pause()
"""

CLUSTER = Job(None, "ray_cluster", lambda _: [sys.executable, "-c", PROGRAM], lasting=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Callable[[], str]]:
    """The session's cluster, as a function returning its address once it started (a fixture may
    do other work first, while it starts)."""
    yield lambda: CLUSTER.first_line(timeout=120)
    CLUSTER.stop()


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
