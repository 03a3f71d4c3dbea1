"""No leak (issue 11.5): what a run put into a request never comes back out.

End to end through the CLI: an http agent on loopback that answers 401 quoting the request
(headers, query, body) and one that answers 200 with the request as its output (nested JSON),
a litellm target whose provider answers 401 quoting its key, and a CLI agent that prints its
environment. The secrets sit in arbitrarily named environment variables, substituted with
``${NAME}``; none may appear in any output file, stdout or stderr, in any spelling. Direct mode
(``-i``) strips terminal control sequences as run mode does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support.cli import at_once, run_cli
from support.llm_server import LLMServer

from specrun._core.redact import redact, redact_json, register
from specrun._report.display import terminal_text, visible

SPECRUN = str(Path(sys.executable).with_name("specrun"))
ECHO_CLI = Path(__file__).resolve().parent.parent / "agents" / "echo_cli.py"

# Each secret holds a core of letters and digits that every encoding (JSON, repr, HTML, %XX)
# leaves as is: if any spelling of a secret reached an output, its core is there.
SECRETS = {
    "ZZ_PLAIN_NAME": 'hdr"K7mZq9\\x',  # a header; the name looks like nothing secret
    "ANY_OLD_SETTING": 'q"Q4wXp2\\v<&>',  # the query string
    "JUST_A_VALUE": 'b"B8nRt5\\ü\n',  # the body
    "LEAK_USERINFO": "pwU3vLs6",  # the URL's password (also sent as Basic authorization)
    "MODEL_THING": 'sk-"M5kWj3\\z',  # a litellm target's api_key
    "PROC_SETTING": "pr'C2hNd7\\\"",  # a CLI agent's env
}
CORES = ["K7mZq9", "Q4wXp2", "B8nRt5", "U3vLs6", "M5kWj3", "C2hNd7"]
BASIC = base64.b64encode(f"leaky:{SECRETS['LEAK_USERINFO']}".encode()).decode()


class EchoServer:
    """Loopback HTTP: ``/deny`` answers 401 quoting the request, ``/echo`` answers 200 with it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        sent = {"headers": dict(request.headers), "query": request.rel_url.raw_query_string, "body": body}
        self.seen.append(sent)
        if request.path == "/deny":  # what an endpoint quoting the request it refuses looks like
            headers = request.headers
            quoted = {"x-anything": headers.get("X-Anything"), "authorization": headers.get("Authorization")}
            quoted.update(query=sent["query"], body=body)
            return web.json_response({"error": "unauthorized", "you sent": quoted}, status=401)
        nested = json.dumps({"again": json.dumps(sent)})  # JSON in JSON in JSON
        return web.json_response({"answer": sent, "nested": nested})

    def _serve(self) -> None:
        app = web.Application()
        app.router.add_post("/deny", self._handle)
        app.router.add_post("/echo", self._handle)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> EchoServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def http_agent(port: int, path: str) -> str:
    url = f"http://leaky:${{LEAK_USERINFO}}@127.0.0.1:{port}/{path}?k=${{ANY_OLD_SETTING}}"
    return f"""target:
  type: http
  url: "{url}"
  format: template
  body: {{q: "{{{{input}}}}", note: "${{JUST_A_VALUE}}"}}
  headers:
    X-Anything: "${{ZZ_PLAIN_NAME}}"
"""


def make_project(root: Path, port: int) -> None:
    (root / "specrun.yaml").write_text("timeout: 60s\n")
    agents = {
        "deny": http_agent(port, "deny"),
        "echo": http_agent(port, "echo"),
        "model": "target:\n  type: litellm\n  model: openai/mock\n  retries: 0\n"
        '  params: {api_key: "${MODEL_THING}", api_base: "${SOME_BASE}"}\n',
        "cli": f"target:\n  type: process\n  command: [{json.dumps(str(ECHO_CLI))}]\n"
        '  env: {AGENT_SEES: "${PROC_SETTING}"}\n',
    }
    inputs = {"deny": "hi", "echo": "hi", "model": "hi", "cli": "!env AGENT_SEES"}
    # Not run with the others: a config mistake whose message quotes the url (--debug run).
    (root / "bad").mkdir()
    (root / "bad" / "agent.yaml").write_text(
        'id: badurl\ntarget: {type: http, url: "ftp://x:${LEAK_USERINFO}@h/${ZZ_PLAIN_NAME}"}\n'
    )
    for name, agent in agents.items():
        (root / name).mkdir()
        (root / name / "agent.yaml").write_text(agent)
        # An assertion that fails quotes the output in its message: one more spelling path.
        case = {"id": f"{name}-1", "input": inputs[name], "assertions": [{"type": "contains", "value": "nope"}]}
        (root / name / "suite.jsonl").write_text(json.dumps(case) + "\n")


