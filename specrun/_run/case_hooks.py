"""Before/after hooks: ``module.Func`` resolved next to the suite, then in the agent's folders.

Signatures follow the seed (:data:`SIGNATURES`): ``before(ctx, case)`` returns data (or
``{"data": ...}``) that ``after(ctx, case, result, before_data)`` receives;
``BeforeAll(ctx, cases)`` and ``AfterAll(ctx, results, before_data)`` run once per run. Hooks
may be sync or async. A hook module is imported with the folder of each agent it may serve on
``sys.path``, so it can import the agent's own modules whatever ran (or was selected) before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.data import Case
from .._core.errors import UsageError
from .._project.imports import add_import_root, load_callable
from .blocking import run_blocking

if TYPE_CHECKING:
    from .._core.data import Agent

SIGNATURES = {
    "before": ("ctx", "case"),
    "after": ("ctx", "case", "result", "before_data"),
    "BeforeAll": ("ctx", "cases"),
    "AfterAll": ("ctx", "results", "before_data"),
}
"""The arguments each kind of hook is called with, in order."""


class HookExit(Exception):
    """A hook raised ``SystemExit`` or ``KeyboardInterrupt``: that hook failed, the run goes on."""


def case_hook_dirs(case: Case, agent: Agent) -> list[Path]:
    """Where a case's hooks are looked for: next to its suite, then in the agent's folders."""
    dirs = [*([case.suite.base_dir] if case.suite is not None else []), *agent.hook_dirs]
    return list(dict.fromkeys(dirs))


def load_hook(kind: str, ref: str, search: Iterable[Path], agents: Iterable[Agent]) -> Callable[..., Any]:
    """The ``kind`` hook ``ref`` (a key of :data:`SIGNATURES`), imported with every agent's
    folder on ``sys.path``; a ``UsageError`` when it is missing or takes other arguments."""
    for folder in dict.fromkeys(agent.base_dir for agent in agents):
        add_import_root(folder)
    func = load_callable(ref, search)
    expected = f"{kind}({', '.join(SIGNATURES[kind])})"
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # nothing to check (a builtin): the call will tell
        return func
    try:
        signature.bind(*SIGNATURES[kind])
    except TypeError:
        raise UsageError(f"{ref}{signature} cannot be a {kind} hook: a {kind} hook takes {expected}") from None
    return func


def check_case_hooks(case: Case, agent: Agent) -> Iterator[tuple[str, UsageError]]:
    """``(field, error)`` for each of the case's hooks that cannot be found or called (imports its module)."""
    for field in ("before", "after"):
        ref = getattr(case, field)
        if ref:
            try:
                load_hook(field, ref, case_hook_dirs(case, agent), [agent])
            except UsageError as exc:
                yield field, exc


async def call_hook(func: Callable[..., Any], *args: Any) -> Any:
    """Call the hook ``func`` with ``args``; a sync hook runs in a daemon thread."""
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
