"""engine_bench's workload counted in instructions (valgrind's callgrind): a figure that does not
move with the other work on a shared machine, for comparing two checkouts change by change.

    python bench/engine_instructions.py [--cases 3000] [--small 500] [--baseline OTHER/.venv/bin/python]
                                        [--no-history]

Instructions per case = (Ir(cases) - Ir(small)) / (cases - small), of one ``specrun`` process
each, as engine_bench runs it. Under valgrind a run is about 50 times slower, so the history's
commits, made 0.1 s after a result (``COMMIT_AFTER_S``), would come about 50 times as often as
in a real run: here they are made every ``COMMIT_ROWS`` results instead (this script's only
change to the run). The seconds engine_bench measures are what the goal is of; these counts say
whether a change made the engine do less, and how much.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import env
from engine_bench import write_project

_RUN = (
    "import sys\n"
    "from specrun._history import recording\n"
    "recording.COMMIT_AFTER_S = 1e9\n"
    "from specrun.cli.main import main\n"
    "sys.argv = ['specrun', *sys.argv[1:]]\n"
    "main()\n"
)


def instructions(python: str, folder: Path, history: bool) -> int:
    """Instructions of one run in ``folder`` (a project engine_bench wrote), by ``python``'s specrun."""
    for old in (folder / ".specrun", folder / "out.jsonl"):
        subprocess.run(["rm", "-rf", str(old)], check=True)
    args = ["suite.jsonl", "-q", "--parallel", "50", "-o", "out.jsonl"] + ([] if history else ["--no-history"])
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", _RUN, *args]
    done = subprocess.run(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env())
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr[-2000:]
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--baseline", help="another checkout's python (its .venv/bin/python)")
    parser.add_argument("--no-history", action="store_true")
    args = parser.parse_args()
    pythons = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    with tempfile.TemporaryDirectory() as big_dir, tempfile.TemporaryDirectory() as small_dir:
        big, small = Path(big_dir), Path(small_dir)
        write_project(big, args.cases)
        write_project(small, args.small)
        figures = {}
        for name, python in pythons.items():
            instructions(python, small, not args.no_history)  # bytecode written, not counted
            per_case = instructions(python, big, not args.no_history) - instructions(python, small, not args.no_history)
            figures[name] = per_case / (args.cases - args.small)
            print(f"{name}: {figures[name]:,.0f} instructions per case ({os.path.basename(python)})")
    if args.baseline:
        print(f"this / baseline: {figures['this'] / figures['baseline']:.3f}")


if __name__ == "__main__":
    main()
