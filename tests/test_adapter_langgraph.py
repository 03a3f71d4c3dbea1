"""The LangGraph adapter: a compiled graph named as the target runs with no glue, its tool calls
read from LangGraph's own messages; a function returning a graph's state or LangChain messages is
read the same way.

The real framework, offline: the example's graph (examples/langgraph) and its rule-following
LangChain chat model, plus a few graphs made of its pieces. One CLI run of that project serves
most tests (LangGraph is imported once, ~0.6 s, in it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli

# Imported in the background from the start (tests/conftest.py): LangGraph (with LangChain), 0.4 s.
PRELOADS = ("langgraph.prebuilt",)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "langgraph"

GRAPHS = '''\
"""Graphs for the adapter's tests, made of the example's pieces."""

import asyncio
import warnings
from pathlib import Path

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from travel_graph import OfflineModel, assistant, book_flight, builder, graph, search_flights

with warnings.catch_warnings():  # LangGraph 1.0 moved it to LangChain's create_agent: both make this graph
    warnings.simplefilter("ignore")
    react = create_react_agent(OfflineModel(), [search_flights, book_flight])

remembering = builder.compile(checkpointer=InMemorySaver())
seeded = builder.compile(checkpointer=InMemorySaver())  # a thread with a conversation in it already
seeded.invoke({"messages": [("user", "Find flights to Oslo")]}, {"configurable": {"thread_id": "earlier"}})


def one_node(node, checkpointer=None, schema=MessagesState):
    made = StateGraph(schema)
    made.add_node("node", node)
    made.add_edge(START, "node")
    return made.compile(checkpointer=checkpointer)


async def hang(state):
    try:
        await asyncio.Event().wait()
    finally:
        Path(__file__).with_name("cancelled.txt").write_text("the node was cancelled")


def approve(state):
    answer = interrupt("Book TP1351? (yes/no)")
    return {"messages": [AIMessage(f"You said {answer}: booked." if answer == "yes" else "Not booked.")]}


def settings(state, config: RunnableConfig, runtime: Runtime):
    return {"messages": [AIMessage(f"{config['configurable'].get('traveller')} / {runtime.context}")]}


def blocks(state):
    said = [f"{p['type']}:{p.get('mime_type')}:{bool(p.get('base64'))}" for p in state["messages"][-1].content]
    return {"messages": [AIMessage(" ".join(said))]}


class Answered(MessagesState):
    structured_response: dict


def answer(state):
    bad = {"name": "search_flights", "args": "{destination: Oslo", "id": "b1", "error": "not JSON"}
    return {"messages": [AIMessage("", invalid_tool_calls=[bad])], "structured_response": {"flights": 1}}


@tool
def tick(name: str) -> str:
    """Counts one tick in ticks-<name>.txt."""
    with Path(__file__).with_name(f"ticks-{name}.txt").open("a") as ticks:
        ticks.write("tick\\n")
    return "ticked"


def ticker(state):
    """`tick N name`: N calls of tick, one per step."""
    _, times, name = [m for m in state["messages"] if m.type == "human"][-1].content.split()
    ticked = sum(m.type == "tool" for m in state["messages"])
    if ticked < int(times):
        return {"messages": [AIMessage("", tool_calls=[{"name": "tick", "args": {"name": name}, "id": f"t{ticked}"}])]}
    return {"messages": [AIMessage(f"ticked {ticked} times")]}


ticks = StateGraph(MessagesState)
ticks.add_node("model", ticker)
ticks.add_node("tools", ToolNode([tick]))
ticks.add_edge(START, "model")
ticks.add_conditional_edges("model", tools_condition)
ticks.add_edge("tools", "model")
ticking = ticks.compile()

hanging = one_node(hang)
answering = one_node(answer, schema=Answered)
silent = one_node(lambda state: {})
approval = one_node(approve, InMemorySaver())
configured = one_node(settings)
attachments = one_node(blocks)

crash = StateGraph(MessagesState)
crash.add_node("assistant", assistant)
crash.add_node("tools", ToolNode([search_flights, book_flight], handle_tool_errors=False))
crash.add_edge(START, "assistant")
crash.add_conditional_edges("assistant", tools_condition)
crash.add_edge("tools", "assistant")
crashing = crash.compile()


async def returns_state(messages, ctx):
    return await graph.ainvoke({"messages": [m.to_dict() for m in messages]})


def returns_messages(messages, ctx):
    return graph.invoke({"messages": [m.to_dict() for m in messages]})["messages"]
'''

BOOK_AFTER_SEARCH = [
    {
        "id": "searched",
        "assertion": {"type": "tool_called", "name": "search_flights", "arguments": {"destination": "Lisbon"}},
    },
    {
        "id": "booked",
        "after": ["searched"],
        "assertion": {"type": "tool_called", "name": "book_flight", "arguments": {"flight_id": "TP1351"}},
    },
]
SEARCHED = {"type": "tool_called", "name": "search_flights", "arguments": {"destination": "Lisbon"}}
WIRE_CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "search_flights", "arguments": '{"destination": "Oslo"}'},
}
FLAT_CALL = {"id": "c1", "name": "search_flights", "arguments": {"destination": "Oslo"}}  # as specrun reports one
GIVEN_HISTORY = [
    {"role": "user", "content": "Find flights to Oslo"},
    {"role": "assistant", "content": ""},  # its call: WIRE_CALL or FLAT_CALL
    {"role": "tool", "tool_call_id": "c1", "name": "search_flights", "content": "SK4601"},
    {"role": "assistant", "content": "Here you are: SK4601."},
    {"role": "user", "content": "Book the first one"},
]
CASES: list[dict[str, Any]] = [
    {
        "id": "remembers",
        "target": "python:more_graphs:remembering",
        "simulator": {"type": "scripted", "turns": ["Find flights to Lisbon", "Book the first one"]},
        "checkpoints": BOOK_AFTER_SEARCH,
        "max_turns": 2,
    },
    {
        "id": "react-agent",
        "target": "python:more_graphs:react",
        "input": "Find flights to Lisbon",
        "assertions": [SEARCHED, {"type": "contains", "value": "TP1351"}],
    },
    {
        "id": "structured",
        "target": "python:more_graphs:answering",
        "input": "hi",
        "assertions": [{"type": "json_path", "path": "$.flights", "value": 1}],
    },
    {
        "id": "silent",
        "target": "python:more_graphs:silent",
        "input": "hi",
        "assertions": [{"type": "equals", "value": ""}],
    },
    {
        "id": "own-thread",
        "target": "python:more_graphs:seeded",
        "input": "Book the first one",
        "options": {"configurable": {"thread_id": "earlier"}},
        "assertions": [
            {"type": "tool_called", "name": "book_flight", "arguments": {"flight_id": "SK4601"}},
            {"type": "tool_not_called", "name": "search_flights"},  # the thread's, not this case's
        ],
    },
    *[
        {
            "id": f"given-history{suffix}",
            "input": [*GIVEN_HISTORY[:1], {**GIVEN_HISTORY[1], "tool_calls": [call]}, *GIVEN_HISTORY[2:]],
            "assertions": [{"type": "tool_called", "name": "book_flight", "arguments": {"flight_id": "SK4601"}}],
        }
        for suffix, call in [("", WIRE_CALL), ("-flat", FLAT_CALL)]
    ],
    {
        "id": "approval",
        "target": "python:more_graphs:approval",
        "simulator": {"type": "scripted", "turns": ["Book it", "yes"]},
        "checkpoints": [
            {"id": "asked", "assertion": {"type": "contains", "value": "Book TP1351?"}},
            {"id": "done", "after": ["asked"], "assertion": {"type": "equals", "value": "You said yes: booked."}},
        ],
        "max_turns": 2,
    },
    *[
        {"id": f"{name}-tool-calls", "target": "python:more_graphs:ticking", "input": f"tick 5 {name}", "limits": cap}
        for name, cap in [("over", {"tool_calls": 2}), ("under", {"tool_calls": 5})]
    ],
    {
        "id": "hangs",
        "target": "python:more_graphs:hanging",
        "input": "hello",
        "timeout": "100ms",
        "assertions": [{"type": "contains", "value": "never"}],
    },
    {
        "id": "crashes",
        "target": "python:more_graphs:crashing",
        "input": "Book FR8342",
        "assertions": [{"type": "tool_called", "name": "book_flight"}],
    },
    {
        "id": "configured",
        "target": "python:more_graphs:configured",
        "input": "hi",
        "options": {"configurable": {"traveller": "Ada"}, "context": {"tier": "gold"}, "recursion_limit": 5},
        "assertions": [{"type": "equals", "value": "Ada / {'tier': 'gold'}"}],
    },
    {
        "id": "bad-options",
        "target": "python:more_graphs:configured",
        "input": "hi",
        "options": {"configurable": ["traveller"]},
        "assertions": [{"type": "contains", "value": "Ada"}],
    },
    {
        "id": "attachments",
        "target": "python:more_graphs:attachments",
        "input": {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": "file://fixtures/dot.png"},
                {"type": "file", "source": "https://example.com/a.pdf", "mime": "application/pdf"},
            ],
        },
        "assertions": [{"type": "equals", "value": "text:None:False image:image/png:True file:application/pdf:False"}],
    },
    {
        "id": "returns-state",
        "target": "python:more_graphs:returns_state",
        "input": "Find flights to Lisbon",
        "assertions": [SEARCHED, {"type": "tool_not_called", "name": "book_flight"}],
    },
    {
        "id": "returns-messages",
        "target": "python:more_graphs:returns_messages",
        "input": "Find flights to Lisbon",
        "assertions": [SEARCHED, {"type": "tool_called", "name": "book_flight"}],
    },
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("langgraph") / "travel"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "more_graphs.py").write_text(GRAPHS)
    (root / "fixtures").mkdir()
    (root / "fixtures" / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "adapter.jsonl").write_text("".join(json.dumps(case) + "\n" for case in CASES))
    return root


@pytest.fixture(scope="module")
def run(project: Path) -> dict[str, Any]:
    """The one run of the project: its exit code and output, and each case's result record."""
    done = run_cli([".", "-o", "../out.jsonl"], project)
    records = [json.loads(line) for line in (project.parent / "out.jsonl").read_text().splitlines()]
    results = {r["id"]: r for r in records if r.get("type") == "result"}
    return {"code": done.returncode, "output": done.stdout + done.stderr, **results}


