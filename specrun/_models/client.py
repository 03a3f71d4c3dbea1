"""The one place that calls model providers: retries, cache, cost.

Every backend is reached through litellm, except that a call litellm would pass unchanged to an
OpenAI-compatible backend goes the direct route (:mod:`specrun._models.direct_route`), with the same request,
usage, cost and errors for a fraction of the CPU. litellm is imported lazily
(:mod:`specrun._models.litellm_route`) and only when a call needs it; the runner waits for it
(:meth:`ModelClient.ready`) before a model-backed case's clock starts.

Retries are specrun's (litellm's own are off): 408, 429 (honouring ``retry-after``), 5xx,
timeouts and dropped connections are retried with exponential back-off and jitter. Judge,
simulator and generator calls are cached on disk, one JSON file per call, keyed on everything
that shapes the answer (the endpoint included), the run index and the judge's sample index, so
``--runs 5`` asks five times; identical cacheable calls in flight at once are made once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .._core.data import Message, Usage
from .._core.errors import EvaluationError
from .._core.redact import redact, register
from .._core.services import Parsed
from .cache import CACHE_FORMAT, CASE_TALLY, DEFAULT_CACHE_DIR, DiskCache, SingleFlight, endpoint_settings
from .completions import Completion, from_entry, from_json, from_litellm
from .direct_route import DirectClient, route
from .embeddings import Embeddings, embedding_usage, vectors_of
from .limiter import Limiters
from .litellm_route import (
    close_loop_clients,
    describe_error,
    error_retry_after,
    error_status,
    imported,
    load_litellm,
    preload,
    response_usage,
    retryable,
)
from .wire import openai_messages

logger = logging.getLogger("specrun._models.client")

MODEL_ENV = "SPECRUN_MODEL"
DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
_MAX_WAIT = 120.0  # longest retry-after honoured; a longer one is capped

T = TypeVar("T")

# -- results ----------------------------------------------------------------------------------


class ModelError(EvaluationError):
    """A model call failed for good (after retries); the message never holds an API key."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.attempts = attempts


# -- the client -------------------------------------------------------------------------------

_SECRET_PARAMS = ("api_key", "azure_ad_token", "aws_secret_access_key", "vertex_credentials")
_DEFAULT_TEMPERATURE = {"judge": 0.0}
# Chat settings in model_params that an embeddings endpoint does not take.
_NOT_FOR_EMBEDDINGS = ("temperature", "max_tokens", "top_p", "seed", "response_format", "tools", "stop")


