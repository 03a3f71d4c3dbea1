"""Trust: nothing a suite, an agent file or an agent's output supplies can hang a run or
validation, exhaust memory, or shift what is read (issue 11.3, issue 18.5, 18.8, 18.9).

- Regexes from suites run on a linear-time engine; what it cannot run is rejected at validation.
- The process target finds its prompt in time linear in the output, and warns when the prompt
  also shows in the middle of the output.
- Alias bombs, deep nesting and huge integers are exit 2 with file:line, fast, in every format.
- Checkpoint validation is linear: ladders and long chains validate at once, cycles still show.
- JSONL lines end at \\n only.

Everything that could hang on a faulty build runs in a child process with a timeout; what
cannot hang runs in process (``run_cli``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from specrun_plugins.targets.process import PROMPT_WINDOW, AgentProcess, ProcessTarget
from support.cli import run_cli

from specrun import Context, Message
from specrun._core.errors import SuiteError
from specrun._load.documents import MAX_DEPTH, DocumentError, parse
from specrun._load.loader import Loader
from specrun._project.plugin_manager import default_plugins

SPECRUN = str(Path(sys.executable).with_name("specrun"))
BOUND = 30.0  # seconds: generous on a loaded machine, where the faulty builds never finish


class Run(NamedTuple):
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float


# The child's peak memory, as its own: a process forked from this one (a pytest worker that
# may have grown to hundreds of MB) starts with the worker's pages, and ru_maxrss keeps that
# figure across exec. So a small launcher forks the command and reports that child's figure.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def run(*args: str, cwd: Path, timeout: float = BOUND, env: dict[str, str] | None = None) -> Run:
    """A child process, timed, with its own peak memory; killed after ``timeout`` seconds."""
    out, err, peak_file = cwd / ".out", cwd / ".err", cwd / ".peak"
    start = time.monotonic()
    with out.open("wb") as o, err.open("wb") as e:
        launcher = [sys.executable, "-c", LAUNCHER, str(peak_file), *args]
        proc = subprocess.Popen(launcher, cwd=cwd, stdout=o, stderr=e, env=env, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=max(timeout - (time.monotonic() - start), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the command too, not only the launcher
            proc.wait()
            code = None
    seconds = time.monotonic() - start
    peak = int(peak_file.read_text()) / 1024 if peak_file.exists() else float("inf")
    return Run(code, out.read_text("utf-8", "replace"), err.read_text("utf-8", "replace"), seconds, peak)


def loader() -> Loader:
    return Loader(default_plugins().registry)


def problems_of(path: Path) -> list[str]:
    """``file:line:col: message`` for each problem ``path`` has; [] when it loads."""
    try:
        loader().load([path])
    except SuiteError as exc:
        return [f"{Path(p.file).name}:{p.line}:{p.column}: {p.message}" for p in exc.problems]
    return []


# -- A. regexes: linear time, or rejected at validation ----------------------------------------

LONG_REPLY = textwrap.dedent(
    """\
    def answer(messages, ctx):
        return "a" * 100_000 + "!"
    """
)


def test_a_catastrophic_regex_against_a_100kb_reply_ends_with_a_verdict(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(LONG_REPLY)
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    (tmp_path / "suite.yaml").write_text(
        "cases:\n"
        "  - id: nested\n    input: hi\n    timeout: 5s\n"
        "    assertions: [{type: regex, value: '^(a+)+$'}]\n"
        "  - id: found\n    input: hi\n"
        "    assertions: [{type: regex, value: '(a|aa)+!$'}]\n"
    )
    result = run(SPECRUN, "suite.yaml", "-o", "out.jsonl", cwd=tmp_path)
    assert result.code == 1, result  # killed (None) on a backtracking engine
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    status = {r["id"]: r["status"] for r in records if r["type"] == "result"}
    assert status == {"nested": "failed", "found": "passed"}


UNSUPPORTED = {
    r"(\w+) \1": "backreferences are not supported",
    r"(?P<w>\w+) (?P=w)": "backreferences are not supported",
    r"price(?= USD)": "lookahead is not supported",
    r"(?<!not )ok": "lookbehind is not supported",
    r"(?>a+)b": "atomic groups are not supported",
    r"a++b": "possessive repeats are not supported",
    r"done\Z": r"write \z for the end of the text",
}


@pytest.mark.parametrize("pattern", sorted(UNSUPPORTED))
def test_what_the_linear_engine_cannot_run_is_rejected_at_validation(tmp_path: Path, pattern: str) -> None:
    suite = tmp_path / "suite.jsonl"
    case = {"id": "c", "input": "hi", "assertions": [{"type": "regex", "value": pattern}]}
    suite.write_text(json.dumps(case) + "\n")
    [problem] = problems_of(suite)
    assert problem.startswith("suite.jsonl:1:") and f"invalid regex {pattern!r}" in problem
    assert UNSUPPORTED[pattern] in problem and "linear time" in problem


def test_the_verbose_flag_is_refused_at_validation(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - id: c\n    input: hi\n    assertions: [{type: regex, value: a, flags: x}]\n")
    [problem] = problems_of(suite)
    assert ":4:" in problem and "flag 'x' (verbose) is not supported" in problem


def test_run_filter_is_linear_and_refuses_lookaround(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(LONG_REPLY)
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    cases = [{"id": "a" * 40 + "!", "input": "hi"}, {"id": "aaa", "input": "hi"}]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    result = run(SPECRUN, "suite.jsonl", "--run", "^(a+)+$", "--dry-run", cwd=tmp_path)
    assert result.code == 0, result  # killed (None): 2**40 ways to split the first id
    assert "[aaa]" in result.stdout and "1 cases x 1 run(s)" in result.stdout
    refused = run_cli(["suite.jsonl", "--run", "(?=a)", "--dry-run"], cwd=tmp_path)  # refused before any matching
    assert refused.returncode == 2 and "--run: invalid regex '(?=a)'" in refused.stderr
    assert "lookahead is not supported" in refused.stderr


def test_json_schema_patterns_refuse_what_cannot_match_in_linear_time(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "cases:\n  - id: c\n    input: hi\n    assertions:\n"
        "      - {type: json_schema, schema: {type: string, pattern: '^(?=a)(a|aa)+$'}}\n"
    )
    [problem] = problems_of(suite)
    assert ":5:" in problem and "no lookaround or backreferences" in problem


# -- A. the process target's prompt --------------------------------------------------------------

PROMPTLESS = textwrap.dedent(
    """\
    import sys
    chunk = "x(" * 2048  # every '(' opens the default prompt's group: a backtracking engine
    for _ in range(150):  # searches the whole output from each of them, after every read
        sys.stdout.write(chunk)
        sys.stdout.flush()
    sys.stdout.write("\\n(bot) >> ")
    sys.stdout.flush()
    for line in sys.stdin:
        sys.stdout.write("pong\\n(bot) >> ")
        sys.stdout.flush()
    """
)

DRIVE = textwrap.dedent(
    """\
    import asyncio, sys, time
    from specrun_plugins.targets.process import AgentProcess

    async def main():
        agent = AgentProcess([sys.executable, "agent.py"], read_timeout=600)
        start = time.monotonic()
        banner = await agent.start()
        reply = await agent.ask("ping")
        await agent.close()
        print(len(banner), reply, agent.agent_name, round(time.monotonic() - start, 2))

    asyncio.run(main())
    """
)


def test_the_prompt_search_is_linear_in_a_large_promptless_output(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(PROMPTLESS)
    (tmp_path / "drive.py").write_text(DRIVE)
    result = run(sys.executable, "drive.py", cwd=tmp_path)
    assert result.code == 0, result  # killed (None) when the search is quadratic or worse
    banner_length, reply, name, _ = result.stdout.split()
    assert int(banner_length) > 500_000 and reply == "pong" and name == "bot"


def searched(prompt: str, *pieces: str) -> tuple[str | None, AgentProcess]:
    """The reply found after feeding ``pieces`` as the agent's successive reads."""
    agent = AgentProcess(["true"], prompt=prompt)
    reply = None
    for piece in pieces:
        reply = agent._search(piece)
        if reply is not None:
            break
    return reply, agent


