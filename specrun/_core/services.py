"""What the runner lends to assertions, simulators and sources: model calls and the project's agents."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from .data import Context, Message, Response, Usage
from .errors import EvaluationError

if TYPE_CHECKING:
    from .._models.completions import Completion
    from .._models.embeddings import Embeddings

T = TypeVar("T")

AgentCaller = Callable[[str, list[Message], Context], Awaitable[Response]]


@dataclass
class Parsed(Generic[T]):
    """A reply asked for in a structure (``complete_json``, ``ask_agent``): the parsed ``value``,
    or, when the second reply was unusable too, ``problem`` saying why (quoting it). ``usage``
    is what every call cost, either way: an assertion puts it on its ``Verdict``."""

    value: T | None
    usage: Usage
    problem: str | None = None

    def get(self) -> T:
        """The value; an ``EvaluationError`` saying why when there is none."""
        if self.problem is not None:
            raise EvaluationError(self.problem)
        return cast(T, self.value)


class Models(Protocol):
    """The run's model client as plugins see it (``check.services.models``).

    Calls are retried, cached on disk per ``run``, ``sample`` (a judge's sample index) and
    ``version``, and counted in the run's totals; a call that fails for good raises
    ``ModelError`` (an ``EvaluationError``).
    """

    def model_for(self, purpose: str, model: str | None = None) -> str:
        """The model for ``purpose`` (``judge``, ``simulator``...): ``model``, the purpose's own,
        the project default, ``$SPECRUN_MODEL``; an ``EvaluationError`` when none is set."""
        ...

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
        """Ask the model once and return its answer (``Completion.text``, ``tool_calls``, ``usage``)."""
        ...

    async def embed(
        self, texts: list[str], *, model: str, params: Mapping[str, Any] | None = None, cache: bool = True
    ) -> Embeddings:
        """The embedding of each text by ``model`` (a litellm embedding model): ``Embeddings.vectors``,
        in order, and ``usage``; cached on disk (not per run: an embedding does not vary)."""
        ...

    async def complete_json(
        self,
        messages: list[Message | Mapping[str, Any]],
        parse: Callable[[str], T],
        *,
        reminder: str = "Reply with the JSON object only.",
        model: str | None = None,
        purpose: str = "judge",
        run: int = 1,
        version: str = "",
        sample: int = 1,
    ) -> Parsed[T]:
        """Ask for JSON and ``parse`` it (``parse`` raises ``ValueError`` on a reply it cannot use,
        which is asked for once more); the parsed value, or the problem, and every call's usage."""
        ...


@dataclass
class Services:
    """Per run index (the cases of one run share it): ``models`` is the shared model client,
    ``run`` the run index (cache namespace), ``config`` the project config (``specrun.yaml``)."""

    models: Models | None = None
    run: int = 1
    agent_caller: AgentCaller | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    update_snapshots: bool = False  # --update-snapshots: a snapshot assertion approves what it sees

    async def call_agent(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        """Send ``messages`` to the project's agent ``agent_id`` (``agents:`` prefix optional)."""
        if self.agent_caller is None:
            raise EvaluationError(f"cannot call agent {agent_id!r}: no project agents are available here")
        return await self.agent_caller(agent_id.removeprefix("agents:"), messages, context)

    async def ask_agent(
        self,
        agent_id: str,
        messages: list[Message],
        context: Context,
        parse: Callable[[Any], T],
        reminder: str,
        role: str = "agent",
    ) -> Parsed[T]:
        """Ask a project agent for a structured reply: ``parse`` (raising ``ValueError``) reads it.

        An unusable reply is answered with ``reminder`` once; a second one is the result's
        ``problem`` (with the ``usage`` spent), naming the ``role``. An agent that fails is an
        ``EvaluationError``.
        """
        usage, problem, text = Usage(), "", ""
        for _ in range(2):
            try:
                response = await self.call_agent(agent_id, messages, context)
            except EvaluationError:
                raise
            except Exception as exc:
                raise EvaluationError(f"{role} {agent_id!r} failed: {type(exc).__name__}: {exc}") from exc
            usage.add(response.usage)
            text = response.text
            try:
                return Parsed(parse(response.content if isinstance(response.content, dict) else text), usage)
            except ValueError as exc:
                problem = str(exc)
                nudge = f"Your reply could not be used: {problem}. {reminder}"
                messages = [*messages, Message("assistant", text), Message("user", nudge)]
        excerpt = " ".join(text.split())[:200]
        return Parsed(None, usage, f"{role} {agent_id!r} replied unusably twice ({problem}); last reply: {excerpt!r}")
