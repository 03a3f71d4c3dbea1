"""Trust: no case field goes unread, generated cases stay data only, evaluators return booleans.

Issue 11.1 (no silent pass: ``expected`` beside suite defaults, fields nothing reads), 18.4
(generated cases cannot call project agents, nor loosen gates or timeouts) and 18.9 (a ``Test``
API evaluator that returns a non-boolean ``passed`` is an error).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import support.cli
from support.llm_server import LLMServer

from specrun import hookimpl
from specrun._core.errors import EvaluationError, SuiteError
from specrun._core.kinds import Simulator
from specrun._load.case_rules import GeneratedLimits
from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager
from specrun.testing import Test


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return support.cli.run_cli(args, cwd, env)


def results(path: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"]: r for r in records if r["type"] == "result"}


def problems(tmp_path: Path, suite: str) -> list[str]:
    """Each problem of ``suite`` (YAML text) as ``LINE:COL: message (at FIELD)``."""
    (tmp_path / "s.yaml").write_text(textwrap.dedent(suite))
    try:
        Loader(get_plugin_manager().registry).load([tmp_path / "s.yaml"])
    except SuiteError as exc:
        return [str(p).split(":", 1)[1] for p in exc.problems]
    return []


# -- 11.1: `expected` is checked or rejected; no field goes unread ------------------------------


def test_expected_is_checked_beside_suite_default_assertions(tmp_path):
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'goodbye'\n")
    (tmp_path / "s.yaml").write_text(
        textwrap.dedent(
            """\
            target: python:bot:answer
            defaults:
              assertions:
                - {type: contains, value: error, negate: true}
            cases:
              - id: wrong
                input: hi
                expected: hello
            """
        )
    )
    proc = run_cli(tmp_path, "s.yaml", "-o", "out.jsonl")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    record = results(tmp_path / "out.jsonl")["wrong"]
    assert record["status"] == "failed"
    # the defaults' check first, then the case's own `expected` as an equals check
    assert [(a["type"], a["status"]) for a in record["assertions"]] == [("contains", "passed"), ("equals", "failed")]


@pytest.mark.parametrize(
    ("suite", "problem"),
    [
        (  # `expected` beside assertions that do not read it
            """\
            - id: a
              input: hi
              expected: hello
              assertions: {type: contains, value: hel}
            """,
            "3:13: 'expected' would never be checked: case 'a' has assertions of its own, and none of them"
            " reads it (as match and script do); remove it, or add {type: equals, value: ...} or {type: match}"
            " (at cases[0].expected)",
        ),
        (  # the same `expected`, inherited from defaults
            """\
            defaults:
              expected: hello
            cases:
              - id: a
                input: hi
                assertions: [{type: match, expected: hi, mode: score}]
            """,
            "2:13: 'expected' would never be checked: case 'a' has assertions of its own",
        ),
        (  # a dynamic case is judged by its checkpoints: its `assertions` and `expected` are never read
            """\
            - id: d
              input: hi
              simulator: {type: scripted, turns: [hi]}
              assertions: [{type: contains, value: x}]
            """,
            "4:15: 'assertions' would never be checked: case 'd' is dynamic (it has a simulator or checkpoints),"
            " and a dynamic case is judged by its checkpoints only; make them checkpoints (at cases[0].assertions)",
        ),
        (
            """\
            - id: d
              expected: hello
              checkpoints: [{id: c, assertion: {type: contains, value: x}}]
            """,
            "2:13: 'expected' would never be checked: case 'd' is dynamic, and none of its checkpoints reads it",
        ),
        (  # the defaults' assertions would skip a dynamic case: reported once, at defaults
            """\
            defaults:
              assertions: [{type: contains, value: x}]
            cases:
              - {id: s, input: hi}
              - {id: d, checkpoints: [{id: c, assertion: {type: contains, value: x}}]}
              - {id: e, checkpoints: [{id: c, assertion: {type: contains, value: x}}]}
            """,
            "2:15: 'assertions' would never be checked: case 'd' is dynamic (it has a simulator or checkpoints),"
            " and a dynamic case is judged by its checkpoints only; keep dynamic cases in a file of their own"
            " (at defaults.assertions)",
        ),
        (
            """\
            - {id: s, input: hi, max_turns: 3}
            """,
            "1:33: 'max_turns' would never be read: case 's' is not dynamic (it has no simulator or checkpoints)"
            " (at cases[0].max_turns)",
        ),
    ],
)
def test_fields_nothing_reads_are_rejected_where_they_are(tmp_path, suite, problem):
    found = problems(tmp_path, suite)
    assert len(found) == 1 and found[0].startswith(problem), found


def test_expected_read_by_an_assertion_or_alone_is_accepted(tmp_path):
    standard = """\
        defaults:
          assertions: [{type: contains, value: error, negate: true}]
        cases:
          - {id: alone, input: hi, expected: hello}
          - {id: empty, input: hi, expected: hello, assertions: []}
          - {id: matched, input: hi, expected: hello, assertions: [{type: match, mode: score}]}
          - {id: scripted, input: hi, expected: hello, assertions: [{type: script, script: checks.ok}]}
        """
    (tmp_path / "checks.py").write_text("def ok(output, input, expected):\n    return True\n")
    assert problems(tmp_path, standard) == []
    dynamic = """\
        - id: checkpoint
          expected: hello
          max_turns: 3
          assertions: []
          simulator: {type: scripted, turns: [hi]}
          checkpoints: [{id: c, assertion: {type: match, mode: score}}]
        """
    assert problems(tmp_path, dynamic) == []


# -- 18.4: generated cases stay data only ------------------------------------------------------

CHECKPOINT = [{"id": "c", "assertion": {"type": "contains", "value": "pong"}}]
SCRIPTED = {"type": "scripted", "turns": ["ping"]}

# A model's generator reply that tries every way out of "data only" at once.
HOSTILE = [
    {"id": "sim-use", "input": "ping", "simulator": {"use": "wipe"}, "checkpoints": CHECKPOINT},
    {
        "id": "sim-agent",
        "input": "ping",
        "simulator": {"type": "agent", "use": "agents:wipe"},
        "checkpoints": CHECKPOINT,
    },
    {"id": "validator", "input": "ping", "assertions": [{"type": "agent", "use": "agents:wipe"}]},
    {
        "id": "checkpoint-validator",
        "input": "ping",
        "simulator": SCRIPTED,
        "checkpoints": [{"id": "c", "assertion": {"type": "agent", "use": "agents:wipe"}}],
    },
    {"id": "gate", "input": "ping", "min_pass_rate": 10, "assertions": [{"type": "contains", "value": "no"}]},
    {"id": "slow", "input": "ping", "timeout": "1h", "assertions": [{"type": "contains", "value": "pong"}]},
    {"id": "long", "input": "ping", "simulator": SCRIPTED, "max_turns": 1000, "checkpoints": CHECKPOINT},
]

WIPE = """
from pathlib import Path
def respond(messages, ctx):
    Path(__file__).with_name("WIPED").write_text(ctx.case_id)  # what a dangerous agent does
    return '{"passed": true, "score": 1.0, "reason": "fine", "message": "ok", "goal_achieved": true}'