def test_a_prompt_split_across_reads_far_into_the_output_is_found() -> None:
    text = "y" * (3 * PROMPT_WINDOW)
    reply, agent = searched(r"\(([^)]*)\) >> $", text[:5000], text[5000:], "\n(bo", "t) >", "> ")
    assert reply == text and agent.agent_name == "bot" and agent.warnings == []


def test_line_anchors_see_the_text_before_the_window() -> None:
    head = "z" * (2 * PROMPT_WINDOW)
    assert searched(r"(?m)^> $", head, "a> ")[0] is None  # not at a line start: no prompt
    assert searched(r"(?m)^> $", head, "\n> ")[0] == head
    assert searched(r"^> $", head, "> ")[0] is None  # ^ is the start of the output, far back


SHIFTING = textwrap.dedent(
    """\
    import sys
    sys.stdout.write("hello\\nbot> ")
    sys.stdout.flush()
    for line in sys.stdin:
        sys.stdout.write("part one bot> part two\\nbot> ")  # the prompt inside a reply
        sys.stdout.flush()
    """
)


async def test_a_prompt_in_mid_output_is_a_warning_on_the_response(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SHIFTING)
    target = ProcessTarget({"type": "process", "command": [sys.executable, "agent.py"], "prompt": "bot> "}, tmp_path)
    session = target.session(Context(case_id="c"))
    try:
        first = await session.send([Message("user", "one")])
        assert first.content == "part one"
        [warning] = first.warnings
        assert "prompt also appears in the middle" in warning and "part two" in warning
        assert "shifted by a turn" in warning
    finally:
        await session.close()