def run(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)


def assert_no_secret(name: str, text: str) -> None:
    for core in CORES:
        assert core not in text, f"{name} leaks a secret ({core}): ...{text[max(0, text.find(core) - 80) :][:200]}"
    assert BASIC not in text, f"{name} leaks the URL password as Basic authorization"


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory):
    """One run of the four agents with every output, and a pytest run and a direct-mode run."""
    root = tmp_path_factory.mktemp("leaky")
    # The provider answers 401 quoting the key it was sent, as some do.
    refusal = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRETS['MODEL_THING']}"}})
    with EchoServer() as server, LLMServer(responder=lambda body: {"status": 401, "body": refusal}) as llm:
        make_project(root, server.port)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPECRUN_")}
        env.update(SECRETS, SOME_BASE=llm.base_url, PYTHONPATH="", NO_COLOR="1")
        # output-*: a name folder searches skip, so the run may write it inside the folder it reads
        outputs = [f"out/output-report.{ext}" for ext in ("jsonl", "json", "md", "html", "xml")]
        junit = root / "out" / "pytest.xml"
        main, direct, tests, debug = at_once(  # four processes that share nothing but the servers
            lambda: run(root, SPECRUN, ".", "-v", *[a for o in outputs for a in ("-o", o)], env=env),
            lambda: run(root, SPECRUN, "-i", "hi", "-n", "echo", env=env),
            lambda: run(
                root, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", ".", env=env
            ),
            lambda: run(root, SPECRUN, "--debug", "run", "-i", "hi", "-n", "badurl", env=env),
        )
        seen, model_calls = list(server.seen), len(llm.requests)
    return {
        "root": root,
        "runs": {"run": main, "direct": direct, "pytest": tests, "debug": debug},
        "files": [root / o for o in outputs] + [junit],
        "seen": seen,
        "model_calls": model_calls,
    }


def test_the_secrets_reached_the_agents(leaky_run):
    """Not vacuous: ${NAME} was substituted, the agents got the secrets and sent them back."""
    sent = leaky_run["seen"][0]
    assert sent["headers"]["X-Anything"] == SECRETS["ZZ_PLAIN_NAME"]
    assert sent["headers"]["Authorization"] == f"Basic {BASIC}"
    assert "Q4wXp2" in sent["query"] and json.loads(sent["body"])["note"] == SECRETS["JUST_A_VALUE"]
    assert leaky_run["model_calls"] >= 1  # api_base came from ${SOME_BASE}
    main = leaky_run["runs"]["run"]
    assert main.returncode == 1, main.stdout + main.stderr
    stream = (leaky_run["root"] / "out" / "output-report.jsonl").read_text()
    for name in ("ZZ_PLAIN_NAME", "ANY_OLD_SETTING", "JUST_A_VALUE", "MODEL_THING", "PROC_SETTING"):
        assert f"[REDACTED:{name}]" in stream, name  # echoed back, and masked
    assert "HTTP 401 from http://leaky:[REDACTED" in stream
    for line in stream.splitlines():
        json.loads(line)  # masking kept every line valid JSON


