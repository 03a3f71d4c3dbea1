"""The code stays lint-clean (ruff) and type-clean (mypy on the engine and the first-party plugins)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_ruff_is_clean():
    proc = subprocess.run(
        [BIN / "ruff", "check", "specrun", "plugins", "tests", "bench", "suites", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean():
    proc = subprocess.run(
        [BIN / "mypy", "specrun", "plugins/specrun_plugins"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
