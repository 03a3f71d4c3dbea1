"""Generated cases: the agents: and scripts: sources, data-only rules, --dry-run and --save."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import support.cli
from specrun_plugins.sources.generators import AgentsSource, ScriptsSource, case_list, split_spec, with_ids

from specrun import Response
from specrun._core.data import Context, Message
from specrun._core.errors import SuiteError, UsageError
from specrun._core.kinds import SourceContext
from specrun._core.services import Services
from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager
from specrun._project.project import Project

# -- helpers ------------------------------------------------------------------------------------


def test_split_spec_types_the_query():
    assert split_spec("workers.test.gen?count=10&focus=edge-cases&strict=true&ratio=0.5") == (
        "workers.test.gen",
        {"count": 10, "focus": "edge-cases", "strict": True, "ratio": 0.5},
    )
    assert split_spec("gen") == ("gen", {})
    with pytest.raises(UsageError, match="expected an id"):
        split_spec("?count=1")


def test_ids_are_given_where_missing_without_clashing():
    cases = with_ids([{"input": "a"}, {"id": "gen-002", "input": "b"}, {"input": "c"}])
    assert [c["id"] for c in cases] == ["gen-001", "gen-002", "gen-003"]
    assert list(cases[0]) == ["id", "input"]


@pytest.mark.parametrize(
    "answer",
    [
        [{"input": "x"}],
        {"cases": [{"input": "x"}]},
        '[{"input": "x"}]',
        'Here they are:\n```json\n{"cases": [{"input": "x"}]}\n```',
    ],
)
def test_case_list_forms(answer):
    assert case_list(answer, "gen") == [{"input": "x"}]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("I could not think of any tests.", "gen returned no cases (expected a JSON array"),
        ({"tests": []}, "gen returned no cases"),
        ([], "gen returned an empty list of cases"),
    ],
)
def test_case_list_garbage(answer, problem):
    with pytest.raises(UsageError, match=problem.replace("(", r"\(")):
        case_list(answer, "gen")


# -- the sources, with a fake agent caller --------------------------------------------------------


def context(tmp_path: Path, caller: Any = None, target: str | None = "assistants.expense") -> SourceContext:
    registry = get_plugin_manager().registry
    project = Project(tmp_path, registry)
    services = Services(agent_caller=caller) if caller else None
    return SourceContext(Loader(registry), project.root, services, target)


async def test_agents_source_asks_the_generator_and_validates(tmp_path):
    seen: list[tuple[str, list[Message], Context]] = []

    async def caller(agent_id, messages, ctx):
        seen.append((agent_id, messages, ctx))
        return Response([{"input": "hi", "assertions": [{"type": "contains", "value": "hi"}]}, {"input": "yo"}])

    suites = await AgentsSource().load("workers.gen?count=2&focus=edge-cases", context(tmp_path, caller))
    [suite] = suites
    assert suite.generated and suite.name == "agents:workers.gen?count=2&focus=edge-cases"
    assert [c.id for c in suite.cases] == ["gen-001", "gen-002"]
    assert suite.cases[0].raw == {"id": "gen-001", "input": "hi", "assertions": [{"type": "contains", "value": "hi"}]}
    agent_id, messages, ctx = seen[0]
    request = {"test_mode": "generator", "target_agent": "assistants.expense", "count": 2, "focus": "edge-cases"}
    assert agent_id == "workers.gen"
    assert json.loads(messages[0].text) == request
    assert ctx.metadata == request and ctx.options == {"metadata": request}


async def test_agents_source_failures_are_usage_errors(tmp_path):
    async def crash(agent_id, messages, ctx):
        raise RuntimeError("model offline")

    with pytest.raises(UsageError, match=r"generator agent 'gen' failed: RuntimeError: model offline"):
        await AgentsSource().load("gen", context(tmp_path, crash))
    with pytest.raises(UsageError, match="cannot be called here"):
        await AgentsSource().load("gen", context(tmp_path))


async def test_generated_cases_are_data_only(tmp_path):
    bad = [
        {"id": "hooked", "input": "x", "before": "env.Before"},
        {"id": "scripted", "input": "x", "assertions": [{"type": "script", "use": "scripts:v.check"}]},
        {"id": "attached", "input": [{"role": "user", "content": [{"type": "image", "source": "file://r.png"}]}]},
        {"id": "targeted", "input": "x", "target": "python:m:f"},
    ]

    async def caller(agent_id, messages, ctx):
        return Response(json.dumps(bad))

    with pytest.raises(SuiteError) as info:
        await AgentsSource().load("gen", context(tmp_path, caller))
    text = str(info.value)
    assert "generated case 'hooked' may not set 'before'" in text
    assert "generated case 'scripted' may not use a 'script' assertion (it runs code)" in text
    assert "generated case 'attached' may not attach files" in text
    assert "generated case 'targeted' may not set 'target'" in text


async def test_scripts_source_passes_the_query_as_keywords(tmp_path, monkeypatch):
    (tmp_path / "gen_cases_a.py").write_text(
        textwrap.dedent(
            """
            async def make(count, word="hi"):
                return {"cases": [{"input": f"{word} {i}"} for i in range(count)]}
            def boom():
                raise KeyError("nope")
            def text():
                return "no cases today"
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    [suite] = await ScriptsSource().load("gen_cases_a.make?count=3&word=yo", context(tmp_path))
    assert suite.generated and [c.input[0].text for c in suite.cases] == ["yo 0", "yo 1", "yo 2"]
    with pytest.raises(UsageError, match=r"script 'gen_cases_a\.boom' failed: KeyError: 'nope'"):
        await ScriptsSource().load("gen_cases_a.boom", context(tmp_path))
    with pytest.raises(UsageError, match=r"script 'gen_cases_a\.text' returned no cases"):
        await ScriptsSource().load("gen_cases_a.text", context(tmp_path))
    with pytest.raises(UsageError, match="cannot find module 'missing_mod'"):
        await ScriptsSource().load("missing_mod.make", context(tmp_path))


