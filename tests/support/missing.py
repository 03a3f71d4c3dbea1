"""What a test needs and cannot find: a skip on a developer's machine, a failure in CI.

CI (``CI`` set to ``true``, ``1`` or ``yes``, as CI services do) installs everything the tests
need, so there a missing browser or plugin is a broken setup, never a silently skipped test.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when running in CI."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI must provide it)", pytrace=False)
    pytest.skip(reason)
