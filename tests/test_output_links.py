"""A run never writes over a file it reads, nor one file twice, by any of the file's names: a
hard link is another name that resolving the path does not see."""

from __future__ import annotations

import os

import pytest
from support.cli import run_cli

SUITE = '{"id": "c", "input": "hi", "assertions": [{"type": "contains", "value": "hi"}]}\n'


@pytest.fixture
def project(tmp_path):
    (tmp_path / "agent_mod.py").write_text("def bot(messages, ctx):\n    return 'hi'\n")
    (tmp_path / "agent.yaml").write_text("target: python:agent_mod:bot\n")
    (tmp_path / "suite.jsonl").write_text(SUITE)
    return tmp_path


def test_an_output_that_is_a_hard_link_of_the_suite_is_refused(project):
    os.link(project / "suite.jsonl", project / "out.jsonl")
    done = run_cli(["suite.jsonl", "-o", "out.jsonl", "--no-history"], project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "-o out.jsonl: is an input of this run" in done.stderr
    assert (project / "suite.jsonl").read_text() == SUITE  # the suite was overwritten by the stream


def test_two_outputs_that_are_one_file_are_refused(project):
    (project / "a.json").write_text("{}")
    os.link(project / "a.json", project / "b.json")
    done = run_cli(["suite.jsonl", "-o", "a.json", "-o", "b.json", "--no-history"], project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "-o b.json: the same file as -o a.json" in done.stderr