def statuses(run: dict[str, Any], *ids: str) -> list[str]:
    return [run[i]["status"] for i in ids]


def failing(result: dict[str, Any]) -> list[str]:
    return [a["message"] for a in result["assertions"] if a["status"] == "failed"]


def test_the_example_graph_runs_with_no_glue_and_its_tool_assertions_pass_and_fail(run):
    assert run["code"] == 1, run["output"]  # books-one fails on purpose
    assert statuses(run, "finds-flights", "sold-out", "search-then-book") == ["passed"] * 3, run["output"]
    assert run["books-one"]["status"] == "failed"
    assert failing(run["books-one"]) == [
        'expected a call to book_flight; matched 0; calls: search_flights({"destination": "Oslo"})',
        'expected no call to search_flights; matched 1; calls: search_flights({"destination": "Oslo"})',
    ]
    assert "Traceback" not in run["output"]


def test_each_call_carries_its_result_id_status_step_and_turn_and_usage_is_read(run):
    [found] = run["finds-flights"]["tool_calls"]
    assert found == {
        "name": "search_flights",
        "arguments": {"destination": "Lisbon"},
        "result": "TP1351, FR8342",
        "id": "call_1_search_flights",
        "status": "ok",
        "step": 1,
        "turn": 1,
    }
    assert run["finds-flights"]["output"] == "Here you are: TP1351, FR8342."
    [sold_out] = run["sold-out"]["tool_calls"]  # the tool raised: LangGraph's tool message says "error"
    assert (sold_out["status"], sold_out["result"]) == ("error", "flight FR8342 is sold out")
    # Two model calls, each reporting 12 tokens per message it was given (1, then 3) and 8 of output.
    assert run["finds-flights"]["usage"] == {
        "prompt_tokens": 48,
        "completion_tokens": 16,
        "total_tokens": 64,
        "cost": None,
    }


