"""The model cache on disk, and single-flight: no question is asked twice when once will do.

One JSON file per entry, keyed by a SHA-256 of everything that shapes the answer (built by
``specrun._models.client``, with :func:`endpoint_settings`); a torn or foreign file is a miss.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .._report.outputs import atomic_writer, private_folder

logger = logging.getLogger("specrun._models.client")

DEFAULT_CACHE_DIR = ".specrun-cache"
CACHE_FORMAT = 2  # 2: the key holds the endpoint

T = TypeVar("T")


@dataclass
class CacheTally:
    """The cacheable model calls of one case, and how many the cache answered."""

    calls: int = 0
    hits: int = 0

    @property
    def all_cached(self) -> bool:
        """The case asked the models something and every answer came from the cache."""
        return self.calls > 0 and self.hits == self.calls


CASE_TALLY: contextvars.ContextVar[CacheTally | None] = contextvars.ContextVar("specrun_case_tally", default=None)
"""The running case's tally: set by the runner around each case, counted by the model client."""


class DiskCache:
    """One JSON file per entry under ``root`` (sharded by the key's first two hex digits)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    @staticmethod
    def key(material: Mapping[str, Any]) -> str:
        text = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # a torn or foreign file: treat as a miss
            return None
        return data if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else None

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        path = self._path(key)
        try:
            private_folder(self.root)
            with atomic_writer(path, durable=False) as fh:  # run on the event loop: no fsync wait
                json.dump({"format": CACHE_FORMAT, **entry}, fh, ensure_ascii=False, default=str)
        except OSError as exc:  # a read-only checkout must not fail the run
            logger.warning("cannot write model cache entry %s: %s", path, exc)

    def discard(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


# Environment settings that choose where litellm sends a call (OPENAI_API_BASE, AZURE_API_BASE,
# AZURE_API_VERSION, AWS_REGION_NAME, VERTEXAI_LOCATION, ...): another server's answer is
# another answer, so they are part of the cache key. Keys are not: the same endpoint and model
# answer the same whoever pays.
_ENDPOINT_ENV = re.compile(r"_(API_BASE|BASE_URL|ENDPOINT|API_VERSION|REGION|REGION_NAME|LOCATION|PROJECT)$")


def endpoint_settings() -> dict[str, str]:
    """The environment settings that choose where a call goes (see above)."""
    return {name: value for name, value in sorted(os.environ.items()) if _ENDPOINT_ENV.search(name)}


class SingleFlight(Generic[T]):
    """Work under one key runs once at a time: callers that come while it runs get its result.

    ``run(key, work)`` returns ``(result, shared)``; ``shared`` is True for the callers that
    waited. A failure reaches every waiting caller; if the caller doing the work is cancelled,
    the next one waiting does it.
    """

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[tuple[T | None, BaseException | None]]] = {}

    async def run(self, key: str, work: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        while (running := self._running.get(key)) is not None:
            result, error = await asyncio.shield(running)
            if error is not None:
                raise error
            if result is not None:
                return result, True
        outcome: tuple[T | None, BaseException | None] = (None, None)  # stays so if cancelled
        self._running[key] = future = asyncio.get_running_loop().create_future()
        try:
            result = await work()
            outcome = (result, None)
            return result, False
        except Exception as exc:
            outcome = (None, exc)
            raise
        finally:
            del self._running[key]
            future.set_result(outcome)
