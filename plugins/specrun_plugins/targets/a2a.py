"""The ``a2a`` target: an agent speaking A2A, through ``a2a-sdk``'s client.

The agent card is read once per run (at the first case), and says how to talk: JSON-RPC
``SendMessage`` (A2A 1.0) or ``message/send`` (0.3), streamed when the card says the agent
streams; the SDK picks. A case is one conversation: one ``contextId``, new for every case and
run, each user message sent in turn (a task waiting for input is continued by the next one).
The reply is the agent's message, or for a task its final status message followed by its text
artifacts; data parts are the JSON output. The task's state (``completed``, ``failed``,
``rejected``, ``input-required``...) is the response's ``state``: a case that does not check
it fails unless the task completed (see the ``state`` assertion). ``pip install
'specrun[a2a]'``; the SDK is imported only when an a2a target talks.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from specrun.plugin import Context, Message, Response, Session, Target, TargetError, parse_duration, shorten

from ._bounds import bounded_client

MISSING_SDK = "the a2a target needs the A2A SDK: pip install 'specrun[a2a]'"
CONTINUED = ("input-required", "auth-required")  # a task in these states takes the next message


class A2aTarget(Target):
    """An A2A agent at ``url`` (its card at ``url`` + ``card_path``)."""

    name = "a2a"
    env_fields = ("url", "headers")
    success_states = ("completed",)
    label_params = ("url",)
    description = "An A2A agent: each case one conversation (contextId), through a2a-sdk's client."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "url": {"type": "string", "description": "The agent's base URL; its card is read from there."},
            "card_path": {
                "type": "string",
                "description": "Where the agent card is under url (default /.well-known/agent-card.json).",
            },
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "HTTP headers of every request; ${NAME} is replaced by variable NAME (masked).",
            },
            "streaming": {
                "type": "boolean",
                "description": "Stream replies when the card says the agent can (default true).",
            },
            "timeout": {
                "$ref": "#/$defs/duration",
                "description": "Longest wait to connect and for each read (default: none; the case timeout applies).",
            },
        },
        "required": ["url"],
    }

    def __init__(self, config: dict[str, Any], base_dir: Path):
        super().__init__(config, base_dir)
        self.url = str(self.config["url"])
        self.headers = dict(self.config.get("headers") or {})
        self.streaming = bool(self.config.get("streaming", True))
        timeout = self.config.get("timeout")
        self.timeout = parse_duration(timeout) if timeout is not None else None
        self._http: Any = None
        self._client: Any = None
        self._lock: asyncio.Lock | None = None

    def problems(self) -> Iterable[tuple[str, str]]:
        yield from super().problems()
        if urlsplit(self.url).scheme not in ("http", "https") and not self.unset_env:
            yield "url", f"url {self.url!r} must start with http:// or https://"
        if importlib.util.find_spec("a2a") is None:
            yield "type", MISSING_SDK

    async def client(self) -> Any:
        """The SDK's client for the run, made from the agent card (read once, at first use)."""
        if self._client is not None:
            return self._client
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._client is None:
                self._client = await self._connect()
        return self._client

    async def _connect(self) -> Any:
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        timeout = httpx.Timeout(self.timeout)  # None: the case timeout bounds every wait
        self._http = bounded_client(httpx, headers=self.headers, timeout=timeout)
        where = {"agent_card_path": self.config["card_path"]} if "card_path" in self.config else {}
        resolver = A2ACardResolver(self._http, self.url, **where)
        try:
            card = await resolver.get_agent_card()
            return ClientFactory(ClientConfig(httpx_client=self._http, streaming=self.streaming)).create(card)
        except Exception as exc:
            raise TargetError(f"cannot use the agent card of {self.url}: {_reason(exc)}") from None

    def session(self, context: Context) -> Session:
        return A2aSession(self)

    async def respond(self, messages: list[Message], context: Context) -> Response:
        return await self.session(context).send(messages)

    async def aclose(self) -> None:
        http, self._http, self._client = self._http, None, None
        if http is not None:
            await http.aclose()


