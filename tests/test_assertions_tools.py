"""tool_called, tool_not_called, tool_order, word_count, latency, cost and script."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from specrun_plugins.assertions import metrics, script, tools
from test_assertions import check, problems, run

from specrun._core.data import Assertion, Case, Location, Message, Suite, ToolCall, Usage
from specrun._core.errors import EvaluationError
from specrun._core.kinds import Verdict

CALLS = [
    ToolCall("search", {"q": "flights", "limit": 5}),
    ToolCall("mcp__expenses__create_expense", {"amount": 3500, "meta": {"kind": "travel", "x": 1}}),
    ToolCall("search", {"q": "hotels"}),
]


async def tool(cls: type, calls: list[ToolCall] = CALLS, **params: Any) -> Verdict:
    return await cls().evaluate(Assertion(cls.name, params), check("done", tool_calls=calls))


# -- tool_called ------------------------------------------------------------------------------


async def test_tool_called_by_exact_name():
    assert (await tool(tools.ToolCalled, name="search")).passed
    verdict = await tool(tools.ToolCalled, name="create_expense")
    assert not verdict.passed
    assert "expected a call to create_expense; matched 0" in verdict.message
    assert "mcp__expenses__create_expense(" in verdict.message


async def test_tool_called_never_matches_a_substring():
    assert not (await tool(tools.ToolCalled, name="sear")).passed
    assert not (await tool(tools.ToolCalled, name="expense", match="suffix")).passed


async def test_tool_called_by_suffix_after_a_separator():
    assert (await tool(tools.ToolCalled, name="create_expense", match="suffix")).passed
    recreate = [ToolCall("recreate_expense")]
    assert not (await tool(tools.ToolCalled, recreate, name="create_expense", match="suffix")).passed


async def test_tool_called_with_a_list_of_names_means_any():
    assert (await tool(tools.ToolCalled, name=["lookup", "search"])).passed
    assert not (await tool(tools.ToolCalled, name=["lookup", "fetch"])).passed


async def test_tool_called_with_argument_subset():
    assert (await tool(tools.ToolCalled, name="search", arguments={"q": "hotels"})).passed
    nested = {"meta": {"kind": "travel"}}
    assert (await tool(tools.ToolCalled, name="create_expense", match="suffix", arguments=nested)).passed
    verdict = await tool(tools.ToolCalled, name="search", arguments={"q": "cars"})
    assert not verdict.passed and 'with arguments {"q": "cars"}' in verdict.message


async def test_tool_called_reads_arguments_given_as_json_text():
    calls = [ToolCall("search", '{"q": "x"}')]  # type: ignore[arg-type]
    assert (await tool(tools.ToolCalled, calls, name="search", arguments={"q": "x"})).passed


async def test_tool_called_times():
    assert (await tool(tools.ToolCalled, name="search", times=2)).passed
    verdict = await tool(tools.ToolCalled, name="search", times=1)
    assert not verdict.passed and "exactly 1 time(s); matched 2" in verdict.message
    assert (await tool(tools.ToolCalled, name="delete", times=0)).passed


async def test_tool_called_with_no_calls():
    verdict = await tool(tools.ToolCalled, [], name="search")
    assert not verdict.passed and "no tools were called" in verdict.message


def test_name_matches():
    assert tools.name_matches("a.b.create", "create", "suffix")
    assert tools.name_matches("server/create", "create", "suffix")
    assert tools.name_matches("mcp__srv__create", "create", "suffix")
    assert not tools.name_matches("a.b.create", "create")
    assert not tools.name_matches("precreate", "create", "suffix")
    assert not tools.name_matches("bulk_create", "create", "suffix")


# -- tool_not_called --------------------------------------------------------------------------


async def test_tool_not_called():
    assert (await tool(tools.ToolNotCalled, name="delete_everything")).passed
    verdict = await tool(tools.ToolNotCalled, name="search")
    assert not verdict.passed and "matched 2" in verdict.message


async def test_tool_not_called_with_arguments_and_without_a_name():
    assert (await tool(tools.ToolNotCalled, name="search", arguments={"q": "cars"})).passed
    assert not (await tool(tools.ToolNotCalled, name="search", arguments={"q": "hotels"})).passed
    assert (await tool(tools.ToolNotCalled, [])).passed
    assert not (await tool(tools.ToolNotCalled)).passed


# -- tool_order -------------------------------------------------------------------------------


async def test_tool_order_is_a_subsequence():
    assert (await tool(tools.ToolOrder, names=["search", "search"])).passed
    assert (await tool(tools.ToolOrder, names=["create_expense", "search"], match="suffix")).passed
    verdict = await tool(tools.ToolOrder, names=["create_expense", "search", "pay"], match="suffix")
    assert not verdict.passed
    assert "'pay' not found after create_expense → search" in verdict.message
    assert verdict.actual == ["search", "mcp__expenses__create_expense", "search"]


async def test_tool_order_fails_when_reversed():
    calls = [ToolCall("b"), ToolCall("a")]
    verdict = await tool(tools.ToolOrder, calls, names=["a", "b"])
    assert not verdict.passed and "called: b, a" in verdict.message


# -- the evidence: reported or not, status, steps, turns ---------------------------------------

TRIP = [  # one model step each, but check_stock and check_price in one (in parallel)
    ToolCall("lookup_order", {"id": "A1"}, status="ok", step=1),
    ToolCall("check_stock", status="ok", step=2),
    ToolCall("check_price", status="error", step=2),
    ToolCall("refund", {"id": "A1"}, step=3),  # whether it succeeded is not said
]


@pytest.mark.parametrize(
    ("cls", "params"),
    [(tools.ToolCalled, {"name": "x"}), (tools.ToolNotCalled, {}), (tools.ToolOrder, {"names": ["x"]})],
)
async def test_a_reply_that_reports_no_tool_calls_is_never_a_pass_nor_a_fail(cls, params):
    with pytest.raises(EvaluationError, match=r"cannot be judged: the target reports no tool calls \(it returned text"):
        await cls().evaluate(Assertion(cls.name, params), check("I looked it up."))
    verdict = await tool(cls, [], **params)  # an empty list, given: no tool was called
    assert verdict.passed == (cls is tools.ToolNotCalled)


async def test_a_call_counts_for_the_status_it_says():
    assert (await tool(tools.ToolCalled, TRIP, name="lookup_order", status="ok")).passed
    assert (await tool(tools.ToolCalled, TRIP, name="check_price", status="error")).passed
    verdict = await tool(tools.ToolCalled, TRIP, name="check_price", status="ok")
    assert (
        not verdict.passed and "expected a call to check_price that succeeded (status ok); matched 0" in verdict.message
    )
    assert not (await tool(tools.ToolNotCalled, TRIP, status="error")).passed  # check_price failed
    assert (await tool(tools.ToolNotCalled, TRIP, name="lookup_order", status="error")).passed


async def test_a_call_of_unknown_status_satisfies_neither_and_cannot_decide_a_verdict():
    verdict = await tool(tools.ToolCalled, TRIP, name=["lookup_order", "refund"], status="ok")
    assert verdict.passed  # lookup_order succeeded, whatever refund did
    assert "1 matching call does not say whether it succeeded (ToolCall.status): not counted" in verdict.message
    for cls, params in [
        (tools.ToolCalled, {"name": "refund", "status": "ok"}),
        (tools.ToolCalled, {"name": "refund", "status": "error", "times": 0}),
        (tools.ToolNotCalled, {"name": "refund", "status": "error"}),
    ]:
        with pytest.raises(EvaluationError, match=r"call does not say whether it succeeded \(ToolCall\.status\)"):
            await tool(cls, TRIP, **params)


async def test_tool_order_knows_calls_made_in_one_step():
    assert (await tool(tools.ToolOrder, TRIP, names=["lookup_order", ["check_stock", "check_price"], "refund"])).passed
    assert (await tool(tools.ToolOrder, TRIP, names=["lookup_order", ["check_price", "check_stock"]])).passed
    verdict = await tool(tools.ToolOrder, TRIP, names=["check_stock", "check_price"])
    assert not verdict.passed
    assert "(check_price was called in the same step as check_stock, in parallel, not after it)" in verdict.message
    assert "called: lookup_order, [check_stock, check_price], refund" in verdict.message
    assert verdict.actual == ["lookup_order", ["check_stock", "check_price"], "refund"]
    verdict = await tool(tools.ToolOrder, TRIP, names=[["lookup_order", "check_stock"]])
    assert (
        not verdict.passed and "[lookup_order, check_stock] (in one step) not found after the start" in verdict.message
    )
    # Steps order the calls, not the list: a later step listed first still comes after.
    late_first = [ToolCall("b", step=2), ToolCall("a", step=1)]
    assert (await tool(tools.ToolOrder, late_first, names=["a", "b"])).passed


async def test_calls_made_in_one_step_cannot_be_judged_without_steps():
    calls = [ToolCall("a"), ToolCall("b")]
    assert (await tool(tools.ToolOrder, calls, names=["a", "b"])).passed  # no steps: as listed
    with pytest.raises(EvaluationError, match=r"\[a, b\] must be called in one step .* do not say their model step"):
        await tool(tools.ToolOrder, calls, names=[["a", "b"]])


async def test_turns_narrow_and_order_the_calls():
    calls = [ToolCall("book", turn=2), ToolCall("search", turn=1)]  # turns order them, not the list
    assert (await tool(tools.ToolCalled, calls, name="search", turn=1)).passed
    verdict = await tool(tools.ToolCalled, calls, name="search", turn=2)
    assert not verdict.passed and "expected a call to search in turn 2; matched 0" in verdict.message
    assert (await tool(tools.ToolNotCalled, calls, name="book", turn=1)).passed
    assert (await tool(tools.ToolOrder, calls, names=["search", "book"])).passed
    assert not (await tool(tools.ToolOrder, calls, names=["search", "book"], turn=2)).passed
    with pytest.raises(EvaluationError, match=r"call does not say its turn \(ToolCall\.turn\)"):
        await tool(tools.ToolCalled, [ToolCall("search")], name="search", turn=1)
    with pytest.raises(EvaluationError, match=r"cannot be judged in turn 1: .* \(ToolCall\.turn\)"):
        await tool(tools.ToolOrder, [ToolCall("search")], names=["search"], turn=1)


# -- word_count, latency, cost ----------------------------------------------------------------


async def test_word_count():
    assert (await run(metrics.WordCount, "one two  three\nfour", min=4, max=4)).passed
    assert (await run(metrics.WordCount, "one two", max=5)).passed
    verdict = await run(metrics.WordCount, "one two", min=3)
    assert not verdict.passed and verdict.message.startswith("output has 2 words (expected at least 3)")


def test_word_count_problems():
    assert problems(metrics.WordCount) == [("min", "word_count needs 'min', 'max' or both")]
    assert problems(metrics.WordCount, min=5, max=2) == [("min", "min (5) is greater than max (2)")]
    assert problems(metrics.WordCount, min=1) == []


async def measured(cls: type, params: dict[str, Any], **response: Any) -> Verdict:
    return await cls().evaluate(Assertion(cls.name, params), check("x", **response))


async def test_latency():
    assert (await measured(metrics.Latency, {"max": 500}, latency_ms=120.0)).passed
    verdict = await measured(metrics.Latency, {"max": 100}, latency_ms=120.4)
    assert not verdict.passed and verdict.message == "latency 120 ms (expected at most 100 ms)"
    with pytest.raises(EvaluationError, match="latency is unknown"):
        await measured(metrics.Latency, {"max": 100})


async def test_cost():
    assert (await measured(metrics.Cost, {"max": 0.01}, usage=Usage(cost=0.002))).passed
    verdict = await measured(metrics.Cost, {"max": 0.001}, usage=Usage(cost=0.002))
    assert not verdict.passed and verdict.message == "cost $0.002 (expected at most $0.001)"
    with pytest.raises(EvaluationError, match="cost is unknown"):
        await measured(metrics.Cost, {"max": 1}, usage=Usage(total_tokens=5))
    with pytest.raises(EvaluationError):
        await measured(metrics.Cost, {"max": 1})


# -- script -----------------------------------------------------------------------------------

CHECKS = """\
import asyncio

