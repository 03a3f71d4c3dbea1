"""The Python test API (specrun.testing) and its settings (specrun.testing.config).

Model-backed comparisons are judged over HTTP by the loopback model server; CLI agents are
the real scripts in tests/agents and examples/pytest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.background import Job
from support.llm_server import LLMServer, data_section

from specrun._core.errors import EvaluationError, TargetError, UsageError
from specrun.testing import Mode, Test, load_config

REPO = Path(__file__).resolve().parents[1]
AGENTS = REPO / "tests" / "agents"
EXAMPLES = REPO / "examples" / "pytest"
QUESTION = "Who won the 1996 cricket world cup?"

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch, tmp_path):
    """No test-config.yaml, SPECRUN_TEST__* or model variables leak in from outside."""
    for name in list(os.environ):
        if name.startswith(("SPECRUN_TEST", "OPENAI_")) or name == "SPECRUN_MODEL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def judge_server(monkeypatch):
    """A loopback judge that scores 0.9 when the answer names Sri Lanka, else 0.1."""

    def rule(body):
        actual = data_section(body["messages"][-1]["content"])[0]["answer"]
        score = 0.9 if "sri lanka" in actual.lower() else 0.1
        return {"content": json.dumps({"score": score, "reason": f"judged {score}"})}

    with LLMServer(responder=rule) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        yield server


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


# -- the seed's examples ----------------------------------------------------------------------


def _examples_env() -> dict[str, str]:
    """This process's environment without what the tests' own settings add or leave out
    (``clean_settings``, ``_not_in_a_github_job``): the examples make their own."""
    left_out = ("PYTEST_", "SPECRUN_TEST", "OPENAI_", "SPECRUN_MODEL", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")
    return {k: v for k, v in os.environ.items() if not k.startswith(left_out) and k != "GITHUB_WORKSPACE"}


# The examples' own pytest run, as a user starts it in that folder (a second of pytest starting
# and collecting): it starts when collection finishes (tests/support/background.py) and the test
# reads it, so that the tests before it overlap it.
# (langsmith's plugin, which comes with langchain-core, imported 1.3 s of langsmith.)
SEED_EXAMPLES = Job(
    __name__,
    "seed_examples",
    lambda _: [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:langsmith_plugin"],
    cwd=EXAMPLES,
    env=_examples_env(),
)


@pytest.fixture
def seed_examples() -> subprocess.CompletedProcess[str]:
    return SEED_EXAMPLES.result(timeout=300)


def test_the_seed_examples_pass_against_the_example_agents_and_the_loopback_judge(seed_examples):
    done = seed_examples
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "15 passed" in done.stdout
    for name in ("test_conversation.py", "test_modes.py", "test_multi_agent.py", "test_ordered.py", "test_api.py"):
        source = (EXAMPLES / name).read_text()
        assert "agentkernel" not in source and "from specrun.testing import" in source


# -- CLI agents -------------------------------------------------------------------------------


async def test_a_silent_cli_agent_fails_at_the_read_timeout_and_is_stopped():
    test = Test([sys.executable, str(AGENTS / "silent_cli.py")], read_timeout=0.3)  # the banner comes in some 20 ms
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"no prompt within 0.3s; last output: 'Loading models...'"):
        await test.start()
    assert time.monotonic() - started < 5
    with pytest.raises(TargetError, match="failed earlier"):  # later calls fail at once
        await test.send("hello")
    assert test._process is None


def test_a_seed_style_session_on_a_silent_agent_errors_instead_of_hanging(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    path = pytester.makepyfile(
        test_silent=f"""
        import pytest, pytest_asyncio
        from specrun.testing import Test

        pytestmark = pytest.mark.asyncio(loop_scope="session")

        @pytest_asyncio.fixture(scope="session", loop_scope="session")
        async def test_client():
            test = Test({str(AGENTS / "silent_cli.py")!r}, read_timeout=0.2)
            await test.start()
            try:
                yield test
            finally:
                await test.stop()

        async def test_one(test_client):
            await test_client.send("hi")

        async def test_two(test_client):
            await test_client.send("hi")
        """
    )
    started = time.monotonic()
    # In process (a pytest process starts in a second): the inner run imports only its test file.
    done = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", str(path))
    assert done.ret == 1 and "2 errors" in done.stdout.str(), done.stdout.str()[-2000:]
    assert "no prompt within 0.2s" in done.stdout.str()
    assert time.monotonic() - started < 60


async def test_cli_agent_ansi_stripped_stderr_apart_and_select_tracked():
    async with Test([str(AGENTS / "echo_cli.py"), "--color"]) as test:
        assert test.banner == "Echo agent 1.0\nType !exit to quit." and test.agent_name == "echo"
        reply = await test.send("hello")
        assert reply == test.last_agent_response == "[echo] echo: hello (#1)"
        assert test.last_user_input == "hello"
        assert "log: got 'hello'" in test.stderr and "log:" not in reply
        await test.send("!select math")
        assert test.agent_name == "math"
        assert await test.send("2 + 2") == "[math] echo: 2 + 2 (#3)"
        await test.expect("[math] echo: 2 + 2 (#3)")
        pid = test._process.pid
    assert not alive(pid)


async def test_a_command_string_with_a_custom_prompt(tmp_path):
    script = tmp_path / "ask.py"
    script.write_text(
        "import sys\n"
        "while True:\n"
        "    sys.stdout.write('ask> '); sys.stdout.flush()\n"
        "    line = sys.stdin.readline()\n"
        "    if not line: break\n"
        "    print(line.strip().upper())\n"
    )
    async with Test(f"{script} --flag", prompt=r"ask> $") as test:
        assert await test.send("quiet") == "QUIET"
        assert test.agent_name is None


async def test_examples_demo_is_found_next_to_the_calling_file(monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)  # no demo.py here
    ns: dict = {"__name__": "example_tests", "__file__": str(EXAMPLES / "test_x.py"), "Test": Test}
    exec("made = Test('demo.py')", ns)
    async with ns["made"] as test:
        assert await test.send(QUESTION) == "Sri Lanka won the 1996 cricket world cup."


# -- other targets ----------------------------------------------------------------------------


async def test_a_target_mapping_an_agent_id_and_a_shorthand_with_a_timeout(tmp_path):
    (tmp_path / "echo_bot.py").write_text(
        "def reply(messages, ctx):\n    return f'{len(messages)}: {messages[-1].text}'\n"
    )
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "agent.yaml").write_text("target: python:helper:reply\n")
    (tmp_path / "bot" / "helper.py").write_text(
        "def reply(messages, ctx):\n    return 'helper says ' + messages[-1].text\n"
    )
    async with Test({"type": "python", "function": "echo_bot:reply"}) as test:
        assert await test.send("a") == "1: a"
        assert await test.send("b") == "3: b"  # stateless: the whole history is resent
    async with Test("bot") as test:
        assert test.agent_name == "bot"
        await test.send("hi")
        await test.expect("helper says hi")
    (tmp_path / "slow_bot.py").write_text("import time\n\ndef reply(messages, ctx):\n    time.sleep(30)\n")
    test = Test("python:slow_bot:reply", read_timeout=0.2)
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"no reply within 0.2s"):
        await test.send("hello")
    assert time.monotonic() - started < 5
    with pytest.raises(TargetError, match="failed earlier"):
        await test.send("again")
    await test.stop()
    for name in ("echo_bot", "helper", "slow_bot"):
        sys.modules.pop(name, None)


# -- comparing --------------------------------------------------------------------------------


def test_compare_outside_an_event_loop_and_a_bare_string_is_one_answer():
    assert Test.compare("Paris.", expected="paris", mode=Mode.SCORE)[0]
    with pytest.raises(AssertionError) as failure:  # char by char, "a" would match "abc"
        Test.compare("a", expected="abc", mode=Mode.SCORE)
    message = str(failure.value)
    assert "received: 'a'" in message and "- 'abc'" in message and "mode score" in message


async def test_compare_inside_a_running_loop_with_the_llm_judge(judge_server, monkeypatch):
    monkeypatch.setenv("SPECRUN_TEST__LLM__MODEL", "openai/gpt-4o-mini")
    passed, score, reason = Test.compare("Sri Lanka took the cup", ["Sri Lanka won"], user_input=QUESTION, mode="llm")
    assert passed and score == 0.9 and "judged 0.9" in reason
    with pytest.raises(AssertionError, match="received: 'Australia'"):
        Test.compare("Australia", ["Sri Lanka won"], mode=Mode.LLM)
    assert await Test.acompare("Sri Lanka!", "Sri Lanka won", mode=Mode.FALLBACK, threshold=0.5)
    bodies = judge_server.requests
    assert len(bodies) == 3 and bodies[0]["model"] == "gpt-4o-mini"
    assert data_section(bodies[0]["messages"][-1]["content"])[0]["question"] == QUESTION


def test_the_model_comes_from_the_config_file_with_its_provider(judge_server, tmp_path):
    (tmp_path / "test-config.yaml").write_text("mode: llm\nllm:\n  model: gpt-4o-mini\n  provider: openai\n")
    assert Test.compare("Sri Lanka", "Sri Lanka won the cup")[0]  # no mode argument: llm from the file
    assert judge_server.requests[0]["model"] == "gpt-4o-mini"


def test_fallback_without_a_model_says_how_to_configure_one():
    assert Test.compare("Sri Lanka", "sri lanka")[0]  # the score stage decides: no model needed
    with pytest.raises(EvaluationError, match=r"fallback mode needs a model.*SPECRUN_TEST__LLM__MODEL"):
        Test.compare("Sri Lanka took it", "Sri Lanka won")


async def test_expect_uses_the_test_mode_and_threshold():
    async with Test([str(AGENTS / "echo_cli.py")], mode=Mode.SCORE, match_threshold=1.0) as test:
        await test.send("hi")
        with pytest.raises(AssertionError, match=r"mode score, threshold 1"):
            await test.expect(["hello", "hi"])
    with pytest.raises(AssertionError, match="call send"):
        await Test("x.py").expect("anything")


# -- settings: argument > environment > file > default ----------------------------------------

RECORDER = """
import asyncio

