"""The pytest plugin: suite files collected as one item per case, with pytest's own options."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.cli import run_cli

from specrun._load.pytest_collect import folders_in_testpaths, is_suite_file

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
AGENTS = REPO / "tests" / "agents"

AGENT = """
def respond(messages, ctx):
    text = messages[-1].text
    if text == "crash":
        raise RuntimeError("boom")
    return "echo: " + text
"""

CASES = """
name: bot suite
cases:
  - id: hello
    input: hi
    tags: [smoke, fast-one]
    assertions:
      - {type: contains, value: "echo: hi"}
  - id: wrong
    input: hi
    assertions:
      - {type: contains, value: "bye"}
      - {type: equals, value: "echo: hi"}
  - id: crashes
    input: crash
    assertions: [{type: contains, value: x}]
  - id: later
    input: hi
    skip: not today
"""


NOT_SUITES = {  # what lies around suites in a repository
    "package.json": '{"name": "bot", "version": "1.0.0", "scripts": {"test": "pytest"}}',
    "docker-compose.yaml": "services:\n  web: {image: nginx}\n",
    ".gitlab-ci.yml": "test:\n  script: pytest\n",
    ".github/workflows/ci.yml": "on: push\njobs: {test: {runs-on: ubuntu-latest}}\n",
    "deploy/playbook.yml": "- hosts: all\n  tasks: []\n",
    "data/rows.jsonl": '{"id": 1, "text": "hi"}\n',
    "data/report.json": '{"summary": {}, "specrun_report": "1.0", "cases": []}',  # a reporter plugin's
}


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A specrun project: specrun.yaml at the root, agent ``bot`` with a suite under it."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makefile(".yaml", specrun="timeout: 10s\n")
    (pytester.path / "bot" / "tests").mkdir(parents=True)
    (pytester.path / "bot" / "agent.yaml").write_text("target: python:bot_agent:respond\n")
    (pytester.path / "bot" / "bot_agent.py").write_text(AGENT)
    (pytester.path / "bot" / "tests" / "cases.yaml").write_text(CASES)
    return pytester


def test_one_item_per_case_named_by_its_id_and_no_other_file_collected(project):
    _tree(project.path, NOT_SUITES)  # a repository's other JSON and YAML, and reports specrun wrote:
    reports = ["-o", "reports/results.json", "-o", "reports/stream.jsonl"]
    assert run_cli(["bot/tests/cases.yaml", *reports], cwd=project.path).returncode == 1  # one case fails
    assert {p.name for p in (project.path / "reports").iterdir()} >= {"results.json", "stream.jsonl"}
    result = project.runpytest("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()  # no collection error
    lines = [line for line in result.outlines if "::" in line]
    assert lines == [f"bot/tests/cases.yaml::{case}" for case in ("hello", "wrong", "crashes", "later")]


def test_k_runs_one_case(project):
    result = project.runpytest("-k", "hello")
    result.assert_outcomes(passed=1, deselected=3)


def test_verdicts_map_to_pytest_outcomes_and_a_failure_shows_the_assertions(project):
    result = project.runpytest("-rs")
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*specrun case 'wrong' failed (bot/tests/cases.yaml:9)",
            "  input:  'hi'",
            "  output: 'echo: hi'",
            '  ✗ contains failed: output lacks "bye"*',
            "      expected: 'bye'",
            "      actual:   'echo: hi'",
            "  1 of 2 assertions passed",
        ]
    )
    assert "ERROR at setup of case crashes" in out and "error:  agent error: RuntimeError: boom" in out
    assert "SKIPPED [1] bot/tests/cases.yaml: not today" in out
    assert "Traceback" not in out and "pytest_plugin.py" not in out


def test_junitxml_names_cases_by_id(project):
    project.runpytest("--junitxml=report.xml")
    cases = {c.get("name"): c for c in ET.parse(project.path / "report.xml").iter("testcase")}
    assert sorted(cases) == ["crashes", "hello", "later", "wrong"]
    assert {c.get("classname") for c in cases.values()} == {"bot.tests.cases.yaml"}
    assert cases["wrong"].find("failure") is not None and "expected: 'bye'" in cases["wrong"].find("failure").text
    assert cases["crashes"].find("error") is not None
    assert cases["later"].find("skipped").get("message") == "not today"
    assert cases["hello"].find("properties/property").attrib == {"name": "agent", "value": "bot"}


def test_x_stops_at_the_first_failure(project):
    result = project.runpytest("-x")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])


def test_case_tags_are_registered_markers(project):
    result = project.runpytest("-m", "smoke and fast-one", "--strict-markers", "-W", "error")
    result.assert_outcomes(passed=1, deselected=3)


def test_mistakes_in_a_suite_are_a_collection_error_with_positions(project):
    (project.path / "bot" / "tests" / "bad.yaml").write_text(
        "cases:\n  - id: one\n    input: hi\n    assertions: [{type: containz, value: x}]\n  - {id: two}\n"
    )
    result = project.runpytest("bot/tests/bad.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting bot/tests/bad.yaml*",
            "bot/tests/bad.yaml:4:25: unknown assertion type 'containz'; did you mean 'contains'*",
            "bot/tests/bad.yaml:5:5: missing required field 'input'*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_json_and_yaml_outside_a_project_are_left_alone_unless_asked(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "bot_agent.py").write_text(AGENT)
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "settings.json").write_text('{"not": "a suite"}')
    (pytester.path / "cases.yaml").write_text(
        "target: python:bot_agent:respond\ncases:\n  - {id: plain, input: hi, assert: {type: contains, value: hi}}\n"
    )
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)  # only the Python test
    result = pytester.runpytest("--specrun", "cases.yaml")
    result.assert_outcomes(passed=1)


def test_which_files_are_suites(tmp_path):
    project = tmp_path / "project"
    _tree(project, NOT_SUITES)
    _tree(
        project,
        {
            "specrun.yaml": "suites: [suites]\n",
            # under suites: every file a folder search loads is a suite, whatever it holds
            **{f"suites/{name}": "cases: []\n" for name in ("b.YAML", "fixtures/f.json", ".hidden/h.yaml")},
            **{f"suites/{name}": "cases: []\n" for name in ("node_modules/n.json", ".dot.yaml", "agent.yaml")},
            **{f"suites/{name}": "cases: []\n" for name in ("test-config.yaml", "output-1.jsonl", "notes.txt")},
            "suites/specrun.schema.json": "{}",
            "suites/a.jsonl": "not JSON: a mistake, reported\n",
            "suites/report.json": '{\n  "specrun_report": "1.0",\n  "summary": {}\n}\n',  # never: specrun wrote it
            "suites/stream.jsonl": '{"type": "start", "specrun_report": "jsonl"}\n{"type": "summary"}\n',
            # elsewhere, what is unmistakably a suite
            "other/suite.yaml": "name: n\ncases:\n  - {id: a, input: hi}\n",
            "other/list.json": '[{"id": "a", "input": "hi"}]',
            "other/cases.jsonl": '// a comment\n{"id": "a", "assert": {"type": "contains", "value": "x"}}\n',
            "other/pretty.jsonl": '{\n  "id": "a",\n  "input": "hi"\n}\n',
        },
    )
    found = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if is_suite_file(p))
    others = ["other/cases.jsonl", "other/list.json", "other/pretty.jsonl", "other/suite.yaml"]
    assert found == [*others, "suites/a.jsonl", "suites/b.YAML"]
    assert is_suite_file(project / "package.json", named=True)  # named on the command line
    assert not is_suite_file(REPO / "tests" / "bad_inputs" / "bad_regex.yaml")
    assert is_suite_file(REPO / "tests" / "bad_inputs" / "bad_regex.yaml", anywhere=True, base=REPO)


def test_without_suites_the_testpaths_folders_hold_the_suites(tmp_path):
    _tree(tmp_path, {**NOT_SUITES, "agent.yaml": "target: python:bot:respond\n", "checks/data.json": "{}"})
    assert folders_in_testpaths(tmp_path, [".", "check*", "missing"]) == ((tmp_path / "checks").resolve(),)
    testpaths = folders_in_testpaths(tmp_path, ["checks", "data"])
    found = sorted(
        f.relative_to(tmp_path).as_posix() for f in tmp_path.rglob("*") if is_suite_file(f, testpaths=testpaths)
    )
    assert found == ["checks/data.json", "data/rows.jsonl"]  # the report stays out


def test_a_cli_agent_suite_runs_on_the_session_loop(project):
    (project.path / "cli").mkdir()
    (project.path / "cli" / "agent.yaml").write_text(
        f"target: {{type: process, command: [{sys.executable!r}, {str(AGENTS / 'echo_cli.py')!r}]}}\n"
    )
    (project.path / "cli" / "turns.jsonl").write_text(
        '{"id": "two-turns", "input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],'
        ' "assert": {"type": "equals", "value": "[echo] echo: b (#2)"}}\n'
        '{"id": "another", "input": "c", "assert": {"type": "equals", "value": "[echo] echo: c (#1)"}}\n'
    )
    project.runpytest("cli").assert_outcomes(passed=2)


def test_pytest_xdist_runs_cases_in_workers(project):
    result = project.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "bot")
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1)


def test_the_repos_own_run_collects_no_suite_files(pytester, monkeypatch):
    monkeypatch.chdir(REPO)
    done = pytester.runpytest_inprocess(
        "--collect-only", "-q", "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml")
    )
    assert done.ret == 0, "\n".join(done.outlines[-40:] + done.errlines[-40:])
    items = [line for line in done.outlines if "::" in line]
    modules = {Path(line.split("::")[0]) for line in items}  # tests/test_*.py, tests/trust/test_*.py
    assert items and all(m.parts[0] == "tests" and m.name.startswith("test_") and m.suffix == ".py" for m in modules)


def test_the_example_suites_run_under_pytest():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "suites/", "-k", "T001"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 passed" in done.stdout and "deselected" in done.stdout
