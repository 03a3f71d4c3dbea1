"""Per-case ``limits`` through the CLI: over a limit the case fails naming the limit, the value
reached and where it was counted; under it the case passes."""

from __future__ import annotations

import json

import pytest
from support.cli import run_cli
from support.llm_server import LLMServer

BOT = """\
import asyncio
import specrun

async def answer(messages, ctx):
    kind = ctx.options.get("kind")
    if kind == "hang":
        await asyncio.Event().wait()
    if kind == "plain":
        return "Booked."
    calls = [specrun.ToolCall("lookup", {"n": 1}), specrun.ToolCall("book", {"n": 2})]
    usage = specrun.Usage(prompt_tokens=400, completion_tokens=100, total_tokens=500, cost=0.02)
    return specrun.Response("Booked.", tool_calls=calls, usage=None if kind == "nousage" else usage)

async def talk(messages, ctx):
    if ctx.options.get("kind") == "hang":
        await asyncio.Event().wait()
    turn = sum(m.role == "user" for m in messages)
    return specrun.Response(f"reply {turn}", tool_calls=[])
"""

SUITE = """\
defaults:
  limits: {seconds: 30}
cases:
  - {id: calls-over, input: hi, limits: {tool_calls: 1}, assertions: [{type: contains, value: Booked}]}
  - {id: calls-under, input: hi, limits: {tool_calls: 2}, assertions: [{type: contains, value: Booked}]}
  - {id: tokens-over, input: hi, limits: {tokens: 499, tool_calls: 2}}
  - {id: cost-over, input: hi, limits: {cost: 0.01, tool_calls: 2}}
  - {id: under-all, input: hi, limits: {tokens: 500, cost: 0.02, tool_calls: 2}}
  - {id: project-limit, input: hi}
  - {id: seconds-over, input: hi, options: {kind: hang}, limits: {seconds: 0.05, tool_calls: 2}}
  - {id: seconds-duration, input: hi, options: {kind: hang}, limits: {seconds: 50ms}}
  - {id: calls-unknown, input: hi, options: {kind: plain}}
  - {id: usage-unknown, input: hi, options: {kind: nousage}, limits: {cost: 1, tool_calls: 2}}
  - id: judge-tokens
    input: hi
    limits: {tokens: 600, tool_calls: 2}
    assertions: [{type: llm, criteria: books}]
"""

DYNAMIC = """\
cases:
  - id: turns-over
    limits: {turns: 2}
    simulator: {type: scripted, turns: [one, two, three, four]}
    checkpoints: [{id: never, assertion: {type: contains, value: zzz}}]
  - id: seconds-dyn
    limits: {seconds: 0.05}
    options: {kind: hang}
    simulator: {type: scripted, turns: [one]}
    checkpoints: [{id: never, assertion: {type: contains, value: zzz}}]
  - id: turns-under
    limits: {turns: 2}
    simulator: {type: scripted, turns: [one, two]}
    checkpoints: [{id: second, assertion: {type: contains, value: reply 2}}]
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run of both suites; each test reads its cases."""
    root = tmp_path_factory.mktemp("limits")
    with LLMServer() as server:
        server.responder = lambda body: {
            "content": {"passed": True, "score": 1, "reason": "ok"},
            "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 700},
        }
        (root / "specrun.yaml").write_text(
            f"model: openai/gpt-4o-mini\nretries: 0\nlimits: {{tool_calls: 1}}\n"
            f"model_params: {{api_base: '{server.base_url}', api_key: k}}\n"
        )
        (root / "bot.py").write_text(BOT)
        (root / "agent.yaml").write_text("target: python:bot:answer\n")
        (root / "talk").mkdir()
        (root / "talk" / "agent.yaml").write_text("target: python:bot:talk\n")
        (root / "suite.yaml").write_text(SUITE)
        (root / "talk" / "dynamic.yaml").write_text(DYNAMIC)
        proc = run_cli(["run", "suite.yaml", "talk/dynamic.yaml", "-o", "out.json"], root)
    results = {r["id"]: r for r in json.loads((root / "out.json").read_text())["results"]}
    return proc, results


def error(results, case_id):
    return results[case_id]["status"], results[case_id].get("error")


def test_the_run_fails_and_each_case_under_its_limits_passes(run):
    proc, results = run
    assert proc.returncode == 1, proc.stderr
    assert error(results, "calls-under") == ("passed", None)
    assert error(results, "under-all") == ("passed", None)
    assert error(results, "turns-under") == ("passed", None)


def test_tool_calls_tokens_and_cost_of_the_agent(run):
    _, results = run
    counted = " (counted in the agent)"
    assert error(results, "calls-over") == (
        "failed",
        "limit exceeded: tool_calls reached 2, over the limit of 1" + counted,
    )
    assert results["calls-over"]["assertions"] == []  # over a limit, nothing is judged
    assert error(results, "tokens-over") == (
        "failed",
        "limit exceeded: tokens reached 500, over the limit of 499" + counted,
    )
    assert error(results, "cost-over") == (
        "failed",
        "limit exceeded: cost reached $0.02, over the limit of $0.01" + counted,
    )