CALLS = []


class Recorder:
    def __init__(self, config):
        self.config = config

    def evaluate(self, actual, expected, user_input, threshold, mode):
        CALLS.append((actual, expected, user_input, threshold, mode, self.config.llm.embedding_model))
        return actual in expected, 1.0 if actual in expected else 0.0, "recorded"


class AsyncNo:
    async def evaluate(self, actual, expected, user_input, threshold, mode):
        await asyncio.sleep(0)
        return False, 0.25, "never"
"""


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    (tmp_path / "my_evaluators.py").write_text(RECORDER)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_evaluators", None)
    yield lambda: sys.modules["my_evaluators"].CALLS
    sys.modules.pop("my_evaluators", None)


def test_precedence_of_argument_environment_file_and_default(tmp_path, monkeypatch, recorder):
    config = tmp_path / "test-config.yaml"
    config.write_text("evaluator: my_evaluators.Recorder\nllm:\n  embedding_model: emb-file\n")

    Test.compare("x", "x")  # defaults: fallback, 0.8
    config.write_text(config.read_text() + "mode: llm\nthreshold: 0.6\n")
    Test.compare("x", "x")  # the file
    monkeypatch.setenv("SPECRUN_TEST__MODE", "score")
    monkeypatch.setenv("SPECRUN_TEST__THRESHOLD", "0.4")
    monkeypatch.setenv("SPECRUN_TEST__LLM__EMBEDDING_MODEL", "emb-env")
    Test.compare("x", "x")  # the environment over the file
    Test.compare("x", ["x", "y"], user_input="q", threshold=0.9, mode=Mode.FALLBACK)  # arguments win
    assert recorder() == [
        ("x", ["x"], None, 0.8, "fallback", "emb-file"),
        ("x", ["x"], None, 0.6, "llm", "emb-file"),
        ("x", ["x"], None, 0.4, "score", "emb-env"),
        ("x", ["x", "y"], "q", 0.9, "fallback", "emb-env"),
    ]
    loaded = load_config()
    assert loaded.origin == {
        "evaluator": "file",
        "llm.embedding_model": "env",
        "mode": "env",
        "threshold": "env",
    }


def test_the_config_path_variable_and_provider_prefix(tmp_path, monkeypatch):
    other = tmp_path / "elsewhere.yaml"
    other.write_text("# comments only\n")
    monkeypatch.setenv("SPECRUN_TEST_CONFIG", str(other))
    assert load_config().mode == "fallback" and load_config().path == other
    other.write_text("llm: {model: gpt-4o-mini, provider: openai}\n")
    assert load_config().llm.litellm_model == "openai/gpt-4o-mini"
    monkeypatch.setenv("SPECRUN_TEST__LLM__MODEL", "openai/gpt-4o")  # already prefixed: kept as is
    assert load_config().llm.litellm_model == "openai/gpt-4o"
    monkeypatch.setenv("SPECRUN_TEST_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(UsageError, match=r"SPECRUN_TEST_CONFIG=.*no such file"):
        load_config()


def test_mistakes_in_settings_are_reported_where_they_are(tmp_path, monkeypatch):
    (tmp_path / "test-config.yaml").write_text("mode: fallback\nllm:\n  modle: gpt-4o\n")
    with pytest.raises(UsageError, match=r"test-config.yaml:3:3: unknown field 'modle'; did you mean 'model'"):
        load_config()
    (tmp_path / "test-config.yaml").write_text("mode: fuzzy\n")
    with pytest.raises(UsageError, match=r"test-config.yaml:1:7: .*fuzzy.* is not one of: score, llm, fallback"):
        load_config()
    (tmp_path / "test-config.yaml").unlink()
    monkeypatch.setenv("SPECRUN_TEST__MODEE", "llm")
    with pytest.raises(UsageError, match=r"SPECRUN_TEST__MODEE: unknown test setting .*SPECRUN_TEST__LLM__MODEL"):
        load_config()
    monkeypatch.delenv("SPECRUN_TEST__MODEE")
    monkeypatch.setenv("SPECRUN_TEST__THRESHOLD", "high")
    with pytest.raises(UsageError, match="SPECRUN_TEST__THRESHOLD='high': expected a number from 0 to 1"):
        load_config()
    with pytest.raises(ValueError, match="unknown mode 'fuzzy'"):
        load_config(environ={}).resolve("fuzzy")


async def test_a_custom_evaluator_by_dotted_path_async_and_failing(tmp_path, recorder):
    (tmp_path / "test-config.yaml").write_text("evaluator: my_evaluators.AsyncNo\n")
    with pytest.raises(AssertionError, match=r"best score: 0.25; never"):
        await Test.acompare("x", "x")
    with pytest.raises(UsageError, match="unknown evaluator 'geval'"):
        Test.compare("x", "x", evaluator="geval")
    with pytest.raises(UsageError, match="cannot find module 'nowhere'"):
        Test.compare("x", "x", evaluator="nowhere.Evaluator")
    assert Test.compare("x", "x", evaluator="deepeval", mode="score")[0]  # the built-in, by Agent Kernel's name


# -- the docs' example, and what a failure shows -----------------------------------------------

FAILURES = """
from specrun.testing import Mode, Test