@pytest.mark.parametrize("case", ["search-then-book", "remembers"])
def test_each_turn_continues_the_graphs_own_conversation(run, case):
    """Booking "the first one" needs the search's tool message, which only the graph's own
    history holds: resent without a checkpointer, in the graph's thread with one."""
    result = run[case]
    assert result["status"] == "passed", result
    assert [[(c["name"], c["turn"], c["step"]) for c in t["tool_calls"]] for t in result["turns"]] == [
        [("search_flights", 1, 1)],
        [("book_flight", 2, 1)],  # this turn's calls only
    ]


def test_a_prebuilt_react_agent_runs_the_same_way(run):
    assert run["react-agent"]["status"] == "passed", run["react-agent"]
    assert [(c["name"], c["status"], c["step"]) for c in run["react-agent"]["tool_calls"]] == [
        ("search_flights", "ok", 1)
    ]


def test_a_structured_response_is_the_output_and_a_call_the_model_garbled_failed(run):
    result = run["structured"]
    assert (result["status"], result["output"]) == ("passed", {"flights": 1})
    assert result["tool_calls"] == [
        {
            "name": "search_flights",
            "arguments": {"_raw": "{destination: Oslo"},
            "result": "not JSON",
            "id": "b1",
            "status": "error",
            "step": 1,
            "turn": 1,
        }
    ]


