"""The bad-input corpus: every file under tests/bad_inputs/ is rejected precisely.

Each file is validated with the real ``specrun`` console script, as a user would run it: exit 2,
one ``FILE:LINE:COL: message (at FIELD)`` line per problem, and never a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
from support.cli import run_cli
from support.missing import missing

from specrun._load.loader import find_suite_files
from specrun._project.plugin_manager import default_plugins

CORPUS = Path(__file__).parent / "bad_inputs"


class Expect(NamedTuple):
    line: int
    column: int | None  # None: any column
    message: str  # a substring of the message
    field: str | None  # the "(at FIELD)" pointer; None: the problem is about the whole file


E = Expect

# file -> every problem it must produce, in the order printed (by line, then column).
EXPECTED: dict[str, list[Expect]] = {
    # -- reading the file ----------------------------------------------------------------------
    "empty.jsonl": [E(1, 1, "empty file", None)],
    "comments_only.jsonl": [E(1, 1, "no cases: every line is blank or a // comment", None)],
    "latin1.jsonl": [E(2, 12, "not UTF-8: byte 0xe9 cannot be decoded", None)],
    "utf16_bom.json": [E(1, 1, "file is UTF-16 (byte-order mark found)", None)],
    "binary_nul.jsonl": [E(2, 1, "binary file (NUL byte found)", None)],
    # -- syntax --------------------------------------------------------------------------------
    "broken_json_line3.jsonl": [E(3, 34, "invalid JSON: Expecting ',' delimiter", None)],
    "broken_json.json": [E(5, 5, "invalid JSON: Expecting ',' delimiter", None)],
    # V2's cases spread over lines: each broken value once, at its place; the others still read
    "jsonl_spread_broken.jsonl": [
        E(6, 1, "invalid JSON: Expecting ',' delimiter", None),
        E(16, 52, "invalid JSON: Expecting ',' delimiter", None),
        E(17, 1, "invalid JSON: { is never closed: the value that starts here has no end", None),
    ],
    "jsonl_spread_limits.jsonl": [
        E(5, 21, "integer too large: more than 1000 digits", None),
        E(9, 111, "nested more than 100 lists or mappings deep", None),
    ],
    "jsonl_spread_fields.jsonl": [
        E(2, 65, "unknown assertion type 'contians'", "cases[0].assertions[0].type"),
        E(9, 34, "invalid regex '(unclosed'", "cases[1].assertions[1].pattern"),
    ],
    "tab_indent.yaml": [E(4, 1, "YAML indentation must use spaces, not tabs", None)],
    "yaml_syntax.yaml": [E(3, 9, "invalid YAML: expected ',' or ']'", None)],
    "yaml_duplicate_key.yaml": [E(3, 3, 'found duplicate key "input"', None)],
    # a value JSON has no form for reached agents and judges as Python's repr ("set(...)", "b'...'")
    # "must be a number, not a number": YAML's .nan is a float that JSON has no form for
    "limit_nan.yaml": [E(2, 39, "must be a number, not nan (JSON has no such number)", "cases[0].limits.cost")],
    "yaml_set.yaml": [E(3, 12, "a !!set is not JSON data: write a list or a string", "cases[0].input")],
    "yaml_binary.yaml": [E(4, 22, "a !!binary value (bytes) is not JSON data", "cases[0].metadata.blob")],
    # -- limits: nothing a file holds may exhaust memory, time or the stack -----------------------
    "alias_bomb.yaml": [E(6, 10, "aliases expand to more than 100,000 values", None)],
    "alias_cycle.yaml": [E(5, 23, "alias *case is inside the value it names (a cycle)", None)],
    "deep_nesting.json": [E(2, 117, "nested more than 100 lists or mappings deep", None)],
    "deep_nesting.jsonl": [E(2, 142, "nested more than 100 lists or mappings deep", None)],
    "deep_nesting.yaml": [E(4, 115, "nested more than 100 lists or mappings deep", None)],
    "huge_integer.json": [E(2, 50, "integer too large: more than 1000 digits", None)],
    "huge_integer.jsonl": [E(1, 48, "integer too large: more than 1000 digits", None)],
    "huge_integer.yaml": [E(5, 10, "integer too large: more than 1000 digits", None)],
    # JSONL lines end at \n only: U+2028, U+0085 and \f in line 1 and 2 do not shift the lines
    "jsonl_line_separators.jsonl": [
        E(2, 27, "invalid JSON: Invalid control character at", None),
        E(3, 22, "invalid JSON: Expecting value", None),
    ],
    # -- document shape ------------------------------------------------------------------------
    "scalar_document.yaml": [E(1, 1, "must be a list of cases or a mapping with 'cases', not a string", None)],
    "mapping_without_cases.json": [E(1, 1, "missing required field 'cases'", None)],
    "mapping_unknown_key.yaml": [E(2, 1, "unknown field 'casez'; did you mean 'cases'?", "casez")],
    "list_form_error.json": [E(3, 38, "cases[1].skip must be a boolean or a string, not a number", "cases[1].skip")],
    "case_not_mapping.jsonl": [E(2, 1, "the case must be a mapping, not a list", "cases[1]")],
    # -- case fields ---------------------------------------------------------------------------
    "wrong_type.jsonl": [
        E(
            2,
            33,
            "input must be text, a message {role, content}, a list of messages or a tool call {tool, arguments},"
            " not a number",
            "cases[1].input",
        )
    ],
    "unknown_field.yaml": [E(5, 3, "unknown field 'colour' (allowed: ", "cases[1].colour")],
    "missing_id.jsonl": [E(2, 1, "missing required field 'id'", "cases[1]")],
    "missing_input.jsonl": [E(1, 1, "missing required field 'input'", "cases[0]")],
    "duplicate_id.yaml": [E(5, 7, "duplicate case id 'same' (first at line 1)", "cases[2].id")],
    "min_pass_rate_out_of_range.jsonl": [E(1, 49, "150 is greater than the maximum of 100", "cases[0].min_pass_rate")],
    "bad_duration.yaml": [E(3, 12, "invalid duration '5 minutes' (use e.g. 30s", "cases[0].timeout")],
    "duration_missing_unit.jsonl": [E(1, 58, "invalid duration '1m30'", "cases[0].timeout")],
    "zero_timeout.yaml": [E(3, 12, "a timeout must be more than 0, not '0s'", "cases[0].timeout")],
    "defaults_unknown_field.yaml": [E(3, 3, "unknown field 'userr'; did you mean 'user'?", "defaults.userr")],
    # -- input ---------------------------------------------------------------------------------
    "unknown_role.jsonl": [
        E(1, 73, "unknown message role 'robot' (known: user, assistant, system, tool)", "cases[0].input[1].role")
    ],
    "unknown_content_part.yaml": [
        E(
            7,
            15,
            "unknown content part type 'video' (known: text, image, audio, file)",
            "cases[0].input.content[1].type",
        )
    ],
    "missing_attachment.yaml": [
        E(8, 17, "file not found: file://images/missing-cat.png", "cases[0].input.content[1].source")
    ],
    "empty_input_list.jsonl": [E(1, 28, "[] has less than 1 item", "cases[0].input")],
    "message_without_content.yaml": [
        E(3, 7, "missing required field 'content'", "cases[0].input[0]"),
        E(4, 7, "unknown field 'text' (allowed: content, ", "cases[0].input[0].text"),
    ],
    # -- assertions ----------------------------------------------------------------------------
    "unknown_assertion_type.yaml": [
        E(7, 15, "unknown assertion type 'containz'; did you mean 'contains'?", "cases[0].assertions[1].type")
    ],
    "misspelt_parameter.jsonl": [
        E(1, 46, "missing required field 'value'", "cases[0].assertions[0]"),
        E(1, 67, "unknown field 'valeu'; did you mean 'value'?", "cases[0].assertions[0].valeu"),
    ],
    "assert_and_assertions.jsonl": [
        E(1, 41, "use either 'assertions' or its alias 'assert', not both", "cases[0].assert")
    ],
    "assertion_as_string.yaml": [E(4, 7, "assertions[0] must be a mapping, not a string", "cases[0].assertions[0]")],
    "negate_not_boolean.json": [E(6, 71, "negate must be a boolean, not a string", "cases[0].assertions[0].negate")],
    "bad_regex.yaml": [E(5, 14, "invalid regex 'ORD-(\\\\d+': missing )", "cases[0].assertions[0].value")],
    "defaults_bad_regex.yaml": [E(5, 14, "invalid regex '[unclosed'", "defaults.assertions[0].value")],
    "regex_backreference.yaml": [
        E(
            6,
            16,
            "invalid regex '(\\\\w+) \\\\1': invalid escape sequence: \\1 (backreferences are not supported: "
            "regexes run on RE2, which matches in linear time)",
            "cases[0].assertions[0].value",
        )
    ],
    # -- dynamic cases -------------------------------------------------------------------------
    "checkpoint_unknown_after.yaml": [
        E(
            7,
            24,
            "checkpoint 'booked' comes after unknown checkpoint 'asked_dates' (known: greeted",
            "cases[0].checkpoints[1].after[1]",
        )
    ],
    "checkpoint_cycle.yaml": [E(5, 14, "checkpoints form a cycle: a → c → b → a", "cases[0].checkpoints[0].after")],
    "checkpoint_missing_assertion.yaml": [E(3, 7, "missing required field 'assertion'", "cases[0].checkpoints[0]")],
    "duplicate_checkpoint_id.yaml": [E(5, 11, "duplicate checkpoint id 'greeted'", "cases[0].checkpoints[1].id")],
    # -- fields nothing would read (no silent pass) --------------------------------------------
    "expected_not_checked.yaml": [
        E(
            3,
            13,
            "'expected' would never be checked: case 'capital' has assertions of its own, and none of them reads it",
            "cases[0].expected",
        )
    ],
    "defaults_expected_not_checked.yaml": [
        E(2, 13, "'expected' would never be checked: case 'capital' has assertions of its own", "defaults.expected")
    ],
    "dynamic_case_expected.yaml": [
        E(
            2,
            13,
            "'expected' would never be checked: case 'books' is dynamic, and none of its checkpoints reads it",
            "cases[0].expected",
        )
    ],
    "dynamic_case_assertions.yaml": [
        E(7, 5, "'assertions' would never be checked: case 'books' is dynamic", "cases[0].assertions")
    ],
    "defaults_assertions_dynamic_case.yaml": [
        E(3, 5, "'assertions' would never be checked: case 'books' is dynamic", "defaults.assertions")
    ],
    "max_turns_standard_case.jsonl": [
        E(1, 49, "'max_turns' would never be read: case 'greets' is not dynamic", "cases[0].max_turns")
    ],
    # -- one file, several mistakes: every one is listed ---------------------------------------
    "several_mistakes.yaml": [
        E(4, 12, "input must be text, a message", "cases[0].input"),
        E(8, 15, "unknown assertion type 'containz'", "cases[1].assertions[0].type"),
        E(10, 9, "duplicate case id 'one' (first at line 3)", "cases[2].id"),
        E(14, 14, "invalid duration 'soon'", "cases[3].timeout"),
        E(15, 11, "tags must be a list, not a string", "cases[3].tags"),
    ],
}

NEEDS = {"bad_regex.yaml": "regex", "defaults_bad_regex.yaml": "regex", "regex_backreference.yaml": "regex"}

PROBLEM = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<message>.*?)(?: \(at (?P<field>[^()]*)\))?$")


class Run(NamedTuple):
    code: int
    stdout: str
    stderr: str


def specrun(*args: str, cwd: Path = CORPUS, env: dict[str, str] | None = None) -> Run:
    proc = run_cli(args, cwd, env)
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    """``specrun validate FILE`` for every corpus file."""
    names = sorted(p.name for p in CORPUS.iterdir() if p.is_file())
    return {name: specrun("validate", name) for name in names}


def test_corpus_is_complete() -> None:
    on_disk = {p.name for p in CORPUS.iterdir() if p.is_file()}
    assert on_disk == set(EXPECTED), "every corpus file needs an expectation, and vice versa"
    assert len(on_disk) >= 24


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file(name: str, runs: dict[str, Run]) -> None:
    if name in NEEDS and NEEDS[name] not in default_plugins().registry.names("assertion"):
        missing(f"the {NEEDS[name]!r} assertion type is not installed")
    run = runs[name]
    output = run.stdout + run.stderr
    assert "Traceback" not in output
    assert "internal error" not in output
    assert run.code == 2, output
    problems = [m for m in map(PROBLEM.match, run.stderr.splitlines()) if m]
    assert len(problems) == len(EXPECTED[name]), output
    for got, want in zip(problems, EXPECTED[name], strict=True):
        assert got["file"] == name, output
        assert int(got["line"]) == want.line, output
        if want.column is not None:
            assert int(got["col"]) == want.column, output
        assert want.message in got["message"], output
        assert got["field"] == want.field, output
    assert run.stderr.splitlines()[-1].startswith(f"specrun: {len(problems)} problem")


def test_two_bad_files_are_both_reported() -> None:
    run = specrun("validate", "wrong_type.jsonl", "duplicate_id.yaml")
    assert run.code == 2
    assert "wrong_type.jsonl:2:33: input must be" in run.stderr
    assert "duplicate_id.yaml:5:7: duplicate case id 'same'" in run.stderr
    assert run.stderr.splitlines()[-1] == "specrun: 2 problems in 2 files"


def test_whole_corpus_directory_in_one_run() -> None:
    """Validating the folder reports every file's problems at once, then exits 2."""
    run = specrun("validate", ".")
    assert run.code == 2
    assert "Traceback" not in run.stderr
    reported = {m["file"] for m in map(PROBLEM.match, run.stderr.splitlines()) if m}
    assert reported == set(EXPECTED) - {
        n for n, kind in NEEDS.items() if kind not in default_plugins().registry.names("assertion")
    }