class A2aSession(Session):
    """One case's conversation: its own ``contextId``; the user messages it has not sent yet."""

    def __init__(self, target: A2aTarget):
        self.target = target
        self.context_id = str(uuid.uuid4())
        self.task_id: str | None = None  # a task waiting for input, continued by the next message
        self.sent = 0

    async def send(self, messages: list[Message]) -> Response:
        new = [m for m in messages if m.role == "user"][self.sent :]
        if not new:
            raise TargetError("no new user message to send to the A2A agent")
        client = await self.target.client()
        response = Response()
        for message in new:
            started = time.perf_counter()
            response = await self._turn(client, message)
            response.latency_ms = (time.perf_counter() - started) * 1000
            self.sent += 1
        return response

    async def _turn(self, client: Any, message: Message) -> Response:
        from a2a.types import SendMessageRequest

        request = SendMessageRequest(message=_a2a_message(message, self.context_id, self.task_id))
        reply = _Reply()
        try:
            async for event in client.send_message(request):
                reply.add(event)
        except Exception as exc:
            raise TargetError(f"A2A agent {self.target.url}: {_reason(exc)}") from None
        self.task_id = reply.task_id if reply.state in CONTINUED else None
        return reply.response()


class _Reply:
    """What the agent answered to one message, folded from the events of a stream (or the one
    task or message of a plain reply)."""

    def __init__(self) -> None:
        self.message: Any = None
        self.task_id: str | None = None
        self.state: str | None = None
        self.status: Any = None  # the latest status message
        self.artifacts: dict[str, Any] = {}  # by id, in order of arrival

    def add(self, event: Any) -> None:
        if event.HasField("message"):
            self.message = event.message
        elif event.HasField("task"):
            task = event.task
            self.task_id = task.id
            self._status(task.status)
            self.artifacts = {a.artifact_id: list(a.parts) for a in task.artifacts}
        elif event.HasField("status_update"):
            self.task_id = event.status_update.task_id or self.task_id
            self._status(event.status_update.status)
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            parts = self.artifacts.get(update.artifact.artifact_id) if update.append else None
            if parts is None:
                self.artifacts[update.artifact.artifact_id] = list(update.artifact.parts)
            else:
                parts.extend(update.artifact.parts)

    def _status(self, status: Any) -> None:
        from a2a.types import TaskState

        name = TaskState.Name(status.state)
        self.state = name.removeprefix("TASK_STATE_").lower().replace("_", "-")
        if status.HasField("message"):
            self.status = status.message

    def response(self) -> Response:
        if self.message is not None and self.task_id is None:
            parts = list(self.message.parts)
            return Response(content=_output(parts), raw=_dump(self.message))
        if self.task_id is None:
            raise TargetError("the A2A agent answered with neither a message nor a task")
        parts = [*(self.status.parts if self.status is not None else [])]
        for artifact in self.artifacts.values():
            parts.extend(artifact)
        raw = {"task_id": self.task_id, "state": self.state}
        return Response(content=_output(parts), raw=raw, state=self.state)


def _output(parts: list[Any]) -> Any:
    """Text parts joined as the text; data parts, when there are any, as the output (one, or a list)."""
    from google.protobuf.json_format import MessageToDict

    data = [MessageToDict(p.data) for p in parts if p.HasField("data")]
    if data:
        return data[0] if len(data) == 1 else data
    return "\n".join(p.text for p in parts if p.HasField("text"))


def _dump(message: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message)


def _a2a_message(message: Message, context_id: str, task_id: str | None) -> Any:
    """A user message as A2A's: its text, and each attachment as a file part (bytes or a URL)."""
    from a2a.types import Message as A2aMessage
    from a2a.types import Part, Role

    parts = [Part(text=message.text)] if message.text else []
    for attachment in message.attachments:
        mime = str(attachment.get("mime") or "")
        name = str(attachment.get("name") or Path(str(attachment.get("path", ""))).name)
        if (raw := Message.part_bytes(attachment)) is not None:  # a local file or inline data
            parts.append(Part(raw=raw, media_type=mime, filename=name))
        elif attachment.get("url") or attachment.get("source"):
            parts.append(Part(url=str(attachment.get("url") or attachment.get("source")), media_type=mime))
    made = A2aMessage(role=Role.ROLE_USER, parts=parts, message_id=str(uuid.uuid4()), context_id=context_id)
    if task_id:
        made.task_id = task_id
    return made


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return shorten(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, 500)
