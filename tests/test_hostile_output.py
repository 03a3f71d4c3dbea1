"""Agent output is data: it cannot style the console or inject markup into any report, and
secret environment values never reach an output, the console or stderr.

One run of agents whose output, error message and tool-call arguments carry rich markup, ANSI
escapes, HTML, Markdown, XML-breaking text and the values of secret-looking variables, written
to every format at once; plus a judge whose provider error echoes the API key.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from junitparser import JUnitXml
from markdown_it import MarkdownIt
from support.cli import at_once
from support.llm_server import LLMServer

SPECRUN = str(Path(sys.executable).with_name("specrun"))
FORMATS = ("out.jsonl", "out.json", "out.md", "out.html", "out.xml")

SECRETS = {
    "OPENAI_API_KEY": "sk-test-" + "Zq8xW3vN5tR7yU1iO9pA2sD4fG6hJ0kL",
    "MY_SERVICE_TOKEN": "svc-tok-7f3a9b2c8d1e4f5a",
    "DB_PASSWORD": 'pa"ss\\wo<rd>&99',  # a quote, a backslash, HTML: every escaping differs
}

ANSI = ("\x1b[31mRED\x1b[0m", "\x1b[2J", "\x1b]8;;http://evil.example\x07")
HOSTILE = (
    "[red]x[/red] [bold magenta]styled[/] [link=http://evil.example]click[/link]\n"
    + " ".join(ANSI)
    + '\n<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2">\n'
    "| col | col2 |\n|---|---|\n| a | b |\n"
    "```\nfenced\n```\n# heading\n"
    "]]> <![CDATA[ x ]]> \x00 \x1b &amp; &lt; end"
)

AGENT = f"""
import os
from specrun import Response, ToolCall

HOSTILE = {HOSTILE!r}

def secrets():
    return " ".join(os.environ[k] for k in {sorted(SECRETS)!r})

def hostile(messages, ctx):
    return HOSTILE

def leaky(messages, ctx):
    return "my keys: " + secrets()

def leaky_crash(messages, ctx):
    raise RuntimeError("cannot connect with " + secrets() + " " + HOSTILE)

def leaky_tool(messages, ctx):
    return Response(content="calling", tool_calls=[ToolCall("login", {{"password": secrets(), "note": HOSTILE}})])
"""

CASES = [
    {
        "id": "hostile",
        "name": "<script>alert(1)</script> [bold]name[/bold]",
        "input": "hi",
        "assertions": [{"type": "equals", "value": "something else"}],
    },
    {
        "id": "leaky",
        "input": "hi",
        "target": "python:bot:leaky",
        "assertions": [{"type": "contains", "value": "nope"}],
    },
    {"id": "leaky-crash", "input": "hi", "target": "python:bot:leaky_crash"},
    {
        "id": "leaky-tool",
        "input": "hi",
        "target": "python:bot:leaky_tool",
        "assertions": [{"type": "tool_called", "name": "logout"}],
    },
    {
        "id": "judged",
        "input": "hi",
        "target": "python:bot:leaky",
        "assertions": [{"type": "llm", "criteria": "Says hi"}],
    },
]


def provider(body: dict) -> dict:
    """The judge's provider rejects the key, quoting it back (as real providers do)."""
    if body.get("model") == "judge-model":
        message = f"Incorrect API key provided: {SECRETS['OPENAI_API_KEY']}. Bearer {SECRETS['MY_SERVICE_TOKEN']}"
        return {"status": 401, "body": json.dumps({"error": {"message": message, "type": "invalid_request_error"}})}
    return {"content": "ok"}


class Run:
    def __init__(self, root: Path, proc: subprocess.CompletedProcess):
        self.root = root
        self.proc = proc

    def text(self, name: str) -> str:
        return (self.root / name).read_text("utf-8")


def _run(root: Path, server: LLMServer, *extra: str, env: dict[str, str] | None = None) -> Run:
    root.mkdir()
    (root / "specrun.yaml").write_text(
        f"timeout: 20s\nmodel: openai/judge-model\nretries: 0\nmodel_params:\n  api_base: {server.base_url}\n"
    )
    (root / "agent.yaml").write_text("target: python:bot:hostile\n")
    (root / "bot.py").write_text(AGENT)
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (root / "ctx.json").write_text(json.dumps({"db": SECRETS["DB_PASSWORD"]}))
    args = [SPECRUN, "suite.jsonl", "-v", "--no-cache", "--ctx", "ctx.json", "-u", SECRETS["MY_SERVICE_TOKEN"]]
    for name in FORMATS:
        args += ["-o", name]
    environ = {**os.environ, **SECRETS, **(env or {})}
    proc = subprocess.run([*args, *extra], cwd=root, capture_output=True, text=True, timeout=120, env=environ)
    return Run(root, proc)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    colours = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "200"}
    with LLMServer(provider) as server:  # two projects, two processes: run side by side
        plain, coloured = at_once(
            lambda: _run(base / "plain", server), lambda: _run(base / "coloured", server, env=colours)
        )
    return plain, coloured


def test_the_run_completes_with_every_case_reported(runs):
    for run in runs:
        assert run.proc.returncode == 1, run.proc.stderr
        lines = [json.loads(line) for line in run.text("out.jsonl").splitlines()]
        results = {r["id"]: r for r in lines if r["type"] == "result"}
        assert set(results) == {c["id"] for c in CASES}
        assert results["hostile"]["status"] == "failed"
        assert results["leaky-crash"]["status"] == "error"
        assert results["judged"]["status"] == "error"
        assert "Traceback" not in run.proc.stderr


