"""Before/after hooks: ``module.Func`` resolved next to the suite, then in the agent's folders.

Signatures follow the seed: ``Before(ctx, case)`` returns data (or ``{"data": ...}``) that
``After(ctx, case, result, before_data)`` receives; ``BeforeAll(ctx, cases)`` and
``AfterAll(ctx, results, before_data)`` run once per run. Hooks may be sync or async.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .blocking import run_blocking
from .errors import UsageError
from .imports import load_callable
from .model import Case

if TYPE_CHECKING:
    from .project import Agent


class HookExit(Exception):
    """A hook raised ``SystemExit`` or ``KeyboardInterrupt``: that hook failed, the run goes on."""


def case_hook_dirs(case: Case, agent: Agent) -> list[Path]:
    """Where a case's hooks are looked for: next to its suite, then in the agent's folders."""
    dirs = [*([case.suite.base_dir] if case.suite is not None else []), *agent.hook_dirs]
    return list(dict.fromkeys(dirs))


def check_case_hooks(case: Case, agent: Agent) -> Iterator[tuple[str, UsageError]]:
    """``(field, error)`` for each of the case's hooks that cannot be found (imports its module)."""
    for field in ("before", "after"):
        ref = getattr(case, field)
        if ref:
            try:
                load_callable(ref, case_hook_dirs(case, agent))
            except UsageError as exc:
                yield field, exc


async def call_hook(ref: str, search: Iterable[Path], *args: Any) -> Any:
    """Call the hook ``ref`` with ``args``; a sync hook runs in a daemon thread."""
    func = load_callable(ref, search)
    try:
        if inspect.iscoroutinefunction(func):
            result = await func(*args)
        else:
            result = await run_blocking(func, *args)
    except (SystemExit, KeyboardInterrupt) as exc:  # the user's Ctrl-C reaches the runner as a signal
        raise HookExit(f"{type(exc).__name__}({exc})") from None
    if isinstance(result, dict) and set(result) == {"data"}:
        return result["data"]
    return result
