"""Settings every test starts from."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Where the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, as some
    sandboxes set), every process a test starts (``specrun`` runs, fresh interpreters for import
    checks, xdist's workers) would compile specrun and its plugins anew: 0.1-0.2 s of CPU each,
    a few hundred times per run. They cache it in a temporary folder instead, never in the
    checkout; what they import and do is the same."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "specrun-tests-pycache")


@pytest.fixture(autouse=True)
def _not_in_a_github_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs tests make are not the job's: when the test suite itself runs on GitHub Actions,
    the cases tests fail on purpose must not become annotations or the job's summary
    (tests/test_ci_annotations.py sets these variables for its own runs)."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
