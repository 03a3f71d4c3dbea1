"""How a run runs: the one settings object (``RunOptions``) the CLI fills from its flags, the
session completes from ``specrun.yaml``, and the runner, the executors and their workers read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._core.data import DEFAULT_TIMEOUT

INTERRUPT_GRACE = 5.0
"""Seconds an ``after`` hook or AfterAll still gets once the run is interrupted, unless
``interrupt_grace`` in ``specrun.yaml`` says otherwise."""


@dataclass
class RunOptions:
    """How to run: the CLI flags that shape scheduling and the case environment."""

    parallel: int = 1
    timeout: float = DEFAULT_TIMEOUT
    interrupt_grace: float = INTERRUPT_GRACE  # seconds hooks and cases in flight get after the first signal
    runs: int = 1
    fail_fast: bool = False
    user: str | None = None
    team: str | None = None
    locale: str | None = None
    extra_context: dict[str, Any] = field(default_factory=dict)  # --ctx, less the environment's fields
    environment: dict[str, str] = field(default_factory=dict)  # --ctx values of the environment's fields
    before_all: str | None = None
    after_all: str | None = None
    connector: str | None = None
    simulator: str | None = None
    min_pass_rate: float | None = None
    update_snapshots: bool = False
    no_cache: bool = False  # --no-cache: a worker elsewhere builds its model client without the cache
    executor: str = "local"  # where cases execute (an Executor plugin)
    executor_options: dict[str, Any] = field(default_factory=dict)  # specrun.yaml's executor: mapping