class ModelClient:
    """Model calls for a run: default model, retries, per-call timeout, disk cache, totals.

    ``default_model`` (else ``$SPECRUN_MODEL``) serves every purpose without its own entry in
    ``models`` (``{"judge": ..., "simulator": ...}``). ``params`` are litellm keyword arguments
    sent with every call (``api_base``, ``max_tokens``, ...). ``cache_dir=None`` disables the
    cache; so does ``no_cache=True`` (``--no-cache``). ``usage``, ``calls``, ``cache_hits`` and
    ``retries`` are the run's totals.
    """

    def __init__(
        self,
        default_model: str | None = None,
        *,
        models: Mapping[str, str | None] | None = None,
        params: Mapping[str, Any] | None = None,
        cache_dir: Path | str | None = None,
        no_cache: bool = False,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        base_delay: float = 1.0,
        max_delay: float = 30.0,
    ):
        self.default_model = default_model
        self.models = {k: v for k, v in (models or {}).items() if v}
        self.params = dict(params or {})
        self.cache = DiskCache(cache_dir) if cache_dir is not None and not no_cache else None
        self.timeout = timeout
        self.retries = max(0, retries)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.usage = Usage()
        self.calls = 0
        self.cache_hits = 0
        self.retried = 0
        self.limiters = Limiters()  # per model: 429s halve the calls in flight to it
        self.endpoint = endpoint_settings()
        self.direct = DirectClient()
        self._wants_litellm: bool | None = None  # known from preload(), else from the client's models
        self._loading: asyncio.Future[Any] | None = None
        self._in_flight: SingleFlight[Completion] = SingleFlight()

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], root: Path, *, no_cache: bool = False, **kwargs: Any
    ) -> ModelClient:
        """A client from a project config (``specrun.yaml``) rooted at ``root``."""
        cache_dir = root / config.get("cache_dir", DEFAULT_CACHE_DIR)
        settings: dict[str, Any] = {
            "models": {
                "judge": config.get("judge_model"),
                "simulator": config.get("simulator_model"),
            },
            "params": config.get("model_params"),
            "cache_dir": cache_dir,
            "no_cache": no_cache,
        }
        if config.get("retries") is not None:
            settings["retries"] = config["retries"]
        return cls(config.get("model"), **{**settings, **kwargs})

    def model_for(self, purpose: str, model: str | None = None) -> str:
        """The model for ``purpose``: the override, its own, the default, ``$SPECRUN_MODEL``."""
        chosen = model or self.models.get(purpose) or self.default_model or os.environ.get(MODEL_ENV)
        if not chosen:
            raise EvaluationError(
                f"no model configured for the {purpose}: set `model` in specrun.yaml, "
                f"the {MODEL_ENV} environment variable, or `model` on the assertion"
            )
        return chosen

    def needs_litellm(self, uses: Iterable[tuple[str | None, Mapping[str, Any] | None]] = ()) -> bool:
        """Whether a call of this run may go through litellm rather than the direct route: a
        call to the client's own models, or one of ``uses``, the ``(model, params)`` that the
        run's suites and agents name (model None: the client's; params None: the client's)."""
        fallback = self.default_model or os.environ.get(MODEL_ENV)
        own = [m for p in ("judge", "simulator") if (m := self.models.get(p) or fallback)]
        calls: list[tuple[str, Mapping[str, Any]]] = [(m, self.params) for m in own]
        for model, params in uses:
            calls += [(m, self.params if params is None else params) for m in ([model] if model else own)]
        return any(route(m, [], p) is None for m, p in calls)

    def preload(self, uses: Iterable[tuple[str | None, Mapping[str, Any] | None]] = ()) -> None:
        """Start importing litellm in the background (:func:`preload`) if a call of this run may
        need it (:meth:`needs_litellm`). Each call adds to what the run needs."""
        self._wants_litellm = bool(self._wants_litellm) or self.needs_litellm(uses)
        if self._wants_litellm:
            preload()

    @property
    def settled(self) -> bool:
        """Whether ``ready`` would return at once for any case: the run needs no litellm, or it is
        imported (the runner then asks no case whether it calls a model)."""
        if self._wants_litellm is None:  # as ready() decides it
            self._wants_litellm = self.needs_litellm()
        return not self._wants_litellm or imported()

    async def ready(self) -> None:
        """Return once litellm is imported, or failed to import (importing it off the event
        loop if nobody has), when a call of this run may need it; the first model call then
        reports a failure as its own.

        The runner awaits this before it starts the clock of a case that calls a model, so that
        the import never counts against a case's timeout or duration.
        """
        if self._wants_litellm is None:
            self._wants_litellm = self.needs_litellm()
        if self._wants_litellm and not imported():
            if self._loading is None:  # one import wait for all the cases, not a thread each
                self._loading = asyncio.ensure_future(load_litellm())
            with contextlib.suppress(Exception):
                await asyncio.shield(self._loading)

    def summary(self) -> dict[str, Any]:
        """Run totals for the report: calls, cache hits, retries, tokens and cost."""
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "retries": self.retried,
            **self.usage.to_dict(),
        }

    async def complete(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        model: str | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
        purpose: str = "judge",
        run: int = 1,
        cache: bool = True,
        version: str = "",
        sample: int = 1,
    ) -> Completion:
        """Ask the model once (retrying transient failures) and return its answer.

        ``purpose`` picks the default model and temperature (0 for ``judge``); ``version``
        names the prompt template, so that changing a prompt invalidates its cache entries;
        ``run`` keeps the answers of each ``--runs`` index apart, ``sample`` those of each of
        a judge's samples (``samples: N``). Raises ``ModelError``.
        """
        chosen = self.model_for(purpose, model)
        chat = openai_messages(messages)
        kwargs = {**self.params, **(params or {})}
        if temperature is None and "temperature" not in kwargs:
            temperature = _DEFAULT_TEMPERATURE.get(purpose)
        if temperature is not None:
            kwargs["temperature"] = temperature
        if tools:
            kwargs["tools"] = tools
        secrets = [str(kwargs[k]) for k in _SECRET_PARAMS if kwargs.get(k)]
        for param in _SECRET_PARAMS:  # masked in every output from now on, not only in this call's errors
            if kwargs.get(param):
                register(str(kwargs[param]), param)

        if not (cache and self.cache is not None):
            return await self._ask(chosen, chat, kwargs, json_mode, purpose, secrets, None)
        public = {k: v for k, v in kwargs.items() if k not in _SECRET_PARAMS}
        material = {
            "format": CACHE_FORMAT,
            "model": chosen,
            "messages": chat,
            "params": public,
            "endpoint": self.endpoint,
            "json": json_mode,
            "version": version,
            "purpose": purpose,
            "run": run,
        }
        if sample != 1:  # sample 1 is the call a judge of one sample makes: its answer is reused
            material["sample"] = sample
        key = self.cache.key(material)
        answer = from_entry(self.cache.get(key), chosen, key)
        if answer is not None:
            self.cache_hits += 1
        else:
            answer = await self._single_flight(
                key, lambda: self._ask(chosen, chat, kwargs, json_mode, purpose, secrets, key)
            )
        if (tally := CASE_TALLY.get()) is not None:  # the case's result says when all it asked was cached
            tally.calls += 1
            tally.hits += answer.cached
        return answer

    async def embed(
        self, texts: list[str], *, model: str, params: Mapping[str, Any] | None = None, cache: bool = True
    ) -> Embeddings:
        """The embedding of each of ``texts`` by ``model`` (a litellm embedding model), retried and
        cached on disk like a judge's call (an embedding does not change from run to run, so the
        run index is not in its key). Raises ``ModelError``."""
        kwargs = {k: v for k, v in {**self.params, **(params or {})}.items() if k not in _NOT_FOR_EMBEDDINGS}
        secrets = [str(kwargs[k]) for k in _SECRET_PARAMS if kwargs.get(k)]
        public = {k: v for k, v in kwargs.items() if k not in _SECRET_PARAMS}
        material = {
            "format": CACHE_FORMAT,
            "embedding": model,
            "input": texts,
            "params": public,
            "endpoint": self.endpoint,
        }
        key = self.cache.key(material) if cache and self.cache is not None else None
        entry = self.cache.get(key) if key is not None and self.cache is not None else None
        if entry is not None and isinstance(entry.get("vectors"), list) and len(entry["vectors"]) == len(texts):
            self.cache_hits += 1
            return Embeddings(entry["vectors"], cached=True)
        direct = route(model, [], kwargs)  # an OpenAI-compatible backend: no litellm, as for completions
        if direct is not None:
            response, _ = await self._call(
                lambda p: self.direct.embed(direct, texts, p), model, kwargs, "embedding", secrets
            )
            usage = embedding_usage(response, direct.model)
        else:
            litellm = await load_litellm()
            # litellm 1.x reads max_retries=0 as its default (2) for OpenAI embeddings
            # (`max_retries or DEFAULT_MAX_RETRIES`), so an attempt there may be three requests.
            response, _ = await self._call(
                lambda p: litellm.aembedding(model=model, input=texts, **p), model, kwargs, "embedding", secrets
            )
            usage = response_usage(litellm, response)
        vectors = vectors_of(response, len(texts))
        self.calls += 1
        self.usage.add(usage)
        if key is not None and self.cache is not None:
            self.cache.put(key, {"model": model, "purpose": "embedding", "vectors": vectors, "usage": usage.to_dict()})
        return Embeddings(vectors, usage)

    async def _single_flight(self, key: str, ask: Callable[[], Awaitable[Completion]]) -> Completion:
        """Identical calls in flight at once are made once; the others get the answer as a
        cache hit (nothing spent)."""
        answer, shared = await self._in_flight.run(key, ask)
        if not shared:
            return answer
        self.cache_hits += 1
        calls = [dataclasses.replace(t) for t in answer.tool_calls]
        return dataclasses.replace(answer, tool_calls=calls, usage=None, cached=True, attempts=0)

    async def _ask(
        self,
        chosen: str,
        chat: list[dict[str, Any]],
        kwargs: dict[str, Any],
        json_mode: bool,
        purpose: str,
        secrets: list[str],
        key: str | None,
    ) -> Completion:
        direct = route(chosen, chat, kwargs)  # None: through litellm
        litellm = None if direct is not None else await load_litellm()
        if json_mode and (litellm is None or _supports_json(litellm, chosen)):
            kwargs["response_format"] = {"type": "json_object"}

        def send(params: dict[str, Any]) -> Awaitable[Any]:
            if direct is not None:
                return self.direct.send(direct, chat, params)
            assert litellm is not None
            return litellm.acompletion(model=chosen, messages=chat, **params)

        response, attempts = await self._call(send, chosen, kwargs, purpose, secrets)
        completion = from_json(response, direct.model) if direct is not None else from_litellm(litellm, response)
        usage = completion.usage or Usage()
        completion.model, completion.attempts, completion.key = chosen, attempts, key
        self.calls += 1
        self.usage.add(usage)
        if key is not None and self.cache is not None:
            self.cache.put(
                key,
                {
                    "model": chosen,
                    "purpose": purpose,
                    "text": completion.text,
                    "finish_reason": completion.finish_reason,
                    "tool_calls": [{**t.to_dict(), "id": t.id} for t in completion.tool_calls],
                    "usage": usage.to_dict(),
                    "created": time.time(),
                },
            )
        return completion

    async def _call(
        self,
        send: Callable[[dict[str, Any]], Awaitable[Any]],
        model: str,
        kwargs: dict[str, Any],
        purpose: str,
        secrets: list[str],
    ) -> tuple[Any, int]:
        # litellm's own retries are off so that ours are the only ones (observable, and
        # honouring retry-after); drop_params drops what a backend does not take.
        kwargs = {"timeout": self.timeout, "drop_params": True, **kwargs}
        kwargs.update(num_retries=0, max_retries=0)
        timeout = float(kwargs["timeout"])
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self.limiters.get(model).slot() as slot:
                    try:
                        # Both routes honour `timeout`; the outer guard catches a stall they do not see.
                        response = await asyncio.wait_for(send(kwargs), timeout + 1)
                    except Exception as exc:
                        slot.report(error_status(exc))
                        raise
                    slot.report(200)
                    return response, attempt
            except Exception as exc:
                status = error_status(exc)
                if status == 400 and "response_format" in kwargs:
                    # JSON mode is a nicety: never fail because a backend rejects it.
                    kwargs.pop("response_format")
                    attempt -= 1
                    continue
                if not retryable(exc) or attempt > self.retries:
                    detail = describe_error(exc, timeout)
                    tries = f" after {attempt} attempts" if attempt > 1 else ""
                    message = f"model call to {model} ({purpose}) failed{tries}: {detail}"
                    raise ModelError(redact(message, secrets, keys=True), status=status, attempts=attempt) from None
                wait = error_retry_after(exc) if status == 429 or (status or 0) >= 500 else None
                if wait is None:
                    backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
                    wait = backoff * random.uniform(0.5, 1.0)
                wait = min(wait, _MAX_WAIT)
                self.retried += 1
                logger.info(
                    "model %s (%s): %s; retry %d/%d in %.2fs",
                    model,
                    purpose,
                    redact(describe_error(exc, timeout), secrets, keys=True),
                    attempt,
                    self.retries,
                    wait,
                )
                await asyncio.sleep(wait)

    async def complete_json(
        self,
        messages: list[Message | Mapping[str, Any]],
        parse: Callable[[str], T],
        *,
        reminder: str = "Reply with the JSON object only.",
        **kwargs: Any,
    ) -> Parsed[T]:
        """Ask for JSON and ``parse`` the reply; an unusable reply is asked for once more.

        ``parse`` raises ``ValueError`` (its text is shown) for a reply it cannot use. A second
        unusable reply is the result's ``problem``, quoting it: never a silent pass or fail.
        Either way the result carries the usage of every call made.
        """
        usage = Usage()
        history = list(messages)
        problem = ""
        text = ""
        for attempt in (1, 2):
            completion = await self.complete(history, json_mode=True, **kwargs)
            usage.add(completion.usage)
            text = completion.text
            try:
                return Parsed(parse(text), usage)
            except ValueError as exc:
                problem = str(exc)
                if completion.key is not None and self.cache is not None:
                    self.cache.discard(completion.key)
            if attempt == 1:
                history = [
                    *history,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"Your reply could not be used: {problem}. {reminder}",
                    },
                ]
        excerpt = " ".join(text.split())[:200]
        return Parsed(None, usage, f"the model's reply was unusable twice ({problem}); last reply: {excerpt!r}")

    async def aclose(self) -> None:
        """Close the pooled HTTP clients of this event loop (the direct route's, litellm's), so that
        a finished run exits (a later call in the loop opens new ones; see :func:`close_loop_clients`)."""
        await self.direct.aclose()
        await close_loop_clients()


def _supports_json(litellm: Any, model: str) -> bool:
    if model.startswith("openai/"):
        return True
    try:
        return "response_format" in (litellm.get_supported_openai_params(model=model) or [])
    except Exception:
        return False
