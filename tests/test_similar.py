"""The similar assertion: semantic similarity, offline by default, a provider's embeddings on request."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from specrun_plugins.assertions import similar as similar_plugin
from support.cli import run_cli
from support.llm_server import LLMServer

from specrun._core.services import Services
from specrun._models.client import ModelClient
from specrun.plugin.testing import check_assertion

IMPORTS_LITELLM = True  # model: embeds through litellm (tests/conftest.py starts its import early)

BOT = """
ANSWERS = {"capital": "The capital city of France is Paris.", "off": "Bananas are rich in potassium."}

def answer(messages, ctx):
    return ANSWERS[messages[-1].text]
"""

SUITE = """\
cases:
  - id: paraphrase
    input: capital
    assertions:
      - {type: similar, value: ["Berlin is in Germany.", "Paris is the capital of France."], threshold: 0.5}
  - id: unrelated
    input: "off"
    assertions:
      - {type: similar, value: "Paris is the capital of France.", threshold: 0.5}
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "sim_bot.py").write_text(BOT)
    (tmp_path / "agent.yaml").write_text("target: python:sim_bot:answer\n")
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path


def results(path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"]: r for r in lines if r["type"] == "result"}


def test_a_paraphrase_passes_and_an_unrelated_answer_fails_with_score_and_nearest_text(tmp_path):
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history"], project(tmp_path))
    assert done.returncode == 1, done.stderr
    found = results(tmp_path / "out.jsonl")
    assert {k: r["status"] for k, r in found.items()} == {"paraphrase": "passed", "unrelated": "failed"}
    good = found["paraphrase"]["assertions"][0]
    assert good["details"]["nearest"] == "Paris is the capital of France." and good["score"] > 0.8
    assert good["details"]["scores"][0] < good["details"]["scores"][1]  # Berlin is the farther text
    bad = found["unrelated"]["assertions"][0]
    assert bad["score"] < 0.3 and "< 0.5" in bad["message"] and "Bananas" in bad["message"]


def test_without_the_extra_the_run_is_refused_naming_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wordllama", None)  # what importing an uninstalled package finds
    done = run_cli(["suite.yaml", "--no-history"], project(tmp_path))
    assert done.returncode == 2
    assert "pip install 'specrun[similar]'" in done.stderr and "suite.yaml:" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_parameters_are_refused_before_the_run(tmp_path):
    project(tmp_path)
    (tmp_path / "suite.yaml").write_text(
        "- id: a\n  input: capital\n  assertions: [{type: similar, value: Paris, threshold: 1.5}]\n"
        "- id: b\n  input: capital\n  assertions: [{type: similar, value: Paris}]\n"
    )
    done = run_cli(["suite.yaml", "--no-history"], tmp_path)
    assert done.returncode == 2 and "threshold" in done.stderr and "suite.yaml:3" in done.stderr


# No network at all: a user and network namespace (only a downed loopback inside) where the kernel
# allows one, and in any case a guard that fails every socket connection; HOME is empty, so no
# cached copy of the model can stand in for the files of the installed package.
OFFLINE = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network use in an offline test")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = refuse
from specrun.plugin.testing import check_assertion
expected = {"value": "Paris is the capital of France.", "threshold": 0.5}
good = check_assertion("similar", expected, "The capital city of France is Paris.")
bad = check_assertion("similar", expected, "Bananas are rich in potassium.")
print(good.status, bad.status, good.message, bad.message)
"""


def _no_network_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def test_the_local_embedder_works_with_no_network_and_no_cache(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [*_no_network_prefix(), sys.executable, "-c", OFFLINE], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("passed failed"), done.stdout
    assert not (tmp_path / ".cache").exists() and not (tmp_path / "cache").exists()  # nothing downloaded


# -- a provider's embeddings (model:), over real HTTP ---------------------------------------


@pytest.fixture(scope="module")
def server():
    with LLMServer() as srv:
        yield srv


def client(server: LLMServer, cache_dir: Path | None, **params: object) -> ModelClient:
    params = {"api_base": server.base_url, "api_key": "test-key", "temperature": 0, **params}
    return ModelClient(params=params, cache_dir=cache_dir, base_delay=0.01)


MODEL = {"value": ["refund five days", "order shipped"], "threshold": 0.6, "model": "openai/text-embedding-3-small"}


def test_model_embeds_through_the_provider_and_caches_the_answer(server, tmp_path):
    """An OpenAI-compatible backend, on the direct route (no litellm), as completions are."""
    models = client(server, tmp_path)
    before = len(server.requests)
    first = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=models))
    again = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=models))
    assert first.status == again.status == "passed" and first.details["nearest"] == "order shipped"
    assert first.details["embedder"] == "openai/text-embedding-3-small"
    assert first.details["usage"]["total_tokens"] == 9 and "usage" not in again.details  # a hit costs nothing
    sent = server.requests[before:]
    assert len(sent) == 1 and sent[0]["input"] == ["your order has shipped", "refund five days", "order shipped"]
    assert "temperature" not in sent[0]  # chat settings of model_params are not sent to an embeddings endpoint
    far = check_assertion("similar", MODEL, "the weather is sunny", services=Services(models=models))
    assert far.status == "failed" and far.score < 0.6


def test_through_litellm_too_and_a_provider_that_fails_is_an_error_never_a_fail(server):
    through_litellm = client(server, None, dimensions=64)  # a setting only litellm translates
    before = len(server.requests)
    done = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=through_litellm))
    assert done.status == "passed" and server.requests[before]["dimensions"] == 64
    server.script({"status": 400})  # not worth a retry: the first answer is the last
    done = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=through_litellm))
    assert done.status == "error" and "text-embedding-3-small" in done.message and "400" in done.message
    server.script({"status": 401})
    done = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=client(server, None)))
    assert done.status == "error" and "401" in done.message
    server.script({"vectors": [[1.0, 0.0]]})  # one vector for three texts
    done = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=client(server, None)))
    assert done.status == "error" and "1 vectors for 3 texts" in done.message
    server.script({"vectors": [[1.0, 0.0], [1.0], [0.5, 0.5]]})
    done = check_assertion("similar", MODEL, "your order has shipped", services=Services(models=client(server, None)))
    assert done.status == "error" and "different sizes (2 and 1)" in done.message


def embedding_project(server: LLMServer, tmp_path: Path) -> Path:
    """A project whose specrun.yaml names the loopback server's embedder: one similar uses it, one its own."""
    root = project(tmp_path)
    (root / "specrun.yaml").write_text(
        "timeout: 10s\nembedding_model: openai/text-embedding-3-small\n"
        f"model_params: {{api_base: '{server.base_url}', api_key: test-key}}\n"
    )
    similar = "{type: similar, value: 'The capital of France is Paris.', threshold: 0.7"
    (root / "suite.yaml").write_text(
        f"cases:\n  - id: default\n    input: capital\n    assertions: [{similar}}}]\n"
        f"  - id: own\n    input: capital\n    assertions: [{similar}, model: openai/own-embedder}}]\n"
    )
    return root


def test_specrun_yaml_gives_similar_a_default_embedding_model_an_assertion_may_override(server, tmp_path, monkeypatch):
    root = embedding_project(server, tmp_path)
    # As in a fresh process: no local embedder loaded or loading (another test may have loaded it)
    monkeypatch.setattr(similar_plugin, "_model", None)
    monkeypatch.setattr(similar_plugin, "_preloading", None)
    before = len(server.requests)
    done = run_cli(["suite.yaml", "-o", "out.jsonl", "--no-history", "--no-cache", "-j", "1"], root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert similar_plugin._preloading is None and similar_plugin._model is None  # every similar had a model
    found = results(root / "out.jsonl")
    assert found["default"]["assertions"][0]["details"]["embedder"] == "openai/text-embedding-3-small"
    assert found["own"]["assertions"][0]["details"]["embedder"] == "openai/own-embedder"
    assert sorted(r["model"] for r in server.requests[before:]) == ["own-embedder", "text-embedding-3-small"]


def test_with_the_projects_embedding_model_a_similar_needs_no_local_embedder(server, tmp_path, monkeypatch):
    """Checked before the run as it will run: through the project's model, not the missing extra."""
    root = embedding_project(server, tmp_path)
    monkeypatch.setitem(sys.modules, "wordllama", None)  # the extra not installed
    for command in (["suite.yaml", "--no-history", "-j", "1"], ["validate", "suite.yaml"]):
        done = run_cli(command, root)
        assert done.returncode == 0, done.stdout + done.stderr
    (root / "specrun.yaml").write_text("timeout: 10s\n")  # no project default: the default case needs the extra
    done = run_cli(["suite.yaml", "--no-history"], root)
    assert done.returncode == 2 and "pip install 'specrun[similar]'" in done.stderr
    assert "suite.yaml:4" in done.stderr and "suite.yaml:5" not in done.stderr  # "own" has a model of its own


def test_the_projects_embedding_model_is_the_python_apis_too(server, tmp_path, monkeypatch):
    from specrun.testing import assert_similar

    (tmp_path / "specrun.yaml").write_text(
        f"embedding_model: openai/text-embedding-3-small\nmodel_params: {{api_base: '{server.base_url}'}}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    before = len(server.requests)
    passed, _, _ = assert_similar("your order has shipped", "order shipped", 0.6)
    assert passed
    assert [r["model"] for r in server.requests[before:]] == ["text-embedding-3-small"]


def test_an_empty_output_fails_and_a_long_one_is_still_judged():
    expected = {"value": "Paris is the capital of France.", "threshold": 0.5}
    empty = check_assertion("similar", expected, "  \n")
    assert empty.status == "failed" and empty.score == 0 and "output is empty" in empty.message
    long = check_assertion("similar", expected, "The capital city of France is Paris. " * 500)  # embedded in a thread
    assert long.status == "passed" and long.score > 0.8


# -- the Python test API: Agent Kernel's llm.embedding_model picks the provider ---------------


def test_assert_similar_from_python_passes_a_paraphrase_and_rejects_an_unrelated_answer():
    from specrun.testing import assert_similar

    passed, score, _ = assert_similar("The capital city of France is Paris.", "Paris is the capital of France.", 0.5)
    assert passed and score > 0.8
    with pytest.raises(AssertionError, match=r"similarity -?0\.\d+ < 0\.5"):
        assert_similar("Bananas are rich in potassium.", ["Paris is the capital of France."], 0.5)
    with pytest.raises(Exception, match="threshold"):
        assert_similar("x", "y", 2)


@pytest.mark.filterwarnings("ignore::specrun.testing.config.AliasWarning")  # said once per process: maybe before
def test_the_configured_embedding_model_embeds_through_the_provider(server, monkeypatch):
    from specrun.testing import assert_similar

    monkeypatch.setenv("AK_TEST__LLM__EMBEDDING_MODEL", "openai/text-embedding-3-small")  # Agent Kernel's name
    monkeypatch.setenv("SPECRUN_TEST__LLM__API_BASE", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    before = len(server.requests)
    passed, _, message = assert_similar("your order has shipped", "order shipped", 0.6)
    assert passed and "0.707" in message
    sent = [{"model": "text-embedding-3-small", "input": ["your order has shipped", "order shipped"]}]
    assert server.requests[before:] == sent
