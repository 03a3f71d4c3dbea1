"""LangGraph: a compiled graph whose state keeps the conversation under ``messages``
(``StateGraph(MessagesState).compile()``, ``create_react_agent``, LangChain's ``create_agent``),
run as the agent under test; and the graph state or LangChain messages a function returns.

LangGraph and LangChain are imported only inside the methods (the ``langgraph`` extra).
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from typing import Any, ClassVar

from specrun.plugin import Adapter, Context, Message, Response, Session, TargetError, UsageError


class LangGraphAdapter(Adapter):
    """Runs a compiled LangGraph graph with the case's conversation as ``state["messages"]``.

    A graph without a ``messages`` state key, or a ``StateGraph`` that was never compiled, is
    bad input (a ``UsageError`` when the target is checked), not an object no adapter knows.
    """

    name = "langgraph"
    description = "A compiled LangGraph graph with a messages state (StateGraph, create_react_agent, create_agent)."
    modules: ClassVar[tuple[str, ...]] = ("langgraph", "langchain_core")

    @classmethod
    def claims(cls, agent: Any) -> bool:
        if "langgraph" not in sys.modules:  # LangChain alone: no graph, and no reason to import one
            return False
        from langgraph.graph.state import StateGraph
        from langgraph.pregel import Pregel

        if isinstance(agent, StateGraph):
            raise UsageError(
                "this is a LangGraph StateGraph that is not compiled: name the compiled graph"
                " (graph = builder.compile())"
            )
        if not isinstance(agent, Pregel):
            return False
        if "messages" not in agent.channels:
            outputs = agent.output_channels
            keys = ", ".join(k for k in ([outputs] if isinstance(outputs, str) else outputs) if k[:2] != "__")
            raise UsageError(
                f"the LangGraph graph {agent.name!r} has no 'messages' key in its state (its keys: {keys or 'none'});"
                " specrun gives it the conversation as state['messages'], as MessagesState keeps it"
            )
        return True

    def session(self, agent: Any, context: Context) -> Session:
        return GraphSession(agent, context)

    def unwrap(self, value: Any) -> Response | None:
        if "langchain_core" not in sys.modules:
            return None
        from ._langchain import read_returned

        return read_returned(value)


class GraphSession(Session):
    """One conversation with a graph: each turn gives it the new user messages and reads the
    messages the run added.

    A graph compiled with a checkpointer keeps the conversation in a thread of its own (one per
    case and run; a case's ``configurable.thread_id`` is used instead when it sets one): each turn
    sends only the new messages, and a turn that stopped at an interrupt is resumed with the next
    user message (``Command(resume=...)``). A graph without one is given its own messages of the
    last turn (tool calls and tool results included) followed by the new ones: either way the
    next turn continues the graph's conversation, not specrun's text-only copy of it.
    """

    def __init__(self, graph: Any, context: Context):
        from langgraph.checkpoint.base import BaseCheckpointSaver

        self.graph = graph
        self.context = context
        self.checkpointed = isinstance(graph.checkpointer, BaseCheckpointSaver)
        self.thread = f"specrun-{context.case_id}-{context.run}-{uuid.uuid4().hex[:12]}"
        self.history: list[Any] = []  # the graph's messages after the last turn
        self.seen = 0  # how many of specrun's messages the graph has been given
        self.interrupted = False

    def config(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The run's ``config`` and keyword arguments, from the case's options: ``configurable``
        (a mapping), ``recursion_limit`` (a positive integer) and ``context`` (the runtime context)."""
        options = self.context.options
        configurable = options.get("configurable", {})
        if not isinstance(configurable, dict):
            raise TargetError(f"options.configurable must be a mapping, not {type(configurable).__name__}")
        config: dict[str, Any] = {"configurable": dict(configurable)}
        if self.checkpointed:
            config["configurable"].setdefault("thread_id", self.thread)
        if "recursion_limit" in options:
            limit = options["recursion_limit"]
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                raise TargetError(f"options.recursion_limit must be a positive integer, not {limit!r}")
            config["recursion_limit"] = limit
        return config, ({"context": options["context"]} if "context" in options else {})

    async def send(self, messages: list[Message]) -> Response:
        from langgraph.types import Command

        from ._langchain import to_langchain

        config, extra = self.config()
        if not self.seen and self.checkpointed and config["configurable"]["thread_id"] != self.thread:
            await self.resume_thread(config)
        new = messages[self.seen :]
        if self.seen and new and new[0].role == "assistant":  # specrun's copy of the last reply
            new = new[1:]
        if not any(m.role == "user" for m in new):
            raise TargetError("no new user message to give the graph")
        turn = sum(m.role == "user" for m in messages)
        self.seen = len(messages)
        fresh = to_langchain(new)
        for message in self.history:  # a graph that keeps messages without add_messages may leave ids unset
            message.id = message.id or str(uuid.uuid4())
        known = {m.id for m in [*self.history, *fresh]}
        given: Any
        if self.interrupted:
            given = Command(resume=new[-1].text)
        elif self.checkpointed:
            given = {"messages": fresh}
        else:
            given = {"messages": [*self.history, *fresh]}
        state: Any = None
        try:
            # Streamed, not ainvoke'd: when a node fails, the last state says what was done before;
            # and each state, before the next node runs, tells the case's limits what was done so far.
            stream = self.graph.astream(given, config, stream_mode="values", **extra)
            async with contextlib.aclosing(stream):  # stopped by a limit: the graph stops now
                async for chunk in stream:
                    # An interrupt comes with the state (newer LangGraph) or after it, alone (1.0).
                    alone = isinstance(chunk, dict) and isinstance(state, dict) and chunk.keys() == {"__interrupt__"}
                    state = {**state, **chunk} if alone else chunk
                    self.progress(state, known, turn)
        except Exception as exc:
            detail = f": {exc}" if str(exc) else ""
            error = TargetError(f"agent error: {type(exc).__name__}{detail}")
            with contextlib.suppress(TargetError):  # a state that says nothing hides no error
                error.response = self.read(state, known, turn)
            raise error from exc
        return self.read(state, known, turn)

    def progress(self, state: Any, known: set[str], turn: int) -> None:
        """What the run has done so far, to ``Context.progress`` (which stops it over a limit)."""
        from ._langchain import read_turn

        found = state.get("messages") if isinstance(state, dict) else None
        if isinstance(found, list):
            self.context.progress(read_turn([m for m in found if getattr(m, "id", None) not in known], turn))

    async def resume_thread(self, config: dict[str, Any]) -> None:
        """Start from what the case's own thread holds already: its messages are not this turn's,
        and a thread stopped at an interrupt is resumed by the first message."""
        snapshot = await self.graph.aget_state(config)
        self.history = list(snapshot.values.get("messages") or [])
        self.interrupted = bool(snapshot.interrupts)

    def read(self, state: Any, known: set[str], turn: int) -> Response:
        """This turn's ``Response`` from the graph's state: its messages not ``known`` before."""
        from langchain_core.messages import BaseMessage

        from ._langchain import read_turn

        if not isinstance(state, dict) or "messages" not in state:
            keys = ", ".join(map(str, state)) if isinstance(state, dict) else type(state).__name__
            raise TargetError(f"the graph's output after the run has no 'messages' (it has: {keys or 'nothing'})")
        found = state["messages"]
        if not isinstance(found, list) or not all(isinstance(m, BaseMessage) for m in found):
            raise TargetError("the graph's 'messages' after the run are not a list of LangChain messages")
        self.history = found
        self.interrupted = self.checkpointed and bool(state.get("__interrupt__"))
        return read_turn([m for m in found if m.id not in known], turn, state)