def test_every_broken_jsonl_line_is_reported(tmp_path: Path) -> None:
    suite = tmp_path / "lines.jsonl"
    suite.write_text('{"id": "a", "input": "x"}\n{"id": "b",\n\n{"id": "c" "input": "x"}\n')
    run = specrun("validate", str(suite), cwd=tmp_path)
    assert run.code == 2
    assert "lines.jsonl:2:12: invalid JSON" in run.stderr
    assert "lines.jsonl:4:12: invalid JSON" in run.stderr


def test_debug_adds_the_traceback(tmp_path: Path) -> None:
    run = specrun("--debug", "validate", "wrong_type.jsonl")
    assert run.code == 2
    assert "Traceback" in run.stderr
    assert "\nwrong_type.jsonl:2:33: input must be" in run.stderr


# -- what is (and is not) a suite file ------------------------------------------------------------

GOOD = '{"id": "ok", "input": "hello", "assertions": [{"type": "contains", "value": "hi"}]}\n'


def _tree(root: Path) -> None:
    """One real suite among files that look like suites but must never be loaded as one."""
    (root / "suites").mkdir()
    (root / "suites" / "chat.jsonl").write_text(GOOD)
    not_suites = {
        "suites/output-20240101-120000.jsonl": '{"type": "start"}\n{"type": "result"}\n',
        "suites/output-report.json": '{"specrun_report": 1, "results": [{"id": 1}]}',
        "suites/specrun.schema.json": '{"$schema": "https://json-schema.org/draft/2020-12/schema"}',
        "suites/.hidden.jsonl": "not json",
        "suites/.cache/stale.jsonl": "not json",
        "suites/fixtures/payload.json": '{"any": "data"}',
        "suites/node_modules/pkg/package.json": '{"name": "x"}',
        "suites/__pycache__/x.json": "{}",
        "suites/agent.yaml": "target: python:bot:respond\n",
        "suites/bot.py": "def respond(messages, ctx):\n    return 'ok'\n",  # validate checks the agent too
        "suites/notes.txt": "not a suite extension",
    }
    for rel, text in not_suites.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_directory_search_skips_reports_hidden_fixtures_and_agent_files(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert find_suite_files(tmp_path / "suites") == [tmp_path / "suites" / "chat.jsonl"]
    run = specrun("validate", "suites", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "ok: 1 cases in 1 suite files"


def test_a_named_file_is_validated_even_if_a_folder_search_would_skip_it(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "case.jsonl").write_text('{"id": "x"}\n')
    run = specrun("validate", "fixtures/case.jsonl", cwd=tmp_path)
    assert run.code == 2
    assert "fixtures/case.jsonl:1:1: missing required field 'input'" in run.stderr


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf- id: y\n  input: hi\n")
    run = specrun("validate", "bom.jsonl", "bom.yaml", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "ok: 2 cases in 2 suite files" in run.stdout


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    run = specrun("validate", "nowhere", cwd=tmp_path)
    assert run.code == 2
    assert "no such file or directory: nowhere" in run.stderr
    (tmp_path / "empty").mkdir()
    run = specrun("validate", "empty", cwd=tmp_path)
    assert run.code == 2
    assert "no suite files found under empty" in run.stderr
    assert "Traceback" not in run.stderr


def test_reports_written_by_a_real_run_are_not_suites(tmp_path: Path) -> None:
    """Run a suite with reports written next to it, then validate that folder again."""
    suite_dir = tmp_path / "s"
    suite_dir.mkdir()
    (suite_dir / "bot.py").write_text("def respond(messages, ctx):\n    return 'hi there'\n")
    (suite_dir / "agent.yaml").write_text("target: python:bot:respond\n")
    (suite_dir / "cases.jsonl").write_text(GOOD)
    run = specrun("s", "-q", "-o", "s/output-results.jsonl", "-o", "s/output-report.json", cwd=tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    run = specrun("s", "-q", cwd=tmp_path)  # the default stream: output-<timestamp>.jsonl
    assert run.code == 0, run.stdout + run.stderr
    # A name the folder search would load is refused before the run, so it never lands there.
    run = specrun("s", "-q", "-o", "s/results.jsonl", cwd=tmp_path)
    assert run.code == 2 and "-o s/results.jsonl: inside the input folder s" in run.stderr
    written = sorted(p.name for p in suite_dir.iterdir() if p.suffix in (".json", ".jsonl"))
    assert {"output-results.jsonl", "output-report.json"} <= set(written)
    assert "results.jsonl" not in written
    assert find_suite_files(suite_dir) == [suite_dir / "cases.jsonl"]
    run = specrun("validate", "s", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "ok: 1 cases in 1 suite files"


# -- docs/suite-format.md ---------------------------------------------------------------------------

DOC = Path(__file__).parent.parent / "docs" / "suite-format.md"


def _doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text("utf-8"), re.S | re.M)


def test_suite_format_examples_validate(tmp_path: Path) -> None:
    """Every YAML and JSONL example in the suite reference is a valid suite (or part of one)."""
    files = []
    for i, text in enumerate(_doc_blocks("yaml")):
        if text.lstrip().startswith("input:"):  # the input forms: each is one case's field
            text = "".join(
                f"- id: c{j}\n" + "".join(f"  {line}\n" for line in chunk.strip().splitlines())
                for j, chunk in enumerate(re.split(r"\n\n", text.strip()))
            )
        elif text.lstrip().startswith("defaults:"):
            text = "name: example\n" + text
        files.append(tmp_path / f"example{i}.yaml")
        files[-1].write_text(text)
    for i, text in enumerate(_doc_blocks("jsonl")):
        files.append(tmp_path / f"example{i}.jsonl")
        files[-1].write_text(text)
    assert len(files) >= 8
    (tmp_path / "bot.py").write_text("def answer(messages, ctx):\n    return ''\n")  # the examples' target
    run = specrun("validate", *map(str, files), cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert f"in {len(files)} suite files" in run.stdout


def test_suite_format_documents_every_case_field() -> None:
    from specrun._load.schemas import shipped

    text = DOC.read_text("utf-8")
    fields = shipped("suite")["$defs"]["case_fields"]
    missing = [name for name in fields if f"`{name}`" not in text]
    assert not missing, f"case fields missing from docs/suite-format.md: {missing}"
