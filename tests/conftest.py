"""Settings every test starts from."""

from __future__ import annotations

import atexit
import gc

import pytest

# What the tests leave (litellm's modules among them) dies with the process; frozen as it exits,
# it is not swept first: 4 s at the end of every test process that imported litellm.
atexit.register(gc.freeze)


@pytest.fixture(autouse=True)
def _not_in_a_github_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs tests make are not the job's: when the test suite itself runs on GitHub Actions,
    the cases tests fail on purpose must not become annotations or the job's summary
    (tests/test_ci_annotations.py sets these variables for its own runs)."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
