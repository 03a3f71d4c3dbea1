"""Helpers for testing plugins, as pytest ships pytester.

``check_assertion`` runs one assertion on a response, in-process, exactly as a run would (the
envelope's ``negate`` and ``message`` applied); ``run_suite`` runs a suite with the ``specrun``
command in a temporary project and returns what it wrote::

    from specrun.plugin.testing import check_assertion, run_suite

    def test_shouts():
        assert check_assertion("shouts", {}, "HELLO").status == "passed"

    def test_suite(tmp_path):
        outcome = run_suite(tmp_path, "- id: a\\n  input: hi\\n  expected: hi\\n", agent="python:echo:reply",
                            files={"echo.py": "def reply(messages, ctx):\\n    return messages[-1].text\\n"})
        assert outcome.exit_code == 0 and outcome.results[0]["status"] == "passed"
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.data import MISSING, Assertion, Case, Context, Location, Message, Response
from .._core.kinds import Check
from .._core.results import Verdict
from .._core.services import Services
from .._project.plugin_manager import default_plugins, get_plugin_manager
from .._run.verdicts import evaluate

__all__ = ["SuiteOutcome", "check_assertion", "run_suite"]


def check_assertion(
    type: str,
    params: Mapping[str, Any] | None,
    response: Response | str | dict[str, Any],
    *,
    input: str = "",
    expected: Any = MISSING,
    negate: bool = False,
    services: Services | None = None,
    plugins: Sequence[object] = (),
) -> Verdict:
    """The verdict of assertion ``type`` with ``params`` on ``response`` (text, a mapping or a
    ``Response``), for a case with ``input`` and ``expected``; ``status`` is ``passed``,
    ``failed`` or ``error``. Installed plugins provide the type, and ``plugins`` (modules or
    objects with hooks) add to them. ``services`` lends model calls (``Services(models=...)``).
    Not for use inside a running event loop (an ``async`` test)."""
    case = Case(id="check", location=Location("<check>", 1), input=[Message("user", input)], expected=expected)
    check = Check(Response.of(response), case, Context(case_id="check"), services, case.input)
    assertion = Assertion(type, dict(params or {}), negate=negate)
    registry = (get_plugin_manager(extra=list(plugins)) if plugins else default_plugins()).registry
    return asyncio.run(evaluate(assertion, check, registry))


@dataclass
class SuiteOutcome:
    """What ``specrun`` did: its exit code and output, the result records and the summary."""

    exit_code: int
    stdout: str
    stderr: str
    results: list[dict[str, Any]]
    summary: dict[str, Any] | None


def run_suite(
    tmp_path: Path,
    suite_text: str,
    *,
    agent: str | Mapping[str, Any],
    files: Mapping[str, str] | None = None,
    config: str = "",
    args: Sequence[str] = (),
    timeout: float = 120,
) -> SuiteOutcome:
    """Run ``suite_text`` (YAML) against ``agent`` (a target spec: ``python:module:function``,
    a URL or a mapping) in a project made in ``tmp_path``: ``specrun.yaml`` holds ``config``,
    ``files`` maps other file names to their text (the agent's module). ``args`` are extra
    ``specrun`` arguments. The run is a subprocess, as a user's would be."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "specrun.yaml").write_text(config or "{}\n")
    (tmp_path / "agent.yaml").write_text(json.dumps({"target": agent}) + "\n")
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "suite.yaml").write_text(suite_text)
    output = tmp_path / "results.jsonl"
    command = [sys.executable, "-c", "from specrun.cli.main import main; main()", "suite.yaml", "-o", str(output)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([*command, *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout, env=env)
    records = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    return SuiteOutcome(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        [r for r in records if r.get("type") == "result"],
        next((r for r in records if r.get("type") == "summary"), None),
    )
