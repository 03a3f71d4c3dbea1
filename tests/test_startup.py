"""What the quick commands import: never litellm (4-5 s of CPU), and --version nothing heavy.

Checked with ``python -X importtime``, which lists every module imported. The speed goals
themselves are measured by bench/validate_bench.py, never asserted in a test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SUITE = """\
name: startup
defaults:
  timeout: 30s
cases:
  - id: a
    input: Hello
    assertions:
      - {type: contains, value: Hi}
      - {type: regex, value: "^H"}
  - id: b
    input:
      - {role: user, content: "What is 2 + 2?"}
    assertions:
      - {type: json_path, path: $.answer, value: 4}
"""


def imported(args: list[str], cwd: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules ``specrun ARGS`` imports (in a fresh interpreter), and the process."""
    code = f"from specrun.cli.main import main; main({args!r})"
    # -P keeps the working folder off sys.path; the installed specrun is what users run.
    result = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-c", code],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    assert "specrun.cli.main" in modules, result.stderr[-2000:]
    return modules, result


def _litellm(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == "litellm" or m.startswith("litellm."))


# first-party plugins: the families, and the engine's own (its rooms' plugin packages)
PLUGIN_MODULES = (
    "specrun_plugins",
    "specrun._judges.assertions",
    "specrun._history.assertions",
    "specrun._models.targets",
    "specrun._report.reporters",
)

@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "startup.yaml"
    path.write_text(SUITE)
    return path


def test_version_imports_nothing_heavy(tmp_path: Path) -> None:
    modules, result = imported(["--version"], tmp_path)
    assert result.returncode == 0
    assert "specrun, version" in result.stdout
    assert not _litellm(modules)
    assert "rich" not in modules
    # pluggy is light: specrun.hookimpl
    heavy = {"jsonschema_rs", "ruamel.yaml", "aiohttp", "openai", "specrun._load.loader"}
    assert not modules & heavy
    assert not [m for m in modules if m.startswith(PLUGIN_MODULES)], "--version loads no plugins"


def test_help_does_not_import_litellm(tmp_path: Path) -> None:
    modules, result = imported(["--help"], tmp_path)
    assert result.returncode == 0
    assert "validate" in result.stdout
    assert not _litellm(modules)
    assert not [m for m in modules if m.startswith(PLUGIN_MODULES)]
    assert "asyncio" not in modules  # no command runs


def test_validate_does_not_import_litellm(suite: Path) -> None:
    modules, result = imported(["validate", str(suite)], suite.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok: 2 cases in 1 suite files" in result.stdout
    assert "jsonschema_rs" in modules  # it did validate, with every plugin loaded
    assert any(m.startswith("specrun_plugins") for m in modules)
    assert any(m.startswith("specrun._report.reporters") for m in modules)  # the engine's own plugins too
    assert not _litellm(modules)


def test_validate_of_a_bad_suite_does_not_import_litellm(tmp_path: Path) -> None:
    modules, result = imported(["validate", str(ROOT / "tests" / "bad_inputs")], tmp_path)
    assert result.returncode == 2
    assert not _litellm(modules)


def test_validate_of_the_examples_does_not_import_litellm() -> None:
    modules, result = imported(["validate", "suites"], ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not _litellm(modules)


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--json"], ["schema"]])
def test_plugins_and_schema_do_not_import_litellm(args: list[str], tmp_path: Path) -> None:
    modules, result = imported(args, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not _litellm(modules)


def test_a_run_whose_match_only_scores_does_not_import_litellm(tmp_path: Path) -> None:
    """``match`` in score mode needs no judge: the run must not preload litellm for it."""
    (tmp_path / "echo_agent.py").write_text("def echo(messages, ctx):\n    return messages[-1].text\n")
    (tmp_path / "agent.yaml").write_text("target: python:echo_agent:echo\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n  - id: a\n    input: Paris\n    assertions: [{type: match, expected: Paris, mode: score}]\n"
    )
    modules, result = imported(["suite.yaml", "-o", "out.jsonl"], tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert '"status": "passed"' in (tmp_path / "out.jsonl").read_text()
    assert not _litellm(modules)
    # The python target asked the adapters about a function: none imports its framework for that.
    assert not modules & {"langgraph", "langchain_core"}
    assert not [m for m in modules if m.startswith(("opentelemetry", "specrun._traces"))], "traces are off"
    # Its console is a pipe: no rich; and no writer of a report it did not ask for (JUnit's XML).
    assert not modules & {"rich", "rich.console", "xml.etree.ElementTree", "xml.sax.saxutils"}