PROMPT_LIKE_LINE = textwrap.dedent(
    """\
    import sys
    sys.stdout.write("(bot) >> ")
    sys.stdout.flush()
    for line in sys.stdin:
        sys.stdout.write("try typing at (bot) >> \\nlike that\\n(bot) >> ")
        sys.stdout.flush()
    """
)


def test_a_prompt_like_line_is_a_warning_on_the_console_and_the_record(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(PROMPT_LIKE_LINE)
    command = json.dumps([sys.executable, "agent.py"])
    (tmp_path / "agent.yaml").write_text(f"target: {{type: process, command: {command}}}\n")
    (tmp_path / "suite.yaml").write_text("- {id: c, input: hi, assertions: [{type: contains, value: like}]}\n")
    result = run_cli(["suite.yaml", "-o", "out.jsonl"], cwd=tmp_path)
    assert result.returncode == 0, result
    assert "warning: the prompt also appears in the middle" in result.stdout
    [record] = [r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines()) if r["type"] == "result"]
    assert record["output"] == "try typing at (bot) >> \nlike that"
    assert "(bot) >> " in record["warnings"][0]


# -- B. documents: alias bombs, deep nesting, huge integers ----------------------------------------

BOMB = "\n".join(
    ['lol: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
)


BOMB_AT = {
    "suite.yaml": "cases:\n  - id: a\n    input: hi\n    metadata: {laughs: *a8}\n",
    "agent.yaml": "target: python:bot:answer\nlaughs: *a8\n",
    "specrun.yaml": "timeout: 10s\nlaughs: *a8\n",
}


@pytest.mark.parametrize("where", sorted(BOMB_AT))
def test_an_alias_bomb_is_rejected_at_once_with_bounded_memory(tmp_path: Path, where: str) -> None:
    (tmp_path / "suite.yaml").write_text("cases:\n  - id: a\n    input: hi\n")
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / where).write_text(BOMB + "\n" + BOMB_AT[where])  # 387 million values expanded
    result = run(SPECRUN, "validate", "suite.yaml", cwd=tmp_path)
    assert result.code == 2, result  # killed (None) at the timeout before, gigabytes in
    assert f"{where}:6:10: aliases expand to more than 100,000 values" in result.stderr
    assert result.seconds < BOUND and result.peak_mb < 500


