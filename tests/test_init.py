"""``specrun init`` end to end: the scaffold runs and passes with a plain ``specrun``, its cases
check something, editors find the schemas, git ignores what runs leave, nothing is overwritten."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from support.cli import run_cli
from support.missing import missing

WRITTEN = [
    "specrun.yaml",
    "agent.yaml",
    "example_agent.py",
    "suites/example.yaml",
    ".specrun/schemas/suite.schema.json",
    ".specrun/schemas/agent.schema.json",
    ".specrun/schemas/config.schema.json",
    ".gitignore",
]


def init(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_cli(["init", *args], cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_init_then_plain_specrun_passes(tmp_path):
    proc = init(tmp_path)
    assert [line.split()[-1] for line in proc.stdout.splitlines()[: len(WRITTEN)]] == WRITTEN
    assert "Next: specrun" in proc.stdout
    run = run_cli([], cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Input: suites (4 test cases)" in run.stdout and "ALL TESTS PASSED" in run.stdout
    (stream,) = (tmp_path / ".specrun" / "runs").glob("output-*.jsonl")
    records = [json.loads(line) for line in stream.read_text().splitlines()]
    results = {r["id"]: r for r in records if r["type"] == "result"}
    assert set(results) == {"greets", "return-window", "order-status", "exact-answer"}
    types = {a["type"] for r in results.values() for a in r["assertions"]}
    assert {"icontains", "not_contains", "regex", "tool_called", "json_path", "equals"} <= types
    # From a subfolder too, and by tag, as the suite's comment says.
    (tmp_path / "notes").mkdir()
    smoke = run_cli(["-m", "smoke"], cwd=tmp_path / "notes")
    assert smoke.returncode == 0 and "Input: ../suites (2 test cases)" in smoke.stdout


def test_the_example_cases_check_the_agent(tmp_path):
    init(tmp_path)
    (tmp_path / "example_agent.py").write_text("def answer(messages, ctx):\n    return 'error'\n")
    run = run_cli([], cwd=tmp_path)
    assert run.returncode == 1
    assert "4 FAILED" in run.stdout


def test_git_ignores_runs_history_and_cache_but_not_the_schemas(tmp_path):
    if shutil.which("git") is None:
        missing("git is not installed")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    init(tmp_path)
    assert run_cli([], cwd=tmp_path).returncode == 0
    (tmp_path / ".specrun" / "history.db").write_text("")
    (tmp_path / ".specrun-cache").mkdir()
    (tmp_path / ".specrun-cache" / "entry.json").write_text("{}")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True, text=True
    )
    untracked = sorted(line[3:] for line in status.stdout.splitlines())
    assert untracked == sorted(WRITTEN)  # no stream, history or cache file; every schema


def test_init_after_runs_keeps_the_schemas_in_git(tmp_path):
    if shutil.which("git") is None:
        missing("git is not installed")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'hi'\n")
    (tmp_path / "suite.yaml").write_text("target: python:bot:answer\ncases:\n  - {id: a, input: x}\n")
    assert run_cli(["suite.yaml"], cwd=tmp_path).returncode == 0  # makes .specrun/, ignored as a whole
    for name in ("specrun.yaml", "suite.yaml", "bot.py"):
        (tmp_path / name).unlink()
    assert "updated .specrun/.gitignore" in init(tmp_path).stdout
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True, text=True
    )
    untracked = sorted(line[3:] for line in status.stdout.splitlines())
    assert untracked == sorted(WRITTEN)  # the schemas are in; the runs and .specrun/.gitignore itself are not


def test_editors_find_each_files_schema(tmp_path):
    init(tmp_path)
    for name, kind in [("specrun.yaml", "config"), ("agent.yaml", "agent"), ("suites/example.yaml", "suite")]:
        path = tmp_path / name
        first = path.read_text().splitlines()[0]
        schema_ref = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
        assert schema_ref, first
        schema = json.loads((path.parent / schema_ref.group(1)).read_text())
        assert schema["$id"].endswith(f"/{kind}.schema.json")
    suite_schema = json.loads((tmp_path / ".specrun/schemas/suite.schema.json").read_text())
    assert "tool_called" in json.dumps(suite_schema)  # composed from the installed plugins
    assert run_cli(["validate", "suites"], cwd=tmp_path).returncode == 0


def test_init_never_overwrites(tmp_path):
    (tmp_path / "agent.yaml").write_text("target: http://localhost:9/\n")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "example.yaml").write_text("mine\n")
    proc = run_cli(["init"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "agent.yaml, suites/example.yaml exist); nothing was written" in proc.stderr
    assert (tmp_path / "agent.yaml").read_text() == "target: http://localhost:9/\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["agent.yaml", "example.yaml", "suites"]
    assert "cd elsewhere && specrun" in init(tmp_path, "elsewhere").stdout  # another folder, created
    assert run_cli([], cwd=tmp_path / "elsewhere").returncode == 0
    again = run_cli(["init", "elsewhere"], cwd=tmp_path)
    assert again.returncode == 2 and "specrun.yaml" in again.stderr


def test_an_existing_gitignore_gets_the_missing_lines(tmp_path):
    (tmp_path / ".gitignore").write_text("node_modules/\n.specrun-cache/")
    proc = init(tmp_path)
    assert "updated .gitignore" in proc.stdout
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", ".specrun-cache/"]
    assert lines[2:] == [
        "# specrun: result streams (.specrun/runs/), run history and the model response cache",
        ".specrun/*",
        "!.specrun/schemas/",
    ]


def test_plain_specrun_without_suites_says_what_to_do(tmp_path):
    proc = run_cli([], cwd=tmp_path)
    assert proc.returncode == 2
    assert "nothing to run" in proc.stderr and "'suites' in specrun.yaml (specrun init makes a project)" in proc.stderr
    (tmp_path / "specrun.yaml").write_text("suites: [tests, suites]\n")
    (tmp_path / "suites").mkdir()
    proc = run_cli([], cwd=tmp_path)
    assert proc.returncode == 2 and "suites: no such file or folder: tests" in proc.stderr


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def test_init_checks_every_path_before_writing_any(tmp_path):
    (tmp_path / "suites").write_text("my notes\n")  # a file where init makes a folder
    (tmp_path / ".gitignore").write_bytes(b"node_modules/\n\xff\xfe\n")  # not UTF-8
    before = _tree(tmp_path)
    proc = run_cli(["init"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "init: nothing was written:" in proc.stderr
    assert "suites is a file, but init writes suites/example.yaml under a folder of that name (move suites away)" in (
        proc.stderr
    )
    assert ".gitignore is not UTF-8 text (byte 0xff on line 2) (save it as UTF-8" in proc.stderr
    assert _tree(tmp_path) == before
    (tmp_path / "suites").unlink()
    (tmp_path / ".gitignore").unlink()
    (tmp_path / ".gitignore").mkdir()
    (tmp_path / "proj").write_text("")
    proc = run_cli(["init"], cwd=tmp_path)  # one problem: one line with its fix
    assert proc.returncode == 2
    assert "init: .gitignore is a folder; nothing was written (move it away" in proc.stderr
    proc = run_cli(["init", "proj/new"], cwd=tmp_path)  # the folder to create is under a file
    assert proc.returncode == 2 and "proj is a file, but init writes proj/new/specrun.yaml" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore", "proj"]


def test_a_failed_write_undoes_the_others(tmp_path, monkeypatch):
    import specrun._project.scaffold

    (tmp_path / ".gitignore").write_text("node_modules/\n")
    (tmp_path / ".specrun").mkdir()
    (tmp_path / ".specrun" / ".gitignore").write_text("# written by specrun\n*\n")  # a run came first
    before = _tree(tmp_path)
    put = specrun._project.scaffold._put

    def disk_full(path: Path, text: str, *args):
        if path.name == ".gitignore" and path.parent.name == ".specrun":  # the last write
            raise OSError(28, "No space left on device", str(path))
        put(path, text, *args)

    monkeypatch.setattr(specrun._project.scaffold, "_put", disk_full)
    proc = run_cli(["init", "."], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "init: cannot write .specrun/.gitignore: No space left on device; nothing was written" in proc.stderr
    assert _tree(tmp_path) == before  # the files, the schemas folder and the .gitignore lines undone
    proc = run_cli(["init", "new"], cwd=tmp_path)
    assert proc.returncode == 0  # no .specrun/.gitignore to write there
    assert (tmp_path / "new" / "specrun.yaml").is_file()
