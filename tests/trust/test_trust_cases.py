"""Trust: no case field goes unread, generated cases stay data only, evaluators return booleans.

Issue 11.1 (no silent pass: ``expected`` beside suite defaults, fields nothing reads) and 18.9
(a ``Test`` API evaluator that returns a non-boolean ``passed`` is an error).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from specrun.errors import EvaluationError, SuiteError
from specrun.loader import Loader
from specrun.plugins import get_plugin_manager
from specrun.testing import Test

SPECRUN = str(Path(sys.executable).with_name("specrun"))


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run([SPECRUN, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


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
