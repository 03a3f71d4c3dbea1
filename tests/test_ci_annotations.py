"""GitHub Actions through the CLI: with ``GITHUB_ACTIONS=true`` each failed or errored case is an
``::error`` annotation on its suite line, a Markdown summary is appended to
``$GITHUB_STEP_SUMMARY``, and nothing an agent prints can act as a workflow command."""

from __future__ import annotations

import os
import re
from pathlib import Path

from support.cli import run_cli

AGENT = """
def answer(messages, ctx):
    text = messages[-1].text
    if text == "crash":
        raise RuntimeError("database is down")
    if text == "forge":  # a Python agent runs in specrun's process: its prints reach the job log
        print("::warning title=forged::an agent wrote this")
        print("::add-mask::fine")
        return "fine\\n::error::and in its answer"
    return "a | <b>bold</b> reply to " + text
"""

SUITE = """\
name: CI example
cases:
  - id: passes
    input: hello
    assertions:
      - {type: contains, value: hello}

  - id: wrong-answer
    name: Says the refund window
    input: refund
    assertions:
      - {type: contains, value: 30 days}
      - {type: equals, value: "a | <b>bold</b> reply to refunds"}

  - id: crashes
    input: crash

  - id: "odd,id:here"
    input: forge
    assertions:
      - {type: contains, value: never}
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "bot.py").write_text(AGENT)
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "ci.yaml").write_text(SUITE)
    return tmp_path


def github_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    summary = tmp_path / "step_summary.md"
    summary.write_text("## Earlier step\n\n")
    return {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(tmp_path),
        **extra,
    }


def annotations(stdout: str) -> dict[str, str]:
    """``title -> the whole command line`` of each ``::error`` line."""
    found = {}
    for line in stdout.splitlines():
        match = re.match(r"::error file=([^,]*),line=(\d+),title=([^:]*)::(.*)", line)
        if match:
            found[match.group(3)] = line
    return found


def test_each_failed_or_errored_case_is_an_annotation_on_its_line(tmp_path):
    project(tmp_path)
    proc = run_cli(["ci.yaml", "-o", "../out.jsonl"], cwd=tmp_path / "suites", env=github_env(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = annotations(proc.stdout)
    assert set(found) == {"wrong-answer", "crashes", "odd%2Cid%3Ahere"}  # never the passing case
    # The path is the suite's from the repository root (GITHUB_WORKSPACE), whatever the folder the run is in.
    assert found["wrong-answer"].startswith("::error file=suites/ci.yaml,line=8,title=wrong-answer::failed: ")
    assert found["crashes"].startswith("::error file=suites/ci.yaml,line=15,title=crashes::error: agent error: ")
    assert "RuntimeError: database is down" in found["crashes"]
    assert found["odd%2Cid%3Ahere"].startswith("::error file=suites/ci.yaml,line=18,title=odd%2Cid%3Ahere::")
    # One annotation per line; expected and actual on the lines of its message.
    message = found["wrong-answer"].split("::", 2)[2]
    assert "\n" not in message
    assert "%0Aequals: expected a | <b>bold</b> reply to refunds%0A" in message
    assert "actual   a | <b>bold</b> reply to refund" in message


def test_step_summary_has_totals_and_failures_with_expected_and_actual(tmp_path):
    project(tmp_path)
    env = github_env(tmp_path)
    proc = run_cli(["suites"], cwd=tmp_path, env=env)
    assert proc.returncode == 1
    text = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert text.startswith("## Earlier step\n\n## ❌ specrun: 2 FAILED, 1 ERROR, 1 PASSED\n")  # appended
    assert "| 4 | 1 | 2 | 1 | 0 | 25.0% |" in text
    assert "#### ❌ wrong-answer · Says the refund window" in text
    assert "suites/ci.yaml:8 · failed" in text
    # Agent text is escaped: no table cell is broken, no HTML is rendered.
    row = next(line for line in text.splitlines() if line.startswith("| equals |"))
    assert row.endswith(
        "| a \\| &lt;b&gt;bold&lt;/b&gt; reply to refunds | a \\| &lt;b&gt;bold&lt;/b&gt; reply to refund |"
    )
    assert "<b>" not in text
    assert "#### ⚠️ crashes" in text and "error: agent error: RuntimeError: database is down" in text
    assert "passes" not in text.split("### Failures")[1]


def test_agent_output_cannot_issue_workflow_commands(tmp_path):
    project(tmp_path)
    proc = run_cli(["suites", "-v"], cwd=tmp_path, env=github_env(tmp_path))
    lines = proc.stdout.splitlines()
    stop = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", lines[0])
    assert stop, lines[0]  # before anything a case could print
    resume = lines.index(f"::{stop.group(1)}::")
    forged = [i for i, line in enumerate(lines) if line.startswith(("::warning title=forged", "::add-mask::"))]
    assert forged and all(0 < i < resume for i in forged)  # printed while commands were off
    assert "ALL TESTS PASSED" not in proc.stdout and "2 FAILED, 1 ERROR" in "\n".join(lines[:resume])
    assert all(line.startswith("::error ") for line in lines[resume + 1 :])  # the annotations come last


def test_passing_run_has_no_annotations_and_a_green_summary(tmp_path):
    project(tmp_path)
    env = github_env(tmp_path)
    proc = run_cli(["suites", "-k", "passes"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "::error" not in proc.stdout
    assert "## ✅ specrun: ALL TESTS PASSED" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def test_outside_github_actions_nothing_is_added(tmp_path):
    project(tmp_path)
    env = github_env(tmp_path, GITHUB_ACTIONS="false")
    proc = run_cli(["suites"], cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert not [line for line in proc.stdout.splitlines() if line.startswith(("::error", "::stop-commands"))]
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text() == "## Earlier step\n\n"


FLIP = """
import pathlib