async def test_compare_in_a_loop():
    Test.compare("Sri Lanka", expected="Australia", mode=Mode.SCORE)


def test_compare_without_one():
    Test.compare("Paris.", expected="London", mode=Mode.SCORE)


async def test_tools():
    async with Test({"type": "python", "function": "echo_tools:reply"}) as t:
        await t.send("hi")
        t.expect_tool_called("lookup", {"id": 2})
"""


def _docs_block(language: str) -> str:
    """The first ``language`` code block of docs/pytest.md's Test API section."""
    section = (REPO / "docs" / "pytest.md").read_text().split("## The `Test` API", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_docs_example_warns_about_nothing_and_failures_show_only_the_comparison(pytester):
    pytester.makeini(_docs_block("ini"))
    pytester.makepyfile(test_example=_docs_block("python"), test_failures=FAILURES)
    (pytester.path / "demo.py").write_text((EXAMPLES / "demo.py").read_text())
    (pytester.path / "echo_tools.py").write_text(
        "from specrun import Response, ToolCall\n\n"
        "def reply(messages, ctx):\n    return Response('ok', tool_calls=[ToolCall('lookup', {'id': 1})])\n"
    )
    try:
        done = pytester.runpytest_inprocess("-W", "error", "-p", "no:cacheprovider")
    finally:
        sys.modules.pop("echo_tools", None)
    out = done.stdout.str()
    done.assert_outcomes(passed=2, failed=3)  # the example's two tests (one of them sync), without a warning
    assert "warning" not in out.lower()
    # once in each failure's report (the short summary repeats it whole under CI=true, as pytest does)
    reports = out.split(" short test summary info ", 1)[0]
    assert reports.count("received: 'Sri Lanka'") == 1 and reports.count("received: 'Paris.'") == 1
    assert 'expected a call to lookup with arguments {"id": 2}; matched 0; calls: lookup({"id": 1})' in out
    # each failure points at the test's line; no frame of specrun, the event loop or its thread
    failures = out.split(" FAILURES ", 1)[1]
    assert f"{os.sep}specrun{os.sep}" not in failures and "asyncio" not in failures, failures
    assert "concurrent" not in failures and len(re.findall(r"test_failures.py:\d+: AssertionError", failures)) == 3
