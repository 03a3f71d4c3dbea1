"""``specrun`` runs in a fresh process, for the tests that must watch a new process import
litellm or not: ``'litellm' in sys.modules`` at its exit, its results, and what the loopback
model server received.

Importing litellm takes 3 to 11 s here, so the tests that need a run that imports it share one,
:func:`litellm_run`, made once per test process and started in the background with the first
test of a module that will use it: tests/test_model_path.py (a judge's model only
litellm reaches makes the run import it) and tests/trust/test_trust_judges.py (the import is
never inside a case's clock). Each asserts its own property on it.

The project (:func:`write_project`): ``specrun.yaml``'s judge is ``openai/judge`` on the direct
route; the root agent is an ``http`` target. :func:`litellm_run` adds ``llm``, a ``litellm``
target whose calls go through litellm (``extra_headers``, which only litellm sends), and
``plain``, a Python function that calls no model.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.llm_server import LLMServer

# litellm's real import, made to take at least IMPORT_SECONDS (3.5 to 10 s here anyway, so the
# sleep adds little), and a mark that the run imported it and how long that took. The run's
# cases have TIMEOUT each: one that paid for the import could neither pass nor last under it.
IMPORT_SECONDS, TIMEOUT = 4.0, 3
LITELLM_JUDGE = "hosted_vllm/judge"  # a model only litellm reaches
SLOW_IMPORT = f"""
import importlib.machinery, pathlib, sys, time

class SlowLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module):
        started = time.monotonic()
        super().exec_module(module)
        time.sleep(max(0.0, started + {IMPORT_SECONDS} - time.monotonic()))
        pathlib.Path(__file__).with_name("imported").write_text(str(time.monotonic() - started))

class SlowLitellm:
    def find_spec(self, name, path=None, target=None):
        if name != "litellm":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = SlowLoader(spec.loader.name, spec.loader.path)
        return spec

sys.meta_path.insert(0, SlowLitellm())
"""

# main() in a fresh process, then whether litellm was imported: the console script is main()
CODE = (
    "import sys\nfrom specrun.cli.main import main\n"
    "try:\n    code = main(sys.argv[1:])\n"
    "except SystemExit as exit:\n    code = exit.code\n"
    "print(code, 'litellm' in sys.modules)\n"
)

JUDGED = "  - {id: judged, input: hello, assertions: [{type: llm, criteria: Says echo.%s}]}\n"
MORE_CASES = (
    "  - {id: model, input: hi, target: llm, assertions: [{type: contains, value: echo}]}\n"
    "  - {id: model2, input: hi again, target: llm, assertions: [{type: contains, value: echo}]}\n"
    "  - {id: plain, input: hi, target: plain, assertions: [{type: contains, value: plain}]}\n"
)


@dataclass
class Run:
    code: str  # the exit code, as printed
    imported: bool  # litellm in sys.modules as the process ended
    output: str  # what it printed, for failure messages
    results: dict[str, dict[str, Any]]  # the result records, by case id
    requests: list[dict[str, Any]]  # what the model server received, in order
    headers: list[dict[str, str]]
    import_seconds: float | None  # how long the import took, when SLOW_IMPORT made it

    def sent_by(self, marker: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
        """The requests whose body holds ``marker``, with their headers."""
        return [(r, h) for r, h in zip(self.requests, self.headers, strict=True) if marker in json.dumps(r)]


def write_project(root: Path, server: LLMServer, judge_model: str | None, more_cases: str = "") -> None:
    """The project, with a suite of the case ``judged`` (judged by ``judge_model``, else by the
    project's judge) and ``more_cases``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "specrun.yaml").write_text(
        f"model: openai/judge\nmodel_params: {{api_base: '{server.base_url}', api_key: unused}}\n"
    )
    (root / "agent.yaml").write_text(
        f"target: {{type: http, url: '{server.base_url}/chat/completions', format: openai}}\n"
    )
    own = f", model: {judge_model}" if judge_model else ""
    (root / "suite.yaml").write_text("cases:\n" + JUDGED % own + more_cases)


def judge_or_echo(body: dict[str, Any]) -> dict[str, Any]:
    """A passing verdict to a judge's prompt, an echo to anything else."""
    if "<<<BEGIN DATA" in json.dumps(body):
        return {"content": {"passed": True, "score": 1.0, "reason": "ok"}}
    return {"content": "echo"}