def flip(messages, ctx):
    if messages[-1].text == "steady":
        return "yes"
    count = pathlib.Path(__file__).with_name("count.txt")
    n = int(count.read_text()) if count.exists() else 0
    count.write_text(str(n + 1))
    return "yes" if n % 2 == 0 else "no"
"""


def test_cases_flaky_in_the_run_history_are_marked(tmp_path):
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "coin.py").write_text(FLIP)
    (tmp_path / "agent.yaml").write_text("id: bot\ntarget: python:coin:flip\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - {id: coin, input: toss, assertions: [{type: contains, value: 'yes'}]}\n"
        "  - {id: steady, input: steady, assertions: [{type: contains, value: 'yes'}]}\n"
    )
    assert [run_cli(["suite.yaml"], cwd=tmp_path).returncode for _ in range(2)] == [0, 1]  # the history
    env = github_env(tmp_path)
    assert run_cli(["suite.yaml"], cwd=tmp_path, env=env).returncode == 0  # passes this time
    text = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    head = "### Flaky in the run history\n\n| Case | Suite | Agent | This run |\n| --- | --- | --- | --- |\n"
    assert head in text
    assert "| coin | suite.yaml:2 | bot | ✅ passed |" in text and "| steady |" not in text
    proc = run_cli(["suite.yaml"], cwd=tmp_path, env=env)
    assert proc.returncode == 1
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert line.startswith("::error file=suite.yaml,line=2,title=coin::failed: contains: ")
    assert "(flaky against bot in the run history)" in line
    text = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "suite.yaml:2 · failed · flaky against bot in the run history" in text


def test_a_case_flaky_against_one_agent_is_not_flaky_against_another(tmp_path):
    """Agent a flips between passing and failing; agent b fails the same case every time: only
    a's annotation and summary row say flaky, and they name a."""
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    fails = "def flip(messages, ctx):\n    return 'no'\n"
    for agent, code in (("a", FLIP.replace("n % 2 == 0", "n % 2 == 1")), ("b", fails)):
        (tmp_path / "agents" / agent).mkdir(parents=True)
        (tmp_path / "agents" / agent / f"coin_{agent}.py").write_text(code)
        (tmp_path / "agents" / agent / "agent.yaml").write_text(f"id: {agent}\ntarget: python:coin_{agent}:flip\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n  - {id: coin, input: toss, assertions: [{type: contains, value: y}]}\n"
    )
    both = ["suite.yaml", "-n", "a", "-n", "b"]
    assert [run_cli(both, cwd=tmp_path).returncode for _ in range(2)] == [1, 1]  # a: failed, passed; b: failed twice
    env = github_env(tmp_path)
    proc = run_cli(both, cwd=tmp_path, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert len(lines) == 2, proc.stdout
    flaky = [line for line in lines if "flaky" in line]
    assert len(flaky) == 1 and '"no" (flaky against a in the run history)%0A' in flaky[0]
    text = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "| coin | suite.yaml:2 | a | ❌ failed |" in text and "| b |" not in text
    assert text.count("flaky against") == 1 and "Flaky:     coin @a\n" in proc.stdout


def test_direct_mode_answer_cannot_issue_workflow_commands(tmp_path):
    project(tmp_path)
    proc = run_cli(["-i", "forge", "-n", "python:bot:answer"], cwd=tmp_path, env=github_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    answer = lines.index("::error::and in its answer")  # the agent's answer, printed last
    tokens = [m.group(1) for line in lines[:answer] if (m := re.fullmatch(r"::stop-commands::([0-9a-f]{32})", line))]
    assert tokens and lines[answer + 1] == f"::{tokens[-1]}::"  # off around the answer, back on after it
    assert f"::{tokens[-1]}::" not in lines[:answer]