"""


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


def generator_project(root: Path, config: str = "") -> None:
    (root / "specrun.yaml").write_text("timeout: 20s\n" + config)
    agents = {
        "gen": "target: {type: litellm, model: openai/gpt-4o-mini}\n",
        "wipe": "target: python:wipe_agent:respond\n",
        "pong": "target: python:pong_agent:respond\n",
    }
    for name, agent in agents.items():
        (root / name).mkdir()
        (root / name / "agent.yaml").write_text(agent)
    (root / "wipe" / "wipe_agent.py").write_text(WIPE)
    (root / "pong" / "pong_agent.py").write_text("def respond(messages, ctx):\n    return 'pong'\n")


def generate(root: Path, server: LLMServer, cases: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """Run the cases a model-backed generator agent writes (served over HTTP) against `pong`."""
    server.script({"content": "Here are your tests:\n```json\n" + json.dumps({"cases": cases}) + "\n```"})
    env = {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "test-key"}
    return run_cli(root, "-i", "agents:gen?count=7", "-n", "pong", "-o", "out.jsonl", "--no-cache", env=env)


def test_generated_cases_cannot_call_agents_nor_loosen_limits(tmp_path, server):
    generator_project(tmp_path)
    asked = len(server.requests)
    proc = generate(tmp_path, server, HOSTILE)
    output = proc.stdout + proc.stderr
    assert len(server.requests) == asked + 1  # the generator model was asked, once
    assert proc.returncode == 2, output
    assert "Traceback" not in output
    origin = "agents:gen?count=7"
    refused = (
        "may not call agent {}: generated cases may call only the agents listed under generated.agents"
        " in specrun.yaml (listed: none)"
    )
    for line in [
        f"{origin}:1:1: generated case 'sim-use' " + refused.format("'wipe'") + " (at cases[0].simulator.use)",
        f"{origin}:2:1: generated case 'sim-agent' " + refused.format("'agents:wipe'") + " (at cases[1].simulator.use)",
        f"{origin}:3:1: generated case 'validator' "
        + refused.format("'agents:wipe'")
        + " (at cases[2].assertions[0].use)",
        f"{origin}:4:1: generated case 'checkpoint-validator' "
        + refused.format("'agents:wipe'")
        + " (at cases[3].checkpoints[0].assertion.use)",
        f"{origin}:5:1: generated case 'gate' may not lower its pass-rate gate to 10%, below the run's 100%:"
        " generated cases may only tighten the run's limits (at cases[4].min_pass_rate)",
        f"{origin}:6:1: generated case 'slow' may not raise its timeout to '1h', above the run's 20.0s:"
        " generated cases may only tighten the run's limits (at cases[5].timeout)",
        f"{origin}:7:1: generated case 'long' may not raise max_turns to 1000, above the run's 20:"
        " generated cases may only tighten the run's limits (at cases[6].max_turns)",
    ]:
        assert line in proc.stderr.splitlines(), output
    assert not (tmp_path / "wipe" / "WIPED").exists()  # the dangerous agent was never called
    assert not (tmp_path / "out.jsonl").exists()  # nothing ran


def test_generated_cases_call_only_allowed_agents_and_may_tighten(tmp_path, server):
    generator_project(tmp_path, "generated:\n  agents: [wipe]\n")
    cases = [
        {"id": "validator", "input": "ping", "assertions": [{"type": "agent", "use": "agents:wipe"}]},
        {"id": "tight", "input": "ping", "timeout": "5s", "min_pass_rate": 100, "expected": "pong"},
        {"id": "short", "input": "ping", "simulator": SCRIPTED, "max_turns": 2, "checkpoints": CHECKPOINT},
    ]
    proc = generate(tmp_path, server, cases)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {k: r["status"] for k, r in results(tmp_path / "out.jsonl").items()} == dict.fromkeys(
        ["validator", "tight", "short"], "passed"
    )
    assert (tmp_path / "wipe" / "WIPED").read_text() == "validator"  # listed in specrun.yaml: called


class _CodeSimulator(Simulator):
    name = "from-code"
    data_only = False  # runs a function named in its config


class _Plugin:
    @hookimpl
    def register_simulators(self, register):
        register(_CodeSimulator)


def test_generated_cases_may_not_use_a_simulator_that_runs_code(tmp_path):
    loader = Loader(get_plugin_manager(extra=[_Plugin()]).registry)
    case = {"id": "g", "input": "hi", "simulator": {"type": "from-code"}, "checkpoints": CHECKPOINT}
    assert loader.load_data([case], "scripts:x", tmp_path, generated=False).cases  # a suite's case may
    with pytest.raises(SuiteError, match=r"generated case 'g' may not use a 'from-code' simulator \(it runs code\)"):
        loader.load_data([case], "scripts:x", tmp_path)


def test_generated_cases_may_not_choose_a_model(tmp_path):
    """A generated judge or simulator naming its own model would spend the user's keys on it."""
    loader = Loader(get_plugin_manager().registry)
    judge = {"id": "judge", "input": "hi", "assertions": [{"type": "llm", "criteria": "ok", "model": "openai/o1-pro"}]}
    simulator = {"id": "sim", "input": "hi", "simulator": {"type": "llm", "goal": "g", "model": "openai/o1-pro"}}
    simulator["checkpoints"] = CHECKPOINT
    assert loader.load_data([judge, simulator], "scripts:x", tmp_path, generated=False).cases  # a suite's may
    with pytest.raises(SuiteError) as raised:
        loader.load_data([judge, simulator], "scripts:x", tmp_path)
    shown = [str(p) for p in raised.value.problems]
    assert [p.split(": ", 1)[1] for p in shown] == [
        "generated case 'judge' may not choose a model ('openai/o1-pro'): the suite and specrun.yaml do"
        " (at cases[0].assertions[0].model)",
        "generated case 'sim' may not choose a model ('openai/o1-pro'): the suite and specrun.yaml do"
        " (at cases[1].simulator.model)",
    ]