# -- through the CLI ----------------------------------------------------------------------------

GENERATOR = """
import json
def respond(messages, ctx):
    request = json.loads(messages[-1].text)
    mode = request.get("focus")
    if mode == "garbage":
        return "Sorry, I have no ideas."
    if mode == "hooks":
        return [{"id": "sneaky", "input": "hi", "after": "cleanup.After"}]
    cases = [
        {"input": f"ping {i}", "assertions": [{"type": "contains", "value": f"pong {i}"}]}
        for i in range(request["count"])
    ]
    return "Here you go:\\n```json\\n" + json.dumps({"cases": cases}) + "\\n```"
"""

PONG = """
def respond(messages, ctx):
    return messages[-1].text.replace("ping", "pong")
"""

SCRIPT = """
def cases(count=1):
    return [{"id": f"s{i}", "input": f"ping {i}", "expected": f"pong {i}"} for i in range(count)]
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 20s\n")
    for name, code in (("pong", PONG), ("gen", GENERATOR)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "agent.yaml").write_text(f"target: python:{name}_agent:respond\n")
        (tmp_path / name / f"{name}_agent.py").write_text(textwrap.dedent(code))
    (tmp_path / "gen_script.py").write_text(textwrap.dedent(SCRIPT))
    return tmp_path


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return support.cli.run_cli(args, cwd, env)


def test_generated_cases_run(root):
    proc = run_cli(root, "-i", "agents:gen?count=3", "-n", "pong", "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    got = {r["id"]: r["status"] for r in records if r["type"] == "result"}
    assert got == {"gen-001": "passed", "gen-002": "passed", "gen-003": "passed"}


def test_dry_run_lists_generated_cases_and_writes_nothing(root):
    before = sorted(p.name for p in root.rglob("*") if "__pycache__" not in p.parts)
    proc = run_cli(root, "-i", "agents:gen?count=2", "-n", "pong", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "[gen-001] standard agent=pong" in proc.stdout and "input: ping 1" in proc.stdout
    assert "2 cases x 1 run(s)" in proc.stdout
    after = sorted(p.name for p in root.rglob("*") if "__pycache__" not in p.parts)
    assert after == before


@pytest.mark.parametrize("name", ["saved.jsonl", "saved.yaml", "review/saved.json"])
def test_save_round_trip(root, name):
    proc = run_cli(root, "-i", "agents:gen?count=2", "-i", "scripts:gen_script.cases?count=1", "--save", name)
    assert proc.returncode == 2  # saved first; without -n there is no agent to run them against
    assert f"Saved 3 generated cases to {name}" in proc.stdout
    checked = run_cli(root, "validate", name)
    assert checked.returncode == 0, checked.stderr
    assert "ok: 3 cases in 1 suite files" in checked.stdout
    rerun = run_cli(root, name, "-n", "pong", "-o", "again.jsonl")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr


def test_save_with_dry_run(root):
    proc = run_cli(root, "-i", "scripts:gen_script.cases?count=2", "-n", "pong", "--dry-run", "--save", "s.yaml")
    assert proc.returncode == 0, proc.stderr
    assert (root / "s.yaml").read_text().startswith("cases:\n- id: s0\n  input: ping 0\n")
    assert "[s1]" in proc.stdout


def test_save_needs_generated_cases(root):
    (root / "pong" / "t.jsonl").write_text('{"id": "a", "input": "ping"}\n')
    proc = run_cli(root, "pong/t.jsonl", "--save", "x.jsonl", "--dry-run")
    assert proc.returncode == 2
    assert "--save: no generated cases to save" in proc.stderr
    proc = run_cli(root, "-i", "scripts:gen_script.cases", "--save", "x.txt", "--dry-run")
    assert proc.returncode == 2 and "unknown extension '.txt'" in proc.stderr


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("agents:gen?focus=garbage", "generator agent 'gen' returned no cases"),
        ("agents:gen?focus=hooks", "generated case 'sneaky' may not set 'after'"),
        ("agents:nobody", "unknown agent 'nobody'"),
        ("scripts:gen_script.cases?count=x&oops=1", "script 'gen_script.cases' failed: TypeError"),
    ],
)
def test_bad_generators_exit_2_without_traceback(root, spec, message):
    proc = run_cli(root, "-i", spec, "-n", "pong")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
