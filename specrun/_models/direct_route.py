"""The direct route: calls to OpenAI-compatible backends sent over aiohttp, without litellm.

litellm costs 5-7 CPU-ms per call and seconds to import; a bare request costs a fraction of a
millisecond. A call that litellm would pass to an ``openai/`` model unchanged is therefore sent
here (:func:`route` decides): the request body litellm sends, over one pooled aiohttp session
per event loop; the answer's usage priced from litellm's own table (:mod:`specrun._models.prices`); and
a failure raised as litellm raises it (:class:`ProviderError`: the same status, the same words),
so that retries, errors, usage and cost do not depend on the route. Everything else (another
provider, a parameter or attachment litellm translates, a model it prices or calls in its own
way, a regional endpoint, no API key) goes through litellm as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .bounded_read import ReplyTooLarge, read_body
from .prices import priceable
from .wire import excerpt

PREFIX = "openai/"
DEFAULT_BASE = "https://api.openai.com/v1"
# Parameters litellm sends to an OpenAI chat model as they are (the rest it may translate).
_PASSED = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
        "tools",
        "tool_choice",
        "user",
    }
)
_OURS = frozenset({"api_base", "api_key", "timeout", "drop_params", "num_retries", "max_retries"})
# Models litellm calls through a config of their own (reasoning, audio, search, realtime models
# rename or drop parameters): they go through litellm.
_SPECIAL = re.compile(r"^(o\d|gpt-5|codex)|audio|search|realtime|computer-use|transcribe|tts", re.I)
_PARTS = frozenset({"text", "image_url"})
# litellm's exception for each status of an OpenAI-compatible backend: (class, status, prefix).
_ERRORS = {
    400: ("BadRequestError", 400, ""),
    401: ("AuthenticationError", 401, "AuthenticationError: "),
    404: ("NotFoundError", 404, "NotFoundError: "),
    408: ("Timeout", 408, "Timeout Error: "),
    422: ("BadRequestError", 422, ""),
    429: ("RateLimitError", 429, "RateLimitError: "),
    500: ("InternalServerError", 500, "InternalServerError: "),
    502: ("BadGatewayError", 502, "BadGatewayError: "),
    503: ("ServiceUnavailableError", 503, "ServiceUnavailableError: "),
    504: ("Timeout", 504, "Timeout Error: "),
}


class ProviderError(Exception):
    """A failed call on the direct route, as litellm reports it: ``status_code``, the response
    headers (``retry-after``), and the text ``litellm.<Class>: ... OpenAIException - <message>``."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        kind, self.status_code, prefix = _ERRORS.get(status, ("APIError", status, "APIError: "))
        super().__init__(f"litellm.{kind}: {prefix}OpenAIException - {message}")
        self.kind = kind
        self.litellm_response_headers = dict(headers or {})


class ProviderTimeout(ProviderError, TimeoutError):
    """A 408 or 504: litellm's ``Timeout``, retried and described as a timeout."""


def failure(status: int, message: str, headers: Mapping[str, str] | None = None) -> ProviderError:
    """The exception litellm raises for ``status``."""
    kind = _ERRORS.get(status, ("", 0, ""))[0]
    return (ProviderTimeout if kind == "Timeout" else ProviderError)(status, message, headers)


@dataclass(frozen=True)
class Route:
    """Where a direct call goes: the backend's model name, its chat URL and its key."""

    model: str
    url: str
    api_key: str


def route(model: str, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> Route | None:
    """The direct route for this call, or None when it must go through litellm (see above)."""
    if not model.startswith(PREFIX) or any(k not in _PASSED and k not in _OURS for k in params):
        return None
    name = model[len(PREFIX) :]
    if not name or _SPECIAL.search(name) or not priceable(name):
        return None
    api_key = params.get("api_key") or os.environ.get("OPENAI_API_KEY")
    base = str(params.get("api_base") or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or "")
    base = base or DEFAULT_BASE
    host = urlsplit(base).hostname or ""
    if not api_key or (host.endswith(".openai.com") and host != "api.openai.com"):  # regional: priced apart
        return None
    if not all(_plain(m) for m in messages):
        return None
    return Route(name, f"{base.rstrip('/')}/chat/completions", str(api_key))


def _plain(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in _PARTS for p in content)


def _message(status: int, text: str) -> str:
    """The error's message as the OpenAI SDK (and so litellm) reads it from the body."""
    try:
        body = json.loads(text)
    except ValueError:
        return f"Error code: {status}"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return f"Error code: {status} - {body}"


class DirectClient:
    """One pooled aiohttp session (per event loop) for the direct route."""

    def __init__(self) -> None:
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # No pool limit (the run's parallelism and the limiter bound it); proxies from the
            # environment (HTTPS_PROXY, NO_PROXY) as litellm's HTTP client honours them.
            connector = aiohttp.TCPConnector(limit=0)
            self._session, self._loop = aiohttp.ClientSession(connector=connector, trust_env=True), loop
        return self._session

    async def send(self, to: Route, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        """POST one chat completion and return the answer's JSON; raises ``ProviderError`` as
        litellm would, or ``TimeoutError`` after ``params["timeout"]`` seconds."""
        body = {"model": to.model, "messages": messages, **{k: v for k, v in params.items() if k in _PASSED}}
        answer, text, headers = await self._post(to, to.url, body, params)
        if not isinstance(answer.get("choices"), list) or not answer["choices"]:
            raise failure(500, f"Invalid response object {excerpt(text)}", headers)
        return answer

    async def embed(self, to: Route, texts: list[str], params: Mapping[str, Any]) -> dict[str, Any]:
        """POST one embeddings request (to the endpoint beside the chat one) and return its JSON;
        errors as :meth:`send`'s."""
        body: dict[str, Any] = {"model": to.model, "input": texts}
        if "user" in params:
            body["user"] = params["user"]
        url = to.url.removesuffix("/chat/completions") + "/embeddings"
        answer, text, headers = await self._post(to, url, body, params)
        if not isinstance(answer.get("data"), list):
            raise failure(500, f"Invalid response object {excerpt(text)}", headers)
        return answer

    async def _post(
        self, to: Route, url: str, body: dict[str, Any], params: Mapping[str, Any]
    ) -> tuple[dict[str, Any], str, dict[str, str]]:
        import aiohttp

        headers = {"Authorization": f"Bearer {to.api_key}", "Content-Type": "application/json"}
        timeout = aiohttp.ClientTimeout(total=float(params.get("timeout") or 600))
        try:
            async with self._client().post(url, data=json.dumps(body), headers=headers, timeout=timeout) as reply:
                status, reply_headers = reply.status, {k.lower(): v for k, v in reply.headers.items()}
                text = (await read_body(reply)).decode("utf-8", "replace")  # a huge answer must not fill memory
        except ReplyTooLarge as exc:  # as an unreadable answer is: litellm's 500
            raise failure(500, f"{exc} from {url}", reply_headers) from None
        except aiohttp.ClientError:  # refused, dropped, reset: litellm's "Connection error."
            raise failure(500, "Connection error.") from None
        if status != 200:
            raise failure(status, _message(status, text), reply_headers)
        try:
            answer = json.loads(text)
        except ValueError as exc:
            raise failure(500, str(exc), reply_headers) from None
        if not isinstance(answer, dict):
            raise failure(500, f"Invalid response object {excerpt(text)}", reply_headers)
        return answer, text, reply_headers

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