def start(root: Path, *args: str, pythonpath: Path | None = None) -> subprocess.Popen[bytes]:
    """``specrun suite.yaml -o out.jsonl -q ARGS`` started in ``root``, a fresh process with no
    ``OPENAI_*`` variables (and ``pythonpath`` first on its path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    if pythonpath is not None:
        env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    argv = [sys.executable, "-c", CODE, "suite.yaml", "-o", "out.jsonl", "-q", *args]
    # into files, not pipes: a full pipe nobody reads yet would stall a run in the background
    with (root / "stdout.txt").open("w") as out, (root / "stderr.txt").open("w") as err:
        return subprocess.Popen(argv, cwd=root, stdout=out, stderr=err, env=env)


def finish(process: subprocess.Popen[bytes], root: Path, server: LLMServer, pythonpath: Path | None = None) -> Run:
    """The run ``process`` made, once it ended (within 180 s)."""
    try:
        process.wait(timeout=180)
    finally:
        process.kill()  # a no-op once it ended
    stdout, stderr = (root / "stdout.txt").read_text(), (root / "stderr.txt").read_text()
    code, imported = ["", "", *stdout.split()][-2:]
    out = root / "out.jsonl"
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    mark = pythonpath / "imported" if pythonpath is not None else None
    return Run(
        code=code,
        imported=imported == "True",
        output=stdout + stderr,
        results={r["id"]: r for r in records if r["type"] == "result"},
        requests=list(server.requests),
        headers=list(server.headers),
        import_seconds=float(mark.read_text()) if mark is not None and mark.exists() else None,
    )


def run(root: Path, server: LLMServer, *args: str) -> Run:
    """``specrun suite.yaml -o out.jsonl -q ARGS`` in ``root``, a fresh process (see :func:`start`)."""
    return finish(start(root, *args), root, server)


_shared: dict[str, Any] = {}


def start_litellm_run(factory: pytest.TempPathFactory) -> None:
    """Start the one run per test process that imports litellm, in the background, unless it
    started already: a module calls it with its first test, so that the run's seconds overlap
    the module's other tests. It is the case ``judged`` (judged by LITELLM_JUDGE), ``model`` and
    ``model2`` (the ``llm`` target, through litellm) and ``plain``, at ``--timeout TIMEOUT
    --parallel 4``, with litellm's import made to take at least IMPORT_SECONDS."""
    with _starting:
        if not _shared:
            _start_litellm_run(factory)


_starting = threading.Lock()  # at collection's end from a thread, or by a module's first test


def _start_litellm_run(factory: pytest.TempPathFactory) -> None:
    root = factory.mktemp("litellm-run")
    (root / "slow").mkdir()
    (root / "slow" / "sitecustomize.py").write_text(SLOW_IMPORT)
    server = LLMServer(responder=judge_or_echo).start()
    write_project(root, server, LITELLM_JUDGE, MORE_CASES)
    (root / "llm").mkdir()
    (root / "llm" / "agent.yaml").write_text(
        f"target: {{type: litellm, model: openai/gpt-4o-mini, params: {{api_base: '{server.base_url}',"
        " api_key: test-key, extra_headers: {X-Test: through-litellm}}}\n"
    )
    (root / "plain").mkdir()
    (root / "plain" / "agent.yaml").write_text("target: {type: python, function: bot:answer}\n")
    (root / "plain" / "bot.py").write_text("def answer(messages, ctx):\n    return 'plain'\n")
    process = start(root, "--timeout", str(TIMEOUT), "--parallel", "4", pythonpath=root / "slow")
    _shared.update(root=root, server=server, process=process)
    atexit.register(_stop)  # a run no test asked for ends with the test process


def _stop() -> None:
    if "process" in _shared:
        _shared["process"].kill()
        _shared["server"].stop()


def wanted(request: pytest.FixtureRequest, test: Callable[..., Any], **params: Any) -> bool:
    """Whether ``test``, of the requesting module (with these parameters), is to run."""

    def matches(item: pytest.Item) -> bool:
        spec = getattr(item, "callspec", None)
        chosen = all(spec is not None and spec.params.get(k) == v for k, v in params.items())
        return getattr(item, "originalname", None) == test.__name__ and item.module is request.module and chosen

    return any(matches(item) for item in request.session.items)


# The tests that read the shared run, with the parameters that make them read it.
READERS = {
    "test_litellm_is_imported_only_by_a_run_that_names_a_model_needing_it": {"imports_litellm": True},
    "test_the_litellm_import_is_never_inside_a_case_clock": {},
}


def start_if_selected(session: pytest.Session) -> subprocess.Popen[bytes] | None:
    """At collection's end (tests/conftest.py): start the shared run if a selected test reads
    it, so that its seconds overlap every test before those. (A module's first test still
    starts it where this did not, as under pytest-xdist.)"""

    def reads(item: pytest.Item) -> bool:
        params = READERS.get(getattr(item, "originalname", ""))
        spec = getattr(item, "callspec", None)
        return params is not None and all(spec is not None and spec.params.get(k) == v for k, v in params.items())

    if not any(reads(item) for item in session.items):
        return None
    start_litellm_run(session.config._tmp_path_factory)  # type: ignore[attr-defined]
    return _shared.get("process")


def litellm_run(factory: pytest.TempPathFactory) -> Run:
    """The shared run that imports litellm (:func:`start_litellm_run`), once it ended."""
    start_litellm_run(factory)
    if "run" not in _shared:
        root, server = _shared["root"], _shared["server"]
        try:
            _shared["run"] = finish(_shared["process"], root, server, pythonpath=root / "slow")
        finally:
            server.stop()
            del _shared["process"]
    return _shared["run"]
