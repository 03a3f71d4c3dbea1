"""A travel agent built with LangGraph, tested by specrun with no glue code: `agent.yaml` names
the compiled graph (`target: python:travel_graph:graph`) and specrun runs it itself.

The model is `OfflineModel`, a LangChain chat model that decides by rules, so the example runs
with no API key; put `ChatOpenAI(model=...)` (or any chat model) in its place and nothing else
changes.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

FLIGHTS = {"lisbon": ["TP1351", "FR8342"], "oslo": ["SK4601"]}
SOLD_OUT = {"FR8342"}


@tool
def search_flights(destination: str) -> str:
    """Find flights to a destination city."""
    found = FLIGHTS.get(destination.lower(), [])
    return ", ".join(found) if found else f"no flights to {destination}"


@tool
def book_flight(flight_id: str) -> str:
    """Book a seat on a flight."""
    if flight_id in SOLD_OUT:
        raise ValueError(f"flight {flight_id} is sold out")
    return f"booked {flight_id}, reference BK-{flight_id[-3:]}"


class OfflineModel(BaseChatModel):
    """Stands in for a real chat model: calls a tool when the user asks for one, then answers
    from the tool's result. Each reply reports its (made-up) token usage, as a provider's does."""

    @property
    def _llm_type(self) -> str:
        return "offline-rules"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any):
        last = messages[-1]
        said = str(last.text)
        calls = []
        if isinstance(last, ToolMessage):
            reply = f"Sorry: {said}." if last.status == "error" else f"Here you are: {said}."
        elif re.search(r"\bbook the first\b", said, re.IGNORECASE):
            # Read from the conversation the graph keeps: the last search's result, a tool message.
            searched = [m for m in messages if isinstance(m, ToolMessage) and m.name == "search_flights"]
            flights = re.findall(r"[A-Z]{2}\d{3,4}", str(searched[-1].text)) if searched else []
            reply = "" if flights else "Which flight? Search for one first."
            calls = [("book_flight", {"flight_id": flights[0]})] if flights else []
        elif found := re.search(r"\bbook\b.*?\b([A-Z]{2}\d{3,4})\b", said, re.IGNORECASE):
            reply, calls = "", [("book_flight", {"flight_id": found[1].upper()})]
        elif found := re.search(r"\bflights? to (\w+)", said, re.IGNORECASE):
            reply, calls = "", [("search_flights", {"destination": found[1].capitalize()})]
        else:
            reply = "I can search and book flights. Where to?"
        message = AIMessage(
            reply,
            tool_calls=[{"name": n, "args": a, "id": f"call_{len(messages)}_{n}"} for n, a in calls],
            usage_metadata={
                "input_tokens": 12 * len(messages),
                "output_tokens": 8,
                "total_tokens": 12 * len(messages) + 8,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def tool_failed(error: Exception) -> str:
    """What the model is told when a tool raises (the tool message's status is then "error")."""
    return str(error)


model = OfflineModel().bind_tools([search_flights, book_flight])


def assistant(state: MessagesState) -> dict[str, Any]:
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("assistant", assistant)
builder.add_node("tools", ToolNode([search_flights, book_flight], handle_tool_errors=tool_failed))
builder.add_edge(START, "assistant")
builder.add_conditional_edges("assistant", tools_condition)
builder.add_edge("tools", "assistant")
graph = builder.compile()
