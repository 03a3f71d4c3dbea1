"""The code stays lint-clean (ruff) and type-clean (mypy on the engine and the first-party plugins).

Both checkers start when collection finishes (tests/support/background.py): mypy takes 4 s
without its cache, as in a clean clone, which the tests before these then overlap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.background import Job

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

RUFF = Job(
    __name__,
    "ruff",
    lambda _: [BIN / "ruff", "check", "specrun", "plugins", "tests", "bench", "suites", "examples"],
    cwd=ROOT,
)
MYPY = Job(__name__, "mypy", lambda _: [BIN / "mypy", "specrun", "plugins/specrun_plugins"], cwd=ROOT)


@pytest.fixture
def ruff() -> subprocess.CompletedProcess[str]:
    return RUFF.result()


@pytest.fixture
def mypy() -> subprocess.CompletedProcess[str]:
    return MYPY.result()


def test_ruff_is_clean(ruff: subprocess.CompletedProcess[str]) -> None:
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr


def test_mypy_is_clean(mypy: subprocess.CompletedProcess[str]) -> None:
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr
