"""Selecting cases through the CLI: ``-m`` on tags and ``-k`` on ids and names (pytest's grammar),
combined with each other and with ``--run``; unknown tags warn, broken expressions are exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli

from specrun._run.selection import Expression, ExpressionError

CASES = [
    {"id": "login-ok", "name": "Customer logs in", "input": "a", "tags": ["smoke", "auth"]},
    {"id": "login-slow", "input": "b", "tags": ["smoke", "slow", "auth"]},
    {"id": "refund-policy", "name": "Refund after 30 days", "input": "c", "tags": ["policy", "billing"]},
    {"id": "invoice", "name": "Monthly INVOICE total", "input": "d", "tags": ["billing"]},
    {"id": "untagged", "input": "e"},
]


def project(tmp_path: Path) -> Path:
    (tmp_path / "specrun.yaml").write_text("parallel: 1\n")
    (tmp_path / "agent.py").write_text("def echo(messages, ctx):\n    return messages[-1].text\n")
    (tmp_path / "agent.yaml").write_text("target: python:agent:echo\n")
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    return tmp_path


def selected(tmp_path: Path, *flags: str) -> list[str]:
    proc = run_cli(["suite.jsonl", "-o", "out.jsonl", *flags], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return [r["id"] for r in lines if r["type"] == "result"]


@pytest.mark.parametrize(
    ("expression", "ids"),
    [
        ("smoke", ["login-ok", "login-slow"]),
        ("smoke and not slow", ["login-ok"]),
        ("billing or policy", ["refund-policy", "invoice"]),
        ("not billing", ["login-ok", "login-slow", "untagged"]),
        ("(smoke or billing) and not (slow or policy)", ["login-ok", "invoice"]),
        ("not not auth", ["login-ok", "login-slow"]),
    ],
)
def test_m_selects_by_tag_expression(tmp_path, expression, ids):
    assert selected(project(tmp_path), "-m", expression) == ids


@pytest.mark.parametrize(
    ("expression", "ids"),
    [
        ("login", ["login-ok", "login-slow"]),
        ("invoice", ["invoice"]),  # the name says INVOICE: substrings ignore case, as pytest's -k
        ("refund or customer", ["login-ok", "refund-policy"]),  # "customer" is in a name only
        ("login and not slow", ["login-ok"]),
    ],
)
def test_k_selects_by_substrings_of_ids_and_names(tmp_path, expression, ids):
    assert selected(project(tmp_path), "-k", expression) == ids


def test_m_k_and_run_combine(tmp_path):
    project(tmp_path)
    assert selected(tmp_path, "-m", "smoke or billing", "-k", "not slow") == ["login-ok", "refund-policy", "invoice"]
    assert selected(tmp_path, "-m", "smoke or billing", "-k", "not slow", "--run", "^(login|invoice)") == [
        "login-ok",
        "invoice",
    ]


def test_dry_run_shows_only_the_selection(tmp_path):
    proc = run_cli(["suite.jsonl", "-m", "billing", "--dry-run"], cwd=project(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "[refund-policy]" in proc.stdout and "[invoice]" in proc.stdout and "[login-ok]" not in proc.stdout
    assert "2 cases x 1 run(s)" in proc.stdout


def test_unknown_tag_warns_and_lists_the_known_ones(tmp_path):
    proc = run_cli(["suite.jsonl", "-o", "out.jsonl", "-m", "smoke or smok"], cwd=project(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "specrun: warning: -m: unknown tag 'smok' (known tags: auth, billing, policy, slow, smoke)" in proc.stderr


def test_nothing_selected_is_exit_2_naming_the_filters(tmp_path):
    proc = run_cli(["suite.jsonl", "-m", "smok", "-k", "login"], cwd=project(tmp_path))
    assert proc.returncode == 2
    assert "no cases to run match -m 'smok' -k 'login'" in proc.stderr
    assert "unknown tag 'smok' (known tags: auth, billing" in proc.stderr
    assert not list(tmp_path.rglob("output-*.jsonl"))


@pytest.mark.parametrize(
    ("flag", "expression", "message"),
    [
        (
            "-m",
            "smoke and",
            "-m 'smoke and': at column 10: expected 'not' or left parenthesis or a name; got end of input",
        ),
        ("-m", "(smoke or slow", "at column 15: expected right parenthesis; got end of input"),
        ("-m", "smoke slow", "at column 7: expected end of input; got a name"),
        ("-k", "login && ok", "-k 'login && ok': at column 7: unexpected character '&'"),
        ("-m", "smoke(reason=1)", "at column 6: 'smoke' takes no arguments (tags are plain names)"),
        ("-k", "or", "at column 1: expected 'not' or left parenthesis or a name; got 'or'"),
    ],
)
def test_invalid_expression_is_exit_2_before_anything_runs(tmp_path, flag, expression, message):
    project(tmp_path)
    (tmp_path / "agent.py").write_text("raise SystemExit('the agent must not be loaded')\n")
    proc = run_cli(["suite.jsonl", "-o", "out.jsonl", flag, expression], cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "e.g. 'smoke and not slow'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_empty_expression_selects_everything(tmp_path):
    assert len(selected(project(tmp_path), "-m", "", "-k", "")) == len(CASES)


def test_grammar_names_as_pytest_lexes_them():
    seen: list[str] = []
    expression = Expression("not a:b and (x.y or c-d/e[1]) or True")
    assert expression.evaluate(lambda name: seen.append(name) or True)
    assert expression.names == ("a:b", "x.y", "c-d/e[1]", "True")
    assert seen == ["a:b", "True"]  # short-circuits as Python's and/or
    with pytest.raises(ExpressionError, match="column 3"):
        Expression("a (b)")
