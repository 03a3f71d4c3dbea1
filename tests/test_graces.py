"""The two graces a user can set: ``interrupt_grace`` in specrun.yaml (how long after hooks and
AfterAll still get once a run is interrupted, default 5 s) and the process target's ``grace``
(SIGTERM to SIGKILL when a case's processes end, default 2 s).

That a run honours ``interrupt_grace`` and that the CLI and the ``Test`` API honour ``grace``
is shown with signals and process trees in tests/trust/test_trust_processes.py; here, the
target's own ``grace``, the defaults, their validation, and ``interrupt_grace`` reaching an
executor's workers.
"""

from __future__ import annotations

import pickle
import signal
import sys
import time
from pathlib import Path

import pytest
from specrun_plugins.targets.process import GRACE_SECONDS, ProcessTarget
from support.cli import run_cli

from specrun import Context, Message
from specrun._project.plugin_manager import default_plugins
from specrun._project.project import Project
from specrun._run.remote import RemoteRun
from specrun._run.runner import Runner
from specrun._run.settings import INTERRUPT_GRACE, RunOptions

AGENTS = Path(__file__).parent / "agents"


def test_the_defaults():
    assert INTERRUPT_GRACE == 5.0 and RunOptions().interrupt_grace == INTERRUPT_GRACE
    assert GRACE_SECONDS == 2.0
    assert ProcessTarget({"command": "agent.py"}, AGENTS).process(Context(case_id="c")).grace == GRACE_SECONDS


async def test_the_process_targets_grace_is_honoured():
    command = [sys.executable, "echo_cli.py", "--ignore-term"]
    session = ProcessTarget({"command": command, "grace": "300ms"}, AGENTS).session(Context(case_id="c"))
    assert (await session.send([Message("user", "hi")])).content == "[echo] echo: hi (#1)"
    started = time.monotonic()
    await session.close()
    took = time.monotonic() - started
    assert session.process.returncode == -signal.SIGKILL  # it ignored SIGTERM until the grace was over
    assert 0.3 <= took < GRACE_SECONDS - 0.1, took  # 0.3 s, not the default 2 s


@pytest.mark.parametrize(
    ("file", "text", "problem"),
    [
        ("specrun.yaml", "interrupt_grace: soon\n", "specrun.yaml:1:18: invalid duration 'soon'"),
        ("agent.yaml", "target: {type: process, command: a.py, grace: 0}\n", "agent.yaml:1:47: target.grace: 0 is"),
    ],
)
def test_a_bad_grace_is_bad_input(tmp_path, file, text, problem):
    (tmp_path / "specrun.yaml").write_text("timeout: 60s\n")
    (tmp_path / "agent.yaml").write_text("target: {type: process, command: a.py}\n")
    (tmp_path / "a.py").touch()
    (tmp_path / "suite.jsonl").write_text('{"id": "c", "input": "x"}\n')
    (tmp_path / file).write_text(text)
    done = run_cli(["suite.jsonl"], cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert problem in done.stderr


def test_interrupt_grace_travels_to_an_executors_workers(tmp_path):
    """A worker's runner (``RemoteWorker``) is built from the shipped options: its after hooks
    get the run's grace, as the Ray driver's wait for them does."""
    (tmp_path / "specrun.yaml").write_text("timeout: 60s\n")
    plugins = default_plugins()
    runner = Runner(Project.discover(tmp_path, plugins.registry), plugins, RunOptions(interrupt_grace=0.3))
    shipped = pickle.loads(pickle.dumps(RemoteRun.of(runner, [])))
    assert shipped.options.interrupt_grace == 0.3
