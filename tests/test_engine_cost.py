"""The engine's own work per case, counted in Python calls: a figure that does not move with
the machine's load (bench/engine_bench.py measures the seconds, bench/engine_instructions.py
the instructions). A case against an instant agent with one ``contains``, history on, made
about 239 calls of its own (generators resumed included) before the last work of issue 24
and about 187 after: a change that adds calls to every case shows here, not only in the next
benchmark round."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from support.cli import run_cli

CALLS_PER_CASE = 200  # the budget: a case makes about 187 now (239 before); room for a few more


def _project(folder: Path, cases: int) -> Path:
    folder.mkdir()
    (folder / "specrun.yaml").write_text("timeout: 60s\n")
    (folder / "agent.yaml").write_text("target:\n  type: python\n  function: instant:answer\n")
    (folder / "instant.py").write_text("async def answer(messages, ctx):\n    return 'ok: ' + ctx.case_id\n")
    lines = [
        {"id": f"case-{i:05d}", "input": f"question {i}", "assertions": [{"type": "contains", "value": "ok"}]}
        for i in range(cases)
    ]
    (folder / "suite.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def _calls(folder: Path) -> int:
    """Python calls (and generator resumptions) a run in ``folder`` makes on the main thread."""
    count = 0

    def counting(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(counting)
    try:
        done = run_cli(["suite.jsonl", "-q", "--parallel", "50", "-o", "out.jsonl"], folder)
    finally:
        sys.setprofile(None)
    assert done.returncode == 0, done.stdout + done.stderr
    return count


def test_a_case_costs_the_engine_at_most_its_budget_of_calls(tmp_path):
    small, big = _project(tmp_path / "small", 100), _project(tmp_path / "big", 400)
    _calls(small)  # imports and first-use setup are no case's
    per_case = (_calls(big) - _calls(small)) / 300
    assert per_case <= CALLS_PER_CASE, f"{per_case:.0f} Python calls per case (budget {CALLS_PER_CASE})"
    assert len((big / "out.jsonl").read_text().splitlines()) == 402  # start, 400 results, summary