def keywords(output, input, expected):
    return all(k in output for k in expected["keywords"])

def detailed(output, input, expected):
    return {"pass": len(output) < 10, "message": f"length {len(output)}", "score": 0.25}

async def slow(output, input, expected):
    await asyncio.sleep(0)
    return input[-1]["content"] == "hi"

def with_context(output, input, expected, context):
    return context["options"]["limit"] == 3 and context["tool_calls"][0]["name"] == "search"

def boom(output, input, expected):
    raise RuntimeError("kaput")

def weird(output, input, expected):
    return "yes"

def off_the_loop(output, input, expected):
    import threading
    return threading.current_thread() is not threading.main_thread()
"""


SCRIPTS = "specrun_assertion_scripts"  # unique: user modules are imported under their own name


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("suite")
    (root / SCRIPTS).mkdir()
    (root / SCRIPTS / "checks.py").write_text(CHECKS)
    yield root
    for name in [n for n in sys.modules if n == SCRIPTS or n.startswith(f"{SCRIPTS}.")]:
        del sys.modules[name]
    if str(root) in sys.path:
        sys.path.remove(str(root))


async def run_script(suite_dir: Path, output: Any, ref: str, **params: Any) -> Verdict:
    suite = Suite(path=suite_dir / "suite.jsonl")
    case = Case(
        id="c",
        location=Location("suite.jsonl"),
        input=[Message("user", "hi")],
        expected={"keywords": ["order", "shipped"]},
        suite=suite,
    )
    c = check(output, case=case, tool_calls=[ToolCall("search", {"q": "x"})])
    return await script.Script().evaluate(Assertion("script", {"script": ref, **params}), c)


async def test_script_returning_bool(suite_dir: Path):
    assert (await run_script(suite_dir, "order shipped", f"{SCRIPTS}.checks.keywords")).passed
    verdict = await run_script(suite_dir, "order lost", f"scripts:{SCRIPTS}.checks.keywords")
    assert not verdict.passed
    assert "returned False" in verdict.message and "order lost" in verdict.message
    assert verdict.expected == {"keywords": ["order", "shipped"]}


async def test_script_returning_a_mapping(suite_dir: Path):
    verdict = await run_script(suite_dir, "a long output", f"{SCRIPTS}.checks.detailed")
    assert not verdict.passed
    assert (verdict.message, verdict.score) == ("length 13", 0.25)


async def test_script_async_and_with_context(suite_dir: Path):
    assert (await run_script(suite_dir, "x", f"{SCRIPTS}.checks:slow")).passed
    assert (await run_script(suite_dir, "x", f"{SCRIPTS}.checks.with_context", options={"limit": 3})).passed


async def test_a_sync_script_runs_in_a_worker_thread(suite_dir: Path):
    assert (await run_script(suite_dir, "x", f"{SCRIPTS}.checks.off_the_loop")).passed


async def test_script_use_alias(suite_dir: Path):
    suite = Suite(path=suite_dir / "s.jsonl")
    case = Case(id="c", location=Location("s.jsonl"), input=[Message("user", "hi")], suite=suite)
    assertion = Assertion("script", {"use": f"scripts:{SCRIPTS}.checks.slow"})
    assert (await script.Script().evaluate(assertion, check("x", case=case))).passed


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        (f"{SCRIPTS}.checks.boom", "raised RuntimeError: kaput"),
        (f"{SCRIPTS}.checks.weird", 'returned "yes" (str)'),
        (f"{SCRIPTS}.checks.missing", "has no function 'missing'"),
        (f"{SCRIPTS}.nowhere.func", f"cannot find module '{SCRIPTS}.nowhere'"),
    ],
)
async def test_script_errors_are_evaluation_errors(suite_dir: Path, ref: str, error: str):
    with pytest.raises(EvaluationError, match=re.escape(error)):
        await run_script(suite_dir, "x", ref)


def test_script_problems(suite_dir: Path):
    assert problems(script.Script, suite_dir, script=f"{SCRIPTS}.checks.keywords") == []
    assert problems(script.Script, suite_dir, use="json.dumps") == []  # an importable module
    [(field, message)] = problems(script.Script, suite_dir, script=f"{SCRIPTS}.nowhere.func")
    assert field == "script" and f"cannot find module '{SCRIPTS}.nowhere'" in message
    assert problems(script.Script, suite_dir)[0][1] == "give the function as either 'script' or 'use'"
    assert problems(script.Script, suite_dir, script="nodots")[0][1].startswith("invalid reference")


def test_script_runs_code_so_is_not_data_only():
    assert script.Script.data_only is False
    assert all(cls.data_only for cls in (tools.ToolCalled, metrics.Cost))