def test_specrun_yaml_gives_the_limit_a_case_does_not_override(run):
    _, results = run
    assert error(results, "project-limit") == (
        "failed",
        "limit exceeded: tool_calls reached 2, over the limit of 1 (counted in the agent)",
    )


def test_the_judges_tokens_are_counted_apart_from_the_agents(run):
    _, results = run
    status, message = error(results, "judge-tokens")  # the agent's 500 tokens are under 600
    assert status == "failed"
    assert message == "limit exceeded: tokens reached 700, over the limit of 600 (counted in the judge)"
    assert results["judge-tokens"]["assertions"][0]["status"] == "passed"  # the verdict is kept


def test_seconds_cut_the_agent_short(run):
    _, results = run
    status, message = error(results, "seconds-over")
    assert status == "failed" and message.startswith("limit exceeded: seconds reached 0.0"), message
    assert message.endswith("over the limit of 0.05 (counted in the agent)")


def test_a_dynamic_case_asks_for_no_turn_over_the_limit(run):
    _, results = run
    status, message = error(results, "turns-over")
    assert status == "failed"
    assert (
        message
        == "limit exceeded: turns reached 3 (the turn about to start), over the limit of 2 (counted in the agent)"
    )
    assert [t["input"] for t in results["turns-over"]["turns"]] == ["one", "two"]


def test_a_misspelt_or_negative_limit_is_refused_with_its_place(tmp_path):
    (tmp_path / "bad.yaml").write_text("cases:\n  - {id: a, input: hi, limits: {tool_call: 3, tokens: -1}}\n")
    proc = run_cli(["validate", "bad.yaml"], tmp_path)
    assert proc.returncode == 2
    assert "bad.yaml:2:" in proc.stderr and "tool_call" in proc.stderr and "tokens" in proc.stderr, proc.stderr


def test_a_generated_case_may_tighten_the_projects_limits_never_loosen_them(tmp_path):
    from specrun._core.errors import SuiteError
    from specrun._load.case_rules import GeneratedLimits
    from specrun._load.loader import Loader
    from specrun._project.plugin_manager import get_plugin_manager

    loader = Loader(get_plugin_manager().registry, GeneratedLimits(case_limits={"cost": 0.05}))
    tight = [{"id": "b", "input": "hi", "limits": {"cost": 0.01, "tokens": 5}}]
    assert loader.load_data(tight, "gen", tmp_path, generated=True).cases[0].limits == {"cost": 0.01, "tokens": 5}
    with pytest.raises(SuiteError) as refused:
        loader.load_data([{"id": "a", "input": "hi", "limits": {"cost": 1}}], "gen", tmp_path, generated=True)
    assert "generated case 'a' may not raise limits.cost to 1, above the run's 0.05" in str(refused.value)
    timed = Loader(get_plugin_manager().registry, GeneratedLimits(case_limits={"seconds": "30s"}))
    with pytest.raises(SuiteError) as refused:  # a duration is compared as the seconds it is
        timed.load_data([{"id": "c", "input": "hi", "limits": {"seconds": "1h"}}], "gen", tmp_path, generated=True)
    assert "generated case 'c' may not raise limits.seconds to 3600, above the run's 30" in str(refused.value)


def test_a_limit_on_what_the_agent_did_not_report_is_an_error_not_a_pass(run):
    _, results = run
    assert error(results, "calls-unknown") == (
        "error",
        "limits.tool_calls cannot be checked: the agent did not report its tool calls",
    )
    assert error(results, "usage-unknown") == ("error", "limits.cost cannot be checked: the agent reported no usage")


def test_seconds_may_be_written_as_a_duration_like_every_other_time(run):
    _, results = run
    status, message = error(results, "seconds-duration")
    assert status == "failed" and message.startswith("limit exceeded: seconds reached 0.0"), message
    assert message.endswith("over the limit of 0.05 (counted in the agent)"), message


def test_seconds_bound_a_dynamic_case_and_cut_its_turn_short(run):
    _, results = run
    status, message = error(results, "seconds-dyn")
    assert status == "failed" and message.startswith("limit exceeded: seconds reached 0.0"), message
    assert message.endswith("over the limit of 0.05 (counted in the conversation) in turn 1")


def test_a_report_from_outside_the_reply_cancels_it_even_when_the_reply_swallows_that():
    """A trace's spans are reported from the loop, not from the task awaiting the reply: over a
    limit, that task is cancelled, and the case fails on the limit even if the agent's code let
    the cancellation go by; no cancellation is left over for the runner. A thread's report is
    counted only at the reply's end."""
    import asyncio

    from specrun import Response, ToolCall
    from specrun._run.limits import LimitExceeded, Meter

    over = Response(None, tool_calls=[ToolCall("a"), ToolCall("b")])

    async def scenario(swallow: bool) -> None:
        meter = Meter({"tool_calls": 1})

        async def reply() -> str:
            await asyncio.to_thread(meter.observe, over)  # from a thread: not now
            asyncio.get_running_loop().call_soon(meter.observe, over)  # from the loop: stops it
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                if not swallow:
                    raise
            return "done"

        with pytest.raises(LimitExceeded, match="tool_calls reached 2, over the limit of 1"):
            with meter.watching():
                await reply()
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0)  # nothing pending: the case goes on to its result

    for swallow in (False, True):
        asyncio.run(scenario(swallow))