def test_a_turn_with_no_reply_says_so(run):
    assert run["silent"]["warnings"] == ["the graph added no AI message this turn"]
    assert run["silent"]["status"] == "passed" and run["silent"]["tool_calls"] == []  # the adapter knows: none


@pytest.mark.parametrize("case", ["given-history", "given-history-flat"])
def test_a_given_history_with_tool_calls_becomes_langchains_messages(run, case):
    """The calls in the chat wire format (``function.arguments``) or as specrun reports them."""
    result = run[case]
    assert result["status"] == "passed", result
    assert [(c["name"], c["arguments"], c["turn"]) for c in result["tool_calls"]] == [
        ("book_flight", {"flight_id": "SK4601"}, 2)
    ]


def test_a_case_may_continue_a_thread_of_its_own_whose_calls_are_not_its_own(run):
    assert run["own-thread"]["status"] == "passed", run["own-thread"]


def test_an_interrupt_asks_the_user_and_the_next_turn_resumes_it(run):
    result = run["approval"]
    assert result["status"] == "passed", result
    assert [t["output"] for t in result["turns"]] == ["Book TP1351? (yes/no)", "You said yes: booked."]


def test_the_case_timeout_cancels_the_graph(run, project):
    assert run["hangs"]["status"] == "error"
    assert run["hangs"]["error"] == "timeout after 100ms"
    assert (project / "cancelled.txt").read_text() == "the node was cancelled"


def test_a_limit_stops_the_graph_as_soon_as_its_state_goes_over(run, project):
    over = run["over-tool-calls"]
    assert over["status"] == "failed"
    assert over["error"] == "limit exceeded: tool_calls reached 3, over the limit of 2 (counted in the agent)"
    # The third call was seen in the state before the tools node ran it: two ticks, not five.
    assert (project / "ticks-over.txt").read_text().count("tick") == 2
    assert [c["name"] for c in over["tool_calls"]] == ["tick"] * 3
    assert run["under-tool-calls"]["status"] == "passed"
    assert (project / "ticks-under.txt").read_text().count("tick") == 5


def test_a_graph_that_raises_is_an_error_that_keeps_the_calls_made(run):
    result = run["crashes"]
    assert result["status"] == "error"
    assert result["error"] == "agent error: ValueError: flight FR8342 is sold out"
    assert [(c["name"], c.get("status")) for c in result["tool_calls"]] == [("book_flight", None)]


def test_the_cases_options_are_the_runs_config_and_context(run):
    assert run["configured"]["status"] == "passed", run["configured"]
    assert run["bad-options"]["status"] == "error"
    assert run["bad-options"]["error"] == "options.configurable must be a mapping, not list"


def test_attachments_become_langchains_content_blocks(run):
    assert run["attachments"]["status"] == "passed", run["attachments"]["output"]


def test_a_function_returning_a_graphs_state_or_messages_is_read_as_the_graphs_run(run):
    assert run["returns-state"]["status"] == "passed", run["returns-state"]
    assert [(c["name"], c["status"], c["turn"]) for c in run["returns-state"]["tool_calls"]] == [
        ("search_flights", "ok", 1)
    ]
    assert run["returns-messages"]["status"] == "failed"
    assert failing(run["returns-messages"]) == [
        'expected a call to book_flight; matched 0; calls: search_flights({"destination": "Lisbon"})'
    ]


def test_a_graph_specrun_cannot_run_is_bad_input(tmp_path):
    (tmp_path / "bad_graphs.py").write_text(
        "from typing import TypedDict\n"
        "from langgraph.graph import START, StateGraph\n"
        "class Count(TypedDict):\n    count: int\n"
        "counter = StateGraph(Count)\n"
        "counter.add_node('up', lambda s: {'count': s['count'] + 1})\n"
        "counter.add_edge(START, 'up')\n"
        "compiled = counter.compile()\n"
    )
    case = {"id": "a", "input": "hi", "assertions": [{"type": "contains", "value": "x"}]}
    said = {
        "counter": "LangGraph StateGraph that is not compiled: name the compiled graph (graph = builder.compile())",
        "compiled": "the LangGraph graph 'LangGraph' has no 'messages' key in its state (its keys: count)",
    }
    for target, message in said.items():
        (tmp_path / "suite.jsonl").write_text(json.dumps({**case, "target": f"python:bad_graphs:{target}"}) + "\n")
        done = run_cli(["suite.jsonl"], tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"suite.jsonl:1:1: target 'python:bad_graphs:{target}': function: " in done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