def test_a_run_gate_and_timeout_are_the_limits_generated_cases_tighten(tmp_path):
    loader = Loader(get_plugin_manager().registry, GeneratedLimits(timeout=60.0, min_pass_rate=50.0, max_turns=5))
    ok = {"id": "ok", "input": "hi", "timeout": "1m", "min_pass_rate": 50}
    assert loader.load_data([ok], "scripts:x", tmp_path).cases[0].timeout == 60.0
    for field, value in (("timeout", "61s"), ("min_pass_rate", 49.5)):
        with pytest.raises(SuiteError, match=f"generated case 'bad' may not .* \\(at cases\\[0\\].{field}\\)"):
            loader.load_data([{"id": "bad", "input": "hi", field: value}], "scripts:x", tmp_path)


# -- 18.9: a `Test` API evaluator's verdict is a boolean -----------------------------------------


class _Returns:
    def __init__(self, verdict: Any):
        self.verdict = verdict

    def evaluate(self, actual, expected, user_input, threshold, mode):
        return self.verdict


@pytest.mark.parametrize(
    ("verdict", "problem"),
    [
        (("no", 0.0, "a truthy string"), "returned passed='no' (str); expected True or False"),
        ((1, 1.0, "an int"), "returned passed=1 (int); expected True or False"),
        ((None, 0.0, "nothing"), "returned passed=None (NoneType); expected True or False"),
        ((True, True, "a boolean score"), "returned a non-numeric score True"),
        ((True, None, "no score"), "returned a non-numeric score None"),
    ],
)
def test_an_evaluator_verdict_that_is_not_a_boolean_is_an_error(verdict, problem):
    with pytest.raises(EvaluationError, match=f"evaluator _Returns {problem}".replace("(", r"\(").replace(")", r"\)")):
        Test.compare("an answer", "the answer", evaluator=_Returns(verdict))


def test_an_evaluator_boolean_verdict_still_decides():
    assert Test.compare("x", "x", evaluator=_Returns((True, 0.9, "fine"))) == (True, 0.9, "fine")
    with pytest.raises(AssertionError, match=r"best score: 0\.1; not close"):
        Test.compare("x", "y", evaluator=_Returns((False, 0.1, "not close")))
