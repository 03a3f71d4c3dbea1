"""Settings every test starts from."""

from __future__ import annotations

import atexit
import compileall
import contextlib
import gc
import importlib
import os
import sys
import threading
from pathlib import Path

import pytest
from support import background, fresh_run
from support.ray_cluster import ray_cluster  # noqa: F401  (the session's one Ray cluster, for every module)

from specrun._models import litellm_route as providers

_REPO = Path(__file__).resolve().parents[1]

# The pytest runs tests start (pytester's and child processes) skip langsmith's plugin too: it
# comes with langchain-core and imports 1.2 s of langsmith into every pytest start. And anyio's,
# as pyproject.toml's addopts do (their projects have none): its trio backend was imported and
# its assertions rewritten again for each.
SKIPPED_PLUGINS = "-p no:langsmith_plugin -p no:anyio"
os.environ["PYTEST_ADDOPTS"] = " ".join(filter(None, [os.environ.get("PYTEST_ADDOPTS"), SKIPPED_PLUGINS]))

# What the tests leave (litellm's modules among them) dies with the process; frozen as it exits,
# it is not swept first: 4 s at the end of every test process that imported litellm.
atexit.register(gc.freeze)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile specrun's own modules once, as a user's first run does. With bytecode writing off
    (PYTHONDONTWRITEBYTECODE, which sandboxes set), every ``specrun`` a test starts compiled
    all of them again from source: about 0.3 s of each start."""
    if sys.dont_write_bytecode:
        for folder in ("specrun", "plugins", "schemas"):
            compileall.compile_dir(_REPO / folder, quiet=2)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the slow setup the selected tests will read (tests/support/background.py), so that
    it runs on the second core while the tests before them run; the fresh run that imports
    litellm (tests/support/fresh_run.py) too."""
    # The session's base temporary folder, made here: made first by the background thread and
    # a test's tmp_path at once, pytest made two and refused the background's mktemp.
    session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    background.start_wanted(session, first=lambda: fresh_run.start_if_selected(session))
    tests = [item for item in session.items if isinstance(item, pytest.Function)]
    litellm = any(getattr(item.module, "IMPORTS_LITELLM", False) for item in tests)
    # The frameworks the selected tests' modules import (their PRELOADS), in the order they run.
    frameworks = list(dict.fromkeys(name for item in tests for name in getattr(item.module, "PRELOADS", ())))
    if litellm or frameworks:
        # This process imports litellm (3 s) and these frameworks (0.4-1 s each) for these
        # tests anyway: in a background thread (litellm's in specrun's own, as a run that needs
        # a model does) they are imported while the tests wait for their processes and servers.
        # The collector waits for them: each full collection during the imports walked all
        # they had made so far, 2-4 s in all. Imported, what they made is swept once and frozen.
        gc.disable()
        if litellm:
            providers.preload()
        threading.Thread(target=_import_then_freeze, args=(frameworks,), name="preload", daemon=True).start()


def _import_then_freeze(frameworks: list[str]) -> None:
    thread = providers._preload_thread
    if thread is not None:
        thread.join()
    for name in frameworks:
        with contextlib.suppress(Exception):  # a test that imports it sees the error itself
            importlib.import_module(name)
    gc.collect()
    gc.freeze()
    gc.enable()


_module: list[object] = []  # the module of the test that ran last


def pytest_runtest_setup(item: pytest.Item) -> None:
    """As each test module starts, what the modules before it left alive is swept once and put
    out of the collector's sight (``gc.freeze``). Imported frameworks (litellm, agents, ray,
    LangGraph) are millions of tracked objects, and each full collection the tests trigger
    walked them all: 30 of them took 12 s of a serial run. Frozen, a collection walks only what
    the current module made; sweeping first keeps the garbage left before from being frozen."""
    module = getattr(item, "module", None)
    if _module != [module]:
        _module[:] = [module]
        gc.collect()
        gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    background.stop_all(session)


@pytest.fixture(autouse=True)
def _not_in_a_github_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs tests make are not the job's: when the test suite itself runs on GitHub Actions,
    the cases tests fail on purpose must not become annotations or the job's summary
    (tests/test_ci_annotations.py sets these variables for its own runs)."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own, with langsmith's and anyio's plugins left out of the runs it makes as above: pytester
    clears PYTEST_ADDOPTS, and each run (xdist's workers too) then imported langsmith again.
    What is alive is frozen first: an in-process run ends with pytest's own full collections."""
    monkeypatch.setenv("PYTEST_ADDOPTS", SKIPPED_PLUGINS)
    gc.freeze()
    return pytester