NESTED = 100_000

# (text, where its problem is) by file name
TOO_DEEP_OR_TOO_BIG = {
    "deep.json": ('{"cases": [{"id": "a", "input": "hi", "metadata": ' + "[" * NESTED + "]" * NESTED + "}]}", "1:"),
    "deep.jsonl": ('{"id": "a", "input": "hi", "metadata": ' + "[" * NESTED + "]" * NESTED + "}", "1:"),
    "deep.yaml": ("cases:\n  - id: a\n    input: hi\n    metadata: " + "[" * NESTED + "]" * NESTED, "4:"),
    "big.json": ('[{"id": "a", "input": "hi", "metadata": {"n": ' + "7" * NESTED + "}}]", "1:47:"),
    "big.jsonl": ('{"id": "a", "input": "hi", "metadata": {"n": -' + "7" * NESTED + "}}", "1:46:"),
    "big.yaml": ("cases:\n  - id: a\n    input: hi\n    metadata: {n: " + "7" * NESTED + "}", "4:19:"),
    "hex.yaml": ("cases:\n  - id: a\n    input: hi\n    metadata: {n: 0x" + "f" * 5000 + "}", "4:19:"),
}


@pytest.fixture(scope="module")
def too_deep_or_too_big(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One ``specrun validate`` of all the files: each is read on its own, and every file's
    problems are listed (a process each cost seconds)."""
    folder = tmp_path_factory.mktemp("limits")
    for name, (text, _) in TOO_DEEP_OR_TOO_BIG.items():
        (folder / name).write_text(text + "\n")
    return run(SPECRUN, "validate", *TOO_DEEP_OR_TOO_BIG, cwd=folder)


@pytest.mark.parametrize("name", list(TOO_DEEP_OR_TOO_BIG))
def test_deep_nesting_and_huge_integers_are_exit_2_with_a_position(too_deep_or_too_big: Run, name: str) -> None:
    result, where = too_deep_or_too_big, TOO_DEEP_OR_TOO_BIG[name][1]
    assert result.code == 2, result  # exit 3, "internal error", on a build without the limits
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    [problem] = [line for line in result.stderr.splitlines() if line.startswith(f"{name}:")]
    assert problem.startswith(f"{name}:{where}"), result.stderr
    assert "nested more than 100" in problem or "integer too large" in problem


def test_the_depth_limit_is_exact(tmp_path: Path) -> None:
    def nested(levels: int) -> str:  # the document, its cases list and the case are 3 levels
        inner = levels - 3
        return '{"cases": [{"id": "a", "input": "hi", "metadata": ' + "[" * inner + "]" * inner + "}]}"

    for suffix in (".json", ".yaml"):  # JSON is YAML too: the same text, read both ways
        ok, deep = tmp_path / f"ok{suffix}", tmp_path / f"deep{suffix}"
        ok.write_text(nested(MAX_DEPTH))
        deep.write_text(nested(MAX_DEPTH + 1))
        assert parse(ok, ok.name).cases
        with pytest.raises(DocumentError, match=f"nested more than {MAX_DEPTH}"):
            parse(deep, deep.name)


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - &case\n    id: a\n    input: hi\n    metadata: {again: *case}\n")
    assert problems_of(suite) == ["suite.yaml:5:23: alias *case is inside the value it names (a cycle)"]


def test_aliases_used_as_intended_still_load(tmp_path: Path) -> None:
    """One anchored mapping of 41 values shared by 2,500 cases: 102,459 values through aliases,
    past the 100,000 floor but within ten times what the file writes out (15,000)."""
    shared = ", ".join(f"k{i}: v{i}" for i in range(20))
    lines = ["cases:", "  - id: c0", "    input: hi", f"    metadata: &shared {{{shared}}}"]
    for i in range(1, 2500):
        lines += [f"  - id: c{i}", f"    input: question {i}", "    metadata: *shared"]
    suite = tmp_path / "suite.yaml"
    suite.write_text("\n".join(lines) + "\n")
    assert problems_of(suite) == []


# -- C. validation is linear -------------------------------------------------------------------


def checkpoints(count: int, after: int) -> list[dict[str, object]]:
    """``count`` checkpoints, each after the ``after`` ones before it (1: a chain, 2: a ladder)."""
    return [
        {
            "id": f"c{i}",
            "assertion": {"type": "contains", "value": str(i)},
            **({"after": [f"c{j}" for j in range(max(0, i - after), i)]} if i else {}),
        }
        for i in range(count)
    ]


LADDERS = [(40, 2), (2000, 2), (5000, 1)]


@pytest.fixture(scope="module")
def ladders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """One ``specrun validate`` of a file for each ladder or chain (a process each cost seconds)."""
    folder = tmp_path_factory.mktemp("ladders")
    for count, after in LADDERS:
        case = {"id": "dyn", "checkpoints": checkpoints(count, after)}
        (folder / f"suite-{count}-{after}.jsonl").write_text(json.dumps(case) + "\n")
    return folder, run(SPECRUN, "validate", *sorted(p.name for p in folder.glob("*.jsonl")), cwd=folder)


@pytest.mark.parametrize(("count", "after"), LADDERS)
def test_ladders_and_long_chains_of_checkpoints_validate_at_once(
    ladders: tuple[Path, Run], count: int, after: int
) -> None:
    folder, result = ladders
    assert (folder / f"suite-{count}-{after}.jsonl").is_file()  # validated with the others
    assert result.code == 0, result  # killed (None) at the timeout before: no visited set
    assert f"ok: {len(LADDERS)} cases in {len(LADDERS)} suite files" in result.stdout, result


def test_pytest_collects_a_ladder_at_once(tmp_path: Path) -> None:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'x'\n")
    case = {"id": "dyn", "simulator": {"type": "scripted", "turns": ["hi"]}, "checkpoints": checkpoints(2000, 2)}
    (tmp_path / "suite.jsonl").write_text(json.dumps(case) + "\n")
    result = run(sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert result.code == 0, result
    assert "suite.jsonl::dyn" in result.stdout


def test_many_cases_and_many_unknown_names_validate_at_once(tmp_path: Path) -> None:
    check = {"type": "contains", "value": "x"}
    cases = [{"id": f"case-{i}", "input": "hi", "assertions": [check]} for i in range(5000)]
    cps = [{"id": f"c{i}", "assertion": {"type": "contains", "value": "x"}, "after": [f"zz{i}"]} for i in range(2000)]
    cases.append({"id": "dyn", "checkpoints": cps})
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    result = run(SPECRUN, "validate", "suite.jsonl", cwd=tmp_path)
    assert result.code == 2, result
    assert result.stderr.count("comes after unknown checkpoint") == 2000
    assert "(known: c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, ... (2000 in all))" in result.stderr


def test_real_cycles_are_still_reported_once_each_with_their_position(tmp_path: Path) -> None:
    chain = checkpoints(5000, 1)
    chain[0]["after"] = ["c4999"]  # the whole chain is one cycle
    pair = [
        {"id": "x", "assertion": {"type": "contains", "value": "x"}, "after": ["y"]},
        {"id": "y", "assertion": {"type": "contains", "value": "y"}, "after": ["x"]},
        {"id": "self", "assertion": {"type": "contains", "value": "s"}, "after": ["self"]},
        {"id": "downstream", "assertion": {"type": "contains", "value": "d"}, "after": ["y"]},
    ]
    suite = tmp_path / "suite.jsonl"
    suite.write_text(
        json.dumps({"id": "ok", "input": "hi"})
        + "\n"
        + json.dumps({"id": "long", "checkpoints": chain})
        + "\n"
        + json.dumps({"id": "small", "checkpoints": pair})
        + "\n"
    )
    result = run(SPECRUN, "validate", "suite.jsonl", cwd=tmp_path)
    assert result.code == 2, result  # killed (None) at the timeout before
    found = [line for line in result.stderr.splitlines() if "cycle" in line]
    assert len(found) == 3, result.stderr
    long, two, alone = found
    assert long.startswith("suite.jsonl:2:") and "checkpoints form a cycle: c0 → c4999 → c4998" in long
    assert long.endswith("→ c1 → c0 (at cases[1].checkpoints[0].after)")
    assert two.startswith("suite.jsonl:3:") and two.endswith("x → y → x (at cases[2].checkpoints[0].after)")
    assert alone.startswith("suite.jsonl:3:") and alone.endswith("self → self (at cases[2].checkpoints[2].after)")


# -- D. JSONL lines end at \n only -------------------------------------------------------------

SEPARATORS = "one\u2028two\u2029three\u0085four"


def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(
        json.dumps({"id": "a", "input": SEPARATORS}, ensure_ascii=False)
        + "\r\n"
        + json.dumps({"id": "b", "input": SEPARATORS, "timeout": "soon"}, ensure_ascii=False)
        + "\n",
        "utf-8",
        newline="",
    )
    found = problems_of(suite)
    assert len(found) == 1 and found[0].startswith("suite.jsonl:2:") and "invalid duration 'soon'" in found[0]
    column = json.dumps({"id": "b", "input": SEPARATORS, "timeout": "soon"}, ensure_ascii=False).index('"soon"') + 1
    assert found[0].startswith(f"suite.jsonl:2:{column}:"), found
    suite.write_text(json.dumps({"id": "a", "input": SEPARATORS}, ensure_ascii=False) + "\n", "utf-8")
    [loaded] = loader().load([suite])
    assert loaded.cases[0].input[0].content == SEPARATORS


@pytest.mark.parametrize("char", ["\x1c", "\x1d", "\x1e", "\x0b", "\x0c"])
def test_a_raw_control_character_is_an_error_on_its_own_line(tmp_path: Path, char: str) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(f'{{"id": "a", "input": "x{char}y"}}\n{{"id": "b", "input": oops}}\n', "utf-8", newline="")
    found = problems_of(suite)
    assert [p.split(": ")[0] for p in found] == ["suite.jsonl:1:24", "suite.jsonl:2:22"], found


GENERATOR = textwrap.dedent(
    """\
    def cases():
        return [{"id": "sep", "input": "one\\u2028two\\u2029three\\u0085four\\x1cfive\\x0bsix\\x0cseven"}]
    """
)


def test_saved_jsonl_validates_and_keeps_every_character(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text(GENERATOR)
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return 'a\\u2028b\\u0085c'\n")
    (tmp_path / "agent.yaml").write_text("target: python:bot:answer\n")
    saved = run_cli(["scripts:gen.cases", "--save", "out.jsonl", "--dry-run"], cwd=tmp_path)
    assert saved.returncode == 0, saved
    checked = run_cli(["validate", "out.jsonl"], cwd=tmp_path)
    assert checked.returncode == 0, checked
    [suite] = loader().load([tmp_path / "out.jsonl"])
    assert suite.cases[0].input[0].content == "one\u2028two\u2029three\u0085four\x1cfive\x0bsix\x0cseven"
    direct = run_cli(["-i", "hello"], cwd=tmp_path)  # the stream is JSONL too
    assert direct.returncode == 0, direct
    # read back whole from the stream; the terminal gets it without the C1 control U+0085 (11.5)
    assert "a\u2028bc" in direct.stdout
