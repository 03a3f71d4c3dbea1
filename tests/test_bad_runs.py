"""Bad input met by ``specrun run``: agent files, target configs, flags, encodings, plugins.

tests/bad_inputs/ is the suite-file corpus (syntax, schema, semantics, through ``validate``).
This one is what only a run meets. Each entry is a small project: a working base (specrun.yaml,
a python agent, one suite) overlaid with the files of ``tests/bad_runs/NAME/`` when that folder
exists, run with the entry's arguments. Every one must exit 2 before anything runs (no report
is written), with a message naming the file, line and field where there is one (else the flag),
and no traceback.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
import support.cli

from specrun._report.display import shorten, terminal_line, terminal_text

CORPUS = Path(__file__).parent / "bad_runs"
SPECRUN = str(Path(sys.executable).with_name("specrun"))

BASE = {
    "specrun.yaml": "timeout: 5s\n",
    "agent.yaml": "target: python:bot:echo\n",
    "bot.py": "def echo(messages, ctx):\n    return messages[-1].text\n",
    "suite.jsonl": '{"id": "a", "input": "hi"}\n',
}


class Bad(NamedTuple):
    args: list[str]
    expect: list[str]  # substrings of stderr, in order; the first names the file or the flag
    env: dict[str, str] | None = None


SUITE = ["suite.jsonl"]
BAD: dict[str, Bad] = {
    # -- agent files ---------------------------------------------------------------------------
    "unknown_target_type": Bad(
        SUITE,
        [
            "agent.yaml:2:9: unknown target type 'grpc' (known: a2a, http, litellm, mcp, process, python)",
            "(at target.type)",
        ],
    ),
    "agent_unknown_field": Bad(SUITE, ["agent.yaml:2:1: unknown field 'colour'", "(at colour)"]),
    "agent_module_missing": Bad(
        SUITE, ["agent.yaml:1:9: agent 'project': cannot find module 'nobot'", "(at target.function)"]
    ),
    "agent_function_missing": Bad(
        SUITE, ["agent.yaml:1:9: agent 'project': 'bot' has no function 'nope'", "(at target.function)"]
    ),
    "agent_yaml_syntax": Bad(SUITE, ["agent.yaml:1:9: invalid YAML: expected ',' or ']'"]),
    "agent_missing_target": Bad(SUITE, ["agent.yaml:1:1: missing required field 'target'"]),
    "duplicate_agent_id": Bad(
        [*SUITE, "-n", "same"], ["agent id 'same' is defined twice: ", "a/agent.yaml and ", "b/agent.yaml"]
    ),
    # -- target configs ------------------------------------------------------------------------
    "http_missing_env": Bad(
        SUITE,
        [
            "agent.yaml:5:20: agent 'project': environment variable SPECRUN_BAD_RUNS_UNSET_TOKEN is not set",
            "(at target.headers.Authorization)",
        ],
    ),
    "http_url_without_scheme": Bad(
        SUITE, ["agent.yaml:3:8: agent 'project': url must start with http:// or https://", "(at target.url)"]
    ),
    "http_unknown_placeholder": Bad(
        SUITE, ["agent.yaml:5:9: agent 'project': unknown placeholder {{question}}", "(at target.body)"]
    ),
    "http_bad_output_jmespath": Bad(
        SUITE, ["agent.yaml:6:11: agent 'project': invalid JMESPath 'data.[['", "(at target.output)"]
    ),
    "process_command_missing": Bad(
        SUITE, ["agent.yaml:3:12: agent 'project': program 'specrun-bad-runs-no-such-program' not found"]
    ),
    "inline_target_bad": Bad(
        ["suite.json"], ["suite.json:2:13: target 'http target': url: url must start with http://", "(at target)"]
    ),
    # -- project config ------------------------------------------------------------------------
    "config_unknown_field": Bad(SUITE, ["specrun.yaml:2:1: unknown field 'paralel'; did you mean 'parallel'?"]),
    "config_zero_timeout": Bad(SUITE, ["specrun.yaml:1:10: a timeout must be more than 0, not '0s'", "(at timeout)"]),
    # -- which agent ---------------------------------------------------------------------------
    "unknown_agent_flag": Bad([*SUITE, "-n", "nosuch"], ["-n nosuch: unknown agent 'nosuch' (agents under "]),
    "suite_target_unknown": Bad(["suite.yaml"], ["suite.yaml:1:9: unknown agent 'nosuch'", "(at target)"]),
    "case_target_unknown": Bad(SUITE, ["suite.jsonl:2:1: unknown agent 'nosuch'", "(at cases[1].target)"]),
    "simulator_agent_unknown": Bad(
        ["suite.yaml"], ["suite.yaml:2:5: unknown agent 'ghost'", "(at cases[0].simulator.use)"]
    ),
    "simulator_flag_unknown": Bad(["suite.yaml", "--simulator", "nosuch"], ["--simulator nosuch: unknown agent"]),
    "dynamic_without_simulator": Bad(
        ["suite.yaml"], ["suite.yaml:2: dynamic case 'a' has no simulator: add 'simulator' or pass --simulator"]
    ),
    # -- plugins -------------------------------------------------------------------------------
    "blocked_assertion_plugin": Bad(
        SUITE,
        ["suite.jsonl:1:52: unknown assertion type 'regex'", "(at cases[0].assertions[0].type)"],
        {"SPECRUN_DISABLE_PLUGINS": "assertions"},
    ),
    # -- suite content met at load time --------------------------------------------------------
    "missing_attachment": Bad(
        ["suite.yaml"],
        ["suite.yaml:7:19: file not found: file://missing.png", "(at cases[0].input.content[0].source)"],
    ),
    "bad_jmespath": Bad(SUITE, ["suite.jsonl:1:73: invalid path 'answer[?'", "(at cases[0].assertions[0].path)"]),
    "bad_regex": Bad(["suite.yaml"], ["suite.yaml:6:16: invalid regex 'a(b'", "(at cases[0].assertions[0].value)"]),
    # -- encodings -----------------------------------------------------------------------------
    "binary_jsonl": Bad(SUITE, ["suite.jsonl:2:1: binary file (NUL byte found): not a suite"]),
    "utf16": Bad(SUITE, ["suite.jsonl:1:1: file is UTF-16 (byte-order mark found); save it as UTF-8"]),
    "latin1": Bad(SUITE, ["suite.jsonl:2:26: not UTF-8: byte 0xe9 cannot be decoded"]),
    # -- flags ---------------------------------------------------------------------------------
    "invalid_timeout_flag": Bad([*SUITE, "--timeout", "5x"], ["--timeout: invalid duration '5x'"]),
    "zero_timeout_flag": Bad([*SUITE, "--timeout", "0s"], ["--timeout: a timeout must be more than 0, not '0s'"]),
    "ctx_list": Bad([*SUITE, "--ctx", "ctx.yaml"], ["--ctx ctx.yaml: expected a mapping"]),
    "run_bad_regex": Bad([*SUITE, "--run", "a("], ["--run: invalid regex 'a('"]),
    "unknown_output_extension": Bad(
        [*SUITE, "-o", "out.csv"], ["no reporter writes 'out.csv' (known extensions: ", ".jsonl"]
    ),
    "parallel_zero": Bad(
        [*SUITE, "--parallel", "0"], ["Invalid value for '-j' / '--parallel': 0 is not in the range x>=1"]
    ),
    "before_hook_missing": Bad([*SUITE, "--before", "nohooks.BeforeAll"], ["--before: cannot find module 'nohooks'"]),
    "missing_suite_path": Bad(["suitez.jsonl"], ["no such file or directory: suitez.jsonl"]),
}


def project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for file, text in BASE.items():
        (root / file).write_text(text)
    if (CORPUS / name).is_dir():
        shutil.copytree(CORPUS / name, root, dirs_exist_ok=True)
    return root


def specrun(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return support.cli.run_cli(args, root, {**os.environ, **(env or {})})


def test_corpus_folders_all_have_an_entry():
    folders = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    assert folders <= set(BAD), folders - set(BAD)
    assert len(BAD) >= 16


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_run(name: str, tmp_path: Path) -> None:
    bad = BAD[name]
    root = project(tmp_path, name)
    proc = specrun(root, "run", *bad.args, "-o", "out.jsonl", env=bad.env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    position = 0
    for expected in bad.expect:
        found = proc.stderr.find(expected, position)
        assert found >= 0, f"{expected!r} not in (or out of order in):\n{proc.stderr}"
        position = found + len(expected)
    assert not (root / "out.jsonl").exists(), "nothing may run on bad input"
    assert not list(root.glob(".specrun-stream-*")), "no stream file is left behind"


# -- inputs that are accepted, by decision ----------------------------------------------------


def test_utf8_bom_is_accepted_in_suites_and_agent_files(tmp_path: Path) -> None:
    root = project(tmp_path, "none")
    (root / "suite.jsonl").write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "hi"}\n')
    (root / "agent.yaml").write_bytes(b"\xef\xbb\xbftarget: python:bot:echo\n")
    proc = specrun(root, "run", "suite.jsonl", "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stderr


def test_a_5_mb_single_line_record_loads_and_runs(tmp_path: Path) -> None:
    """A huge line is not bad input: it loads, runs and is reported (text reports clip it)."""
    root = project(tmp_path, "none")
    big = "x" * 5_000_000
    case = {"id": "big", "input": big, "assertions": [{"type": "contains", "value": "xxx"}]}
    (root / "suite.jsonl").write_text(json.dumps(case) + "\n")
    started = time.monotonic()
    proc = specrun(root, "run", "suite.jsonl", "-o", "out.jsonl", "-o", "out.md", "-o", "out.html", "-o", "out.xml")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30
    result = json.loads((root / "out.jsonl").read_text().splitlines()[1])
    assert result["status"] == "passed" and result["output"] == big
    assert (root / "out.md").stat().st_size < 500_000  # text reports clip long blocks
    assert "Traceback" not in proc.stderr


def test_the_console_line_of_a_long_text_is_cut_as_if_all_of_it_was_cleaned() -> None:
    """The console cleans only the head of a long text (the 5 MB record above cost 0.3 s to
    clean whole, for the 48 characters shown), exactly when that gives the same line."""

    def whole(text: str, limit: int) -> str:  # what terminal_line stands for
        return shorten(" ".join(terminal_text(text).split()), limit, "...")

    texts = [
        "x" * 20_000,
        "\x1b]0;" + "y" * 20_000 + "\x07shown",  # a window title running past the head
        "\x1b[" + "1;" * 10_000 + "mz",  # a colour code as long
        " \x00\t" * 5_000 + "word",  # a head that cleans down to nothing
    ]
    rng = random.Random(5)
    alphabet = ["a", "b", " ", "\n", "\t", "\x00", "\x07", "\x1b", "[", "]", "m", ";", "1", "\x9b", "\x9c", "\\"]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(4100, 6000))) for _ in range(20)]
    texts += ["".join(rng.choices(alphabet[:6], k=rng.randint(4100, 6000))) for _ in range(30)]  # no sequences
    for text in texts:
        for limit in (40, 300):
            assert terminal_line(text, limit) == whole(text, limit), repr(text[:80])


def test_a_huge_broken_line_is_reported_without_echoing_it(tmp_path: Path) -> None:
    root = project(tmp_path, "none")
    (root / "suite.jsonl").write_text('{"id": "big", "input": "' + "y" * 5_000_000 + "\n")
    proc = specrun(root, "run", "suite.jsonl", "-o", "out.jsonl")
    assert proc.returncode == 2
    assert proc.stderr.startswith("suite.jsonl:1:")
    assert len(proc.stderr) < 2000  # the message does not quote 5 MB back
