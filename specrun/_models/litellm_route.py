"""litellm as specrun uses it: imported lazily, its answers' usage and its errors read.

litellm takes seconds to import (and half a second more on its first call), so it is imported
and warmed up on first use, or earlier in a background thread (:func:`preload`). Before
importing it, ``LITELLM_LOCAL_MODEL_COST_MAP`` and ``LITELLM_MODE=PRODUCTION`` are set unless the
user set them: no cost-map download and no ``.env`` loading behind the user's back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from .._core.data import Usage
from .._core.errors import EvaluationError
from .limiter import retry_after as header_retry_after

logger = logging.getLogger("specrun._models.client")

# -- the lazy litellm import ------------------------------------------------------------------

_litellm: Any = None
_import_lock = threading.Lock()
_preload_thread: threading.Thread | None = None


def _import_litellm() -> Any:
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
            try:
                import litellm
            except ImportError as exc:  # pragma: no cover - litellm is a dependency
                raise EvaluationError(f"model calls need litellm, which failed to import: {exc}") from exc
            litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner per error
            _warm_up(litellm)
            _litellm = litellm
    return _litellm


def _warm_up(litellm: Any) -> None:
    """Make one mock call (no request is sent): litellm imports dozens of its modules on its
    first call, half a second here, which would otherwise land in the first case's time."""
    try:
        ping = [{"role": "user", "content": "."}]
        litellm.completion(model="openai/specrun-warm-up", messages=ping, mock_response=".")
    except Exception:  # only a head start: a real call that fails reports its own error
        logger.debug("warming litellm up failed", exc_info=True)


def preload() -> None:
    """Start importing litellm in a background thread; the first model call waits for it.

    Call it as soon as a run is known to need a model. Calling it again does nothing.
    """
    global _preload_thread
    if _litellm is not None or _preload_thread is not None:
        return

    def run() -> None:
        try:
            _import_litellm()
        except Exception:  # the first call imports again and reports the error
            logger.debug("preloading litellm failed", exc_info=True)

    _preload_thread = threading.Thread(target=run, name="specrun-litellm-import", daemon=True)
    _preload_thread.start()


async def load_litellm() -> Any:
    """The litellm module, imported off the event loop if it is not imported yet."""
    if _litellm is not None:
        return _litellm
    thread = _preload_thread
    if thread is not None:
        await asyncio.to_thread(thread.join)
        if _litellm is not None:
            return _litellm
    return await asyncio.to_thread(_import_litellm)


def imported() -> bool:
    """Whether litellm is imported already."""
    return _litellm is not None


async def close_loop_clients() -> None:
    """Close litellm's pooled HTTP clients of the running event loop, and drop them from its cache.

    litellm caches a client per event loop and hands it to every later call of that loop: a
    closed one left in the cache fails them all ("the client has been closed"). Clients of
    other loops (a worker thread's, the pytest session's) are left alone, in use or not.
    """
    if _litellm is None:
        return
    try:
        from litellm.caching.evicted_client_closer import running_loop_token

        cache = _litellm.in_memory_llm_clients_cache
        suffix = f"-{running_loop_token()}"
        mine = [key for key in list(cache.cache_dict) if isinstance(key, str) and key.endswith(suffix)]
    except Exception:  # another litellm layout: leave its clients to its own exit cleanup
        logger.debug("finding litellm's clients failed", exc_info=True)
        return
    for key in mine:
        with getattr(cache, "_write_lock", None) or contextlib.nullcontext():  # other threads use the cache
            client = cache.cache_dict.pop(key, None)
            cache.ttl_dict.pop(key, None)
        close = getattr(client, "aclose", None) or getattr(client, "close", None)
        try:
            done = close() if callable(close) else None
            if asyncio.iscoroutine(done) or isinstance(done, asyncio.Future):
                await done
        except Exception:  # cleanup is best effort
            logger.debug("closing a litellm client failed", exc_info=True)


# -- reading its answers and errors -----------------------------------------------------------


def response_usage(litellm: Any, response: Any) -> Usage:
    """The tokens and cost of one litellm answer (cost None when the model has no known price)."""
    usage = getattr(response, "usage", None)
    result = Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        total_tokens=int(getattr(usage, "total_tokens", 0) or 0),
    )
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else getattr(hidden, "response_cost", None)
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown model: no price known
            cost = None
    result.cost = float(cost) if cost is not None else None
    return result


def _headers(exc: BaseException) -> Mapping[str, str]:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers if headers is not None else {}


def error_retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait in the error's response headers, if it did."""
    return header_retry_after(_headers(exc))


def error_status(exc: BaseException) -> int | None:
    """The HTTP status of a provider error, if it has one."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retryable(exc: BaseException) -> bool:
    """Whether a failed call is worth another try: timeouts, dropped connections, 408, 429, 5xx."""
    if isinstance(exc, TimeoutError):
        return True
    if _litellm is not None and isinstance(exc, _litellm.Timeout | _litellm.APIConnectionError):
        return True
    status = error_status(exc)
    return status is not None and (status in (408, 429) or status >= 500)


def describe_error(exc: BaseException, timeout: float) -> str:
    """A one-line description of a failed call, for the error and the log."""
    if isinstance(exc, TimeoutError) or type(exc).__name__ == "Timeout":
        return f"timed out after {timeout:g}s"
    text = " ".join(str(exc).split())
    status = error_status(exc)
    label = f"HTTP {status}" if status else type(exc).__name__
    return f"{label}: {text[:500]}"
