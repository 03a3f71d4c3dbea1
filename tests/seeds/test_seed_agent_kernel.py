"""Agent Kernel's Python test examples, run with only their import line changed.

Each test writes a pytest project of seed examples (``seeds.extract``, by the line they start
at), the seed's CLI agent (``examples/pytest/demo.py``) and the seed's configuration (its
``export AK_TEST__...`` lines, its ``test-config.yaml``), runs pytest on it, and checks the
verdicts and what reached the loopback judge: the seed's settings must put the comparisons in
the mode it says, and a session must be able to judge more than once. The first example runs
in a new process, as a user runs it; the others in a pytest session of their own in this one.

The fragments of the comparison-mode sections assume the ``test_client`` fixture of the first
example; they are run after its imports and fixture, as the page presents them. Not run here
(see docs/seeds.md): the API example (it calls ``make_api_call``, which the page never
defines; examples/pytest/test_api.py runs it with one) and the container example (it needs
Docker and lacks its own imports of ``os``, ``asyncio`` and ``pytest_asyncio``).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.llm_server import LLMServer

from seeds.extract import AK, Example, examples

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pytest"
SEED_IMPORT = "from agentkernel.test import"


def example(line: int) -> Example:
    """The Agent Kernel example that starts at ``line`` of the seed."""
    found = next((e for e in examples(AK) if e.line == line), None)
    assert found is not None, f"no example at {AK}:{line}: the seed extractor changed"
    return found


def ported(text: str) -> str:
    """The example with its import line changed, and nothing else."""
    assert SEED_IMPORT in text
    return text.replace(SEED_IMPORT, "from specrun.testing import")


def prelude() -> str:
    """The first example's imports, pytestmark and ``test_client`` fixture: what the later
    fragments of the page assume."""
    text = example(9).text
    return text[: text.index("@pytest.mark.order(1)")]


def exports(*lines: int) -> dict[str, str]:
    """The variables of the seed's ``export NAME=value`` lines."""
    found = {}
    for line in lines:
        name, _, value = example(line).text.removeprefix("export ").partition("=")
        found[name] = value.split("#")[0].strip()
    return found


def _overlap_judge():
    """The examples' loopback judge rule (score = share of the expected answer's words present)."""
    spec = importlib.util.spec_from_file_location("_seed_examples_conftest", EXAMPLES / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.judge


@pytest.fixture
def judge():
    with LLMServer(responder=_overlap_judge()) as server:
        yield server


# The seed needs pytest-asyncio and pytest-order (and specrun's plugin, installed with it);
# anyio's and xdist's plugins it never uses cost a third of a run in a new process: pytest
# compiles their modules again in each one when bytecode is not written (PYTHONDONTWRITEBYTECODE).
# langsmith's (it comes with langchain-core) imported 1.3 s of langsmith into the new process.
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:anyio", "-p", "no:xdist"]
PYTEST_ARGS += ["-p", "no:xdist.looponfail", "-p", "no:langsmith_plugin"]
OTHER_SETTINGS = ("SPECRUN_", "AK_TEST", "OPENAI_")  # the run's settings are the seed's alone


def write_seed(project: Path, source: str) -> None:
    """``test_seed.py`` (``source``) next to the seed's demo agent, with the page's pytest.ini."""
    project.mkdir(exist_ok=True)
    shutil.copy(EXAMPLES / "demo.py", project / "demo.py")
    (project / "test_seed.py").write_text(source)
    (project / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def run_seed(tmp_path: Path, judge: LLMServer, source: str, env: dict[str, str], cwd: Path | None = None):
    """pytest on ``test_seed.py`` (``source``) next to the seed's demo agent, judged by ``judge``,
    in a new process: what a run says once per process (the alias warnings) is seen there."""
    project = tmp_path / "project"
    write_seed(project, source)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", *OTHER_SETTINGS))}
    environ |= {"OPENAI_API_BASE": judge.base_url, "OPENAI_API_KEY": "test", **env}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_ARGS, str(project)],
        cwd=cwd or project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, done.stdout + done.stderr


def run_seed_inline(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    judge: LLMServer,
    source: str,
    env: dict[str, str],
) -> tuple[int | pytest.ExitCode, str]:
    """The same pytest run in this process (``pytest.main``: a session of its own, with its own
    session-scoped event loop and fixtures), which skips starting Python, pytest and specrun
    again. What a process says once (the alias warnings) it says as a new process would: the run
    starts with none said, and this process's record is put back after it. Only the project's
    modules are unloaded afterwards (pytester's inline run unloads every module the run imported,
    and a second copy of a module specrun keeps objects of breaks later tests)."""
    from specrun.testing import config

    project = tmp_path / "project"
    write_seed(project, source)
    for name in [k for k in os.environ if k.startswith(OTHER_SETTINGS)]:
        monkeypatch.delenv(name)
    for name, value in {"OPENAI_API_BASE": judge.base_url, "OPENAI_API_KEY": "test", **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(config, "_announced", set())
    folder = os.path.join(str(project), "")
    capsys.readouterr()
    # The session ends with pytest's full collections (it looks for unraisable exceptions):
    # what is alive now (litellm, half imported in the background as these tests run) is frozen
    # out of their sight, or each walked all of it (0.3 s apiece).
    gc.freeze()
    try:
        code = pytest.main([*PYTEST_ARGS, str(project)])
    finally:
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(folder):
                del sys.modules[name]
    out, err = capsys.readouterr()
    return code, out + err


SEED_ENV = (125, 126, 127, 128)  # export AK_TEST__MODE=llm, AK_TEST__LLM__MODEL=gpt-4o-mini, ...


def test_pytest_integration_in_the_mode_the_seeds_variables_set(tmp_path, judge):
    """The first example under the page's ``export AK_TEST__MODE=llm`` ... lines: both expect()
    calls of the session's one event loop are judged by the model."""
    done, output = run_seed(tmp_path, judge, ported(example(9).text), exports(*SEED_ENV))
    assert done.returncode == 0 and "2 passed" in output, output[-3000:]
    assert [body["model"] for body in judge.requests] == ["gpt-4o-mini", "gpt-4o-mini"]
    assert output.count("AK_TEST__MODE is read as SPECRUN_TEST__MODE") == 1, output[-3000:]


def test_comparison_modes_with_the_seeds_config_file_at_the_override_path(tmp_path, monkeypatch, capsys, judge):
    """Score, llm and fallback modes and expect() with the configured mode, configured by the
    page's test-config.yaml found through AK_TEST_CONFIG_PATH_OVERRIDE."""
    config = tmp_path / "config" / "test-config.yaml"
    config.parent.mkdir()
    config.write_text(example(312).text + "\n")
    fragments = [ported(example(42).text), example(66).text, example(93).text, example(134).text]
    source = ported(prelude()) + "\n\n".join(fragments) + "\n"
    env = {"AK_TEST_CONFIG_PATH_OVERRIDE": str(config)}
    code, output = run_seed_inline(tmp_path, monkeypatch, capsys, judge, source, env)
    assert code == 0 and "4 passed" in output, output[-3000:]
    assert judge.requests and {body["model"] for body in judge.requests} == {"gpt-4o-mini"}  # llm mode: judged
    assert "AK_TEST_CONFIG_PATH_OVERRIDE is read as SPECRUN_TEST_CONFIG" in output


def test_session_fixture_thresholds_ordered_tests_and_environment_fixture(tmp_path, monkeypatch, capsys, judge):
    """The session fixture with ``match_threshold=0.7``, the ordered greeting tests, the custom
    thresholds and the autouse environment fixture, in the seed's llm mode."""
    head = prelude()
    imports = head[: head.index("@pytest_asyncio.fixture")]
    parts = [example(152).text, example(165).text, example(332).text, example(341).text]
    source = ported(imports) + "\n\n".join(parts) + "\n"
    code, output = run_seed_inline(tmp_path, monkeypatch, capsys, judge, source, exports(*SEED_ENV))
    assert code == 0 and "2 passed" in output, output[-3000:]
    assert len(judge.requests) == 1  # test_greeting's expect(), judged; test_follow_up checks nothing


def test_multi_agent_switching_in_one_session(tmp_path, monkeypatch, capsys, judge):
    source = ported(prelude()) + example(179).text + "\n"
    code, output = run_seed_inline(tmp_path, monkeypatch, capsys, judge, source, exports(*SEED_ENV))
    assert code == 0 and "2 passed" in output, output[-3000:]
    assert len(judge.requests) == 2  # each expect() judged in the one session loop
