"""Agent Kernel's Python test examples, run with only their import line changed.

Each test writes a pytest project of seed examples (``seeds.extract``, by the line they start
at), the seed's CLI agent (``examples/pytest/demo.py``) and the seed's configuration (its
``export AK_TEST__...`` lines, its ``test-config.yaml``), runs pytest on it in a new process,
and checks the verdicts and what reached the loopback judge: the seed's settings must put the
comparisons in the mode it says, and a session must be able to judge more than once.

The fragments of the comparison-mode sections assume the ``test_client`` fixture of the first
example; they are run after its imports and fixture, as the page presents them. Not run here
(see docs/seeds.md): the API example (it calls ``make_api_call``, which the page never
defines; examples/pytest/test_api.py runs it with one) and the container example (it needs
Docker and lacks its own imports of ``os``, ``asyncio`` and ``pytest_asyncio``).
"""

from __future__ import annotations

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


def run_seed(tmp_path: Path, judge: LLMServer, source: str, env: dict[str, str], cwd: Path | None = None):
    """pytest on ``test_seed.py`` (``source``) next to the seed's demo agent, judged by ``judge``."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    shutil.copy(EXAMPLES / "demo.py", project / "demo.py")
    (project / "test_seed.py").write_text(source)
    (project / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SPECRUN_", "AK_TEST", "OPENAI_"))}
    environ |= {"OPENAI_API_BASE": judge.base_url, "OPENAI_API_KEY": "test", **env}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(project)],
        cwd=cwd or project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, done.stdout + done.stderr


SEED_ENV = (125, 126, 127, 128)  # export AK_TEST__MODE=llm, AK_TEST__LLM__MODEL=gpt-4o-mini, ...


def test_pytest_integration_in_the_mode_the_seeds_variables_set(tmp_path, judge):
    """The first example under the page's ``export AK_TEST__MODE=llm`` ... lines: both expect()
    calls of the session's one event loop are judged by the model."""
    done, output = run_seed(tmp_path, judge, ported(example(9).text), exports(*SEED_ENV))
    assert done.returncode == 0 and "2 passed" in output, output[-3000:]
    assert [body["model"] for body in judge.requests] == ["gpt-4o-mini", "gpt-4o-mini"]
    assert output.count("AK_TEST__MODE is read as SPECRUN_TEST__MODE") == 1, output[-3000:]


def test_comparison_modes_with_the_seeds_config_file_at_the_override_path(tmp_path, judge):
    """Score, llm and fallback modes and expect() with the configured mode, configured by the
    page's test-config.yaml found through AK_TEST_CONFIG_PATH_OVERRIDE."""
    config = tmp_path / "config" / "test-config.yaml"
    config.parent.mkdir()
    config.write_text(example(312).text + "\n")
    fragments = [ported(example(42).text), example(66).text, example(93).text, example(134).text]
    source = ported(prelude()) + "\n\n".join(fragments) + "\n"
    done, output = run_seed(tmp_path, judge, source, {"AK_TEST_CONFIG_PATH_OVERRIDE": str(config)})
    assert done.returncode == 0 and "4 passed" in output, output[-3000:]
    assert judge.requests and {body["model"] for body in judge.requests} == {"gpt-4o-mini"}  # llm mode: judged
    assert "AK_TEST_CONFIG_PATH_OVERRIDE is read as SPECRUN_TEST_CONFIG" in output


def test_session_fixture_thresholds_ordered_tests_and_environment_fixture(tmp_path, judge):
    """The session fixture with ``match_threshold=0.7``, the ordered greeting tests, the custom
    thresholds and the autouse environment fixture, in the seed's llm mode."""
    head = prelude()
    imports = head[: head.index("@pytest_asyncio.fixture")]
    parts = [example(152).text, example(165).text, example(332).text, example(341).text]
    source = ported(imports) + "\n\n".join(parts) + "\n"
    done, output = run_seed(tmp_path, judge, source, exports(*SEED_ENV))
    assert done.returncode == 0 and "2 passed" in output, output[-3000:]
    assert len(judge.requests) == 1  # test_greeting's expect(), judged; test_follow_up checks nothing


def test_multi_agent_switching_in_one_session(tmp_path, judge):
    source = ported(prelude()) + example(179).text + "\n"
    done, output = run_seed(tmp_path, judge, source, exports(*SEED_ENV))
    assert done.returncode == 0 and "2 passed" in output, output[-3000:]
    assert len(judge.requests) == 2  # each expect() judged in the one session loop