def test_no_secret_in_any_output_file(leaky_run):
    for path in leaky_run["files"]:
        assert_no_secret(path.name, path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("which", ["run", "direct", "pytest", "debug"])
def test_no_secret_on_stdout_or_stderr(leaky_run, which):
    proc = leaky_run["runs"][which]
    assert proc.stdout or proc.stderr
    assert_no_secret(f"{which} stdout", proc.stdout)
    assert_no_secret(f"{which} stderr", proc.stderr)


def test_a_debug_traceback_is_masked(leaky_run):
    proc = leaky_run["runs"]["debug"]
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    assert "url must start with http:// or https://, not 'ftp://x:[REDACTED" in proc.stderr, proc.stderr


def test_pytest_reports_the_failures_masked(leaky_run):
    proc = leaky_run["runs"]["pytest"]
    assert "2 failed" in proc.stdout and "2 errors" in proc.stdout and "[REDACTED:" in proc.stdout, proc.stdout[-3000:]


# -- the masking rules -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["DB_PASSWD", "MYPASSWORDFILE", "PASSWORD", "X_SECRET_Y", "SECRETS", "GH_TOKEN"])
def test_secret_names_anywhere_in_the_name(monkeypatch, name):
    monkeypatch.setenv(name, "v@lue-9Tz8Wq")
    assert redact("is v@lue-9Tz8Wq.") == f"is [REDACTED:{name}]."


def test_other_names_and_short_values_are_left_alone(monkeypatch):
    monkeypatch.setenv("KEYBOARD_LAYOUT", "international-9Tz")
    monkeypatch.setenv("DB_PASSWORD", "short")
    assert redact("international-9Tz short") == "international-9Tz short"


def test_every_json_escaping_depth(monkeypatch):
    secret = 'a"b\\Core7Xy\nd/é😀'
    monkeypatch.setenv("NESTED_SECRET", secret)
    text = secret
    for depth in range(6):
        for spelt in (text, json.dumps(text), json.dumps(text, ensure_ascii=False), repr(text), ascii(text)):
            masked = redact(f"<{spelt}>")
            assert "Core7Xy" not in masked and "[REDACTED:NESTED_SECRET]" in masked, (depth, spelt)
        text = json.dumps({"k": text, "depth": depth})


def test_url_passwords_and_registered_values():
    assert redact("see postgres://admin:pa55@db:5432/x") == "see postgres://admin:[REDACTED]@db:5432/x"
    register("Wq8-mid", "SOME_SETTING")  # 7 characters: a known secret is masked from 4
    assert redact('{"v": "Wq8-mid"} Wq8-mid') == '{"v": "[REDACTED:SOME_SETTING]"} [REDACTED:SOME_SETTING]'


def test_masking_json_text_keeps_it_json():
    register("31415926", "PIN")  # a secret that equals a number in the document
    line = json.dumps({"output": "pin 31415926", "duration_ms": 31415926, "31415926": [1]})
    masked = {"output": "pin [REDACTED:PIN]", "duration_ms": 31415926, "[REDACTED:PIN]": [1]}
    assert json.loads(redact_json(line)) == masked


def test_a_long_run_of_backslashes_takes_linear_time(monkeypatch):
    # Escapes may repeat inside a secret's spelling; a run of 400,000 backslashes before its
    # letters must not make every position a long partial match (400,000² steps).
    monkeypatch.setenv("RUN_SECRET", "\\y\\9Tz8Wq")
    text = "\\" * 400_000 + "9Tz8Wq"
    started = time.perf_counter()
    assert redact(text) == text
    assert time.perf_counter() - started < 10


# -- direct mode strips control sequences as run mode does ------------------------------------

HOSTILE = "ok \x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\u2066 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x85end\r"


def test_one_sanitiser_for_the_terminal_and_one_for_reports():
    assert terminal_text(HOSTILE) == "ok evil link end"
    shown = visible(HOSTILE)
    assert "\\x1b]0;pwned\\x07" in shown and "\\x9b31m" in shown and "\\u202e" in shown and "\x1b" not in shown


def test_text_without_control_characters_is_printed_as_is_and_sequences_still_go():
    plain = "naïve ☃ [31m ]0;title \\ 9b\ttab\n" * 1000  # what sequences hold, without their controls
    assert terminal_text(plain) == plain  # found without a control character to start from
    for sequence in ("\x1b[31m", "\x9b2J", "\x1b]0;title\x07", "\x90dcs\x1b\\", "\x1b(B", "\x07", "\u202e"):
        assert terminal_text(f"{plain}a{sequence}b") == f"{plain}ab", repr(sequence)


def test_direct_mode_strips_control_sequences(tmp_path):
    (tmp_path / "hostile_mod.py").write_text(f"def answer(messages, ctx):\n    return {HOSTILE!r}\n")
    (tmp_path / "agent.yaml").write_text("target: python:hostile_mod:answer\n")
    proc = run_cli(["-i", "hi", "-n", "python:hostile_mod:answer"], tmp_path)  # the module is found in the project
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("ok evil link end")
    for bad in ("\x1b", "\x9b", "\x85", "\x07", "\u202e", "\u2066", "pwned", "\r"):
        assert bad not in proc.stdout, repr(bad)