# -- markup -----------------------------------------------------------------------------------


def test_console_prints_markup_literally_and_no_agent_escape_codes(runs):
    for run in runs:
        out = run.proc.stdout
        assert "[red]x[/red]" in out and "[bold magenta]styled[/]" in out and "[link=http://evil.example]" in out
        assert "<script>window.__pwned=1</script>" in out
        for code in ANSI:
            assert code not in out
        assert "\x00" not in out and "\x07" not in out
        assert "http://evil.example\x1b" not in out and "\x1b]8;" not in out  # no hyperlink made from agent text
    coloured = runs[1].proc.stdout
    assert "\x1b[" in coloured  # the coloured run does style its own text


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def test_html_holds_the_payload_as_escaped_text_only(runs):
    page = runs[0].text("out.html")
    parser = _Tags()
    parser.feed(page)
    names = [tag for tag, _ in parser.tags]
    assert names.count("script") == 1 and "__pwned" not in "".join(parser.scripts)  # the page's own filter
    assert "img" not in names
    assert not [(tag, a) for tag, attrs in parser.tags for a, _ in attrs if a.startswith("on")]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page
    assert "<script>window" not in page and 'onerror="window' not in page


def test_markdown_renders_inert(runs):
    text = runs[0].text("out.md")
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    assert not re.search(r"<(script|img)\b", rendered)
    assert 'onerror="window' not in rendered
    assert len(re.findall(r"<h1>", rendered)) == 1  # the report's title; the agent's "# heading" is not one
    assert "<h1>heading" not in rendered and "<h2>heading" not in rendered
    for table in re.findall(r"<table>.*?</table>", rendered, re.S):  # "| col |" adds no column
        widths = {row.count("<td") + row.count("<th") for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table
    # Multi-line agent text sits in code blocks, where it is shown, not interpreted.
    blocks = "".join(re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.S))
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in blocks
    assert "# heading" in blocks and "| col | col2 |" in blocks and "```\nfenced\n```" in blocks


def test_junit_parses_and_keeps_the_text_escaped(runs):
    path = runs[0].root / "out.xml"
    suites = JUnitXml.fromfile(str(path))
    cases = {case.name: case for suite in suites for case in suite}
    assert set(cases) == {c["id"] for c in CASES}
    root = ET.parse(path).getroot()
    hostile = next(tc for tc in root.iter("testcase") if tc.get("name") == "hostile")
    text = "".join(hostile.itertext()) + "".join(v for el in hostile.iter() for v in el.attrib.values())
    assert "<script>window.__pwned=1</script>" in text  # as text, after XML unescaping
    assert "]]> <![CDATA[ x ]]>" in text
    assert "\x00" not in text and "\x1b" not in text
    raw = path.read_text("utf-8")
    assert "<script>" not in raw and "&lt;script&gt;" in raw


def test_json_reports_keep_the_payload_as_data(runs):
    report = json.loads(runs[0].text("out.json"))
    hostile = next(r for r in report["results"] if r["id"] == "hostile")
    assert hostile["output"].startswith("[red]x[/red]")
    assert ANSI[0] in hostile["output"] and "\x00" in hostile["output"]  # data, escaped by JSON itself


# -- secrets ----------------------------------------------------------------------------------


def _spellings(value: str) -> set[str]:
    """How a value could appear in a file: as is, JSON-, HTML- or XML-escaped, or a repr."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1]}
    return forms | {html.escape(f, quote=q) for f in forms for q in (True, False)}


@pytest.mark.parametrize("where", [*FORMATS, "console", "stderr"])
def test_no_secret_value_anywhere(runs, where):
    for run in runs:
        streams = {"console": run.proc.stdout, "stderr": run.proc.stderr}
        text = streams[where] if where in streams else run.text(where)
        for name, value in SECRETS.items():
            for form in _spellings(value):
                assert form not in text, f"{name} leaks into {where} as {form!r}"


@pytest.mark.parametrize("where", [*FORMATS, "console"])
def test_redaction_markers_replace_the_values(runs, where):
    run = runs[0]
    text = run.proc.stdout if where == "console" else run.text(where)
    for name in SECRETS:
        assert f"[REDACTED:{name}]" in text, f"{name} in {where}"


def test_report_environment_metadata_and_judge_error_are_clean(runs):
    report = json.loads(runs[0].text("out.json"))
    assert report["environment"]["user_id"] == "[REDACTED:MY_SERVICE_TOKEN]"
    judged = next(r for r in report["results"] if r["id"] == "judged")
    message = judged["assertions"][0]["message"]
    assert "HTTP 401" in message or "AuthenticationError" in message or "401" in message, message
    assert "[REDACTED" in message
    dumped = json.dumps(report)
    assert SECRETS["OPENAI_API_KEY"] not in dumped and SECRETS["MY_SERVICE_TOKEN"] not in dumped


def test_usage_errors_quoting_a_secret_are_masked(tmp_path):
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi"}\n')

    def usage_error(flag: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SPECRUN, "suite.jsonl", flag, SECRETS["DB_PASSWORD"]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **SECRETS},
        )

    flags = ("--parallel", "--timeout", "--ctx")
    for proc in at_once(*[lambda flag=flag: usage_error(flag) for flag in flags]):
        assert proc.returncode == 2, proc.stderr
        assert "[REDACTED:DB_PASSWORD]" in proc.stderr, proc.stderr
        assert not any(form in proc.stderr for form in _spellings(SECRETS["DB_PASSWORD"]))
