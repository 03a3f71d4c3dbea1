"""What one ``specrun`` process costs to start: a one-case run against a python agent.

Every user's invocation pays this, and so does each ``specrun`` the test suite starts. The
script generates the smallest real project (``agent.yaml`` naming a python function, a YAML
suite of one case with one ``contains``), runs ``specrun suite.yaml --no-history`` on it as a
user would (a fresh process each time) and prints the median wall and CPU time per start. In
the same rounds, interleaved, it times the floor: a bare interpreter and
``python -c "import asyncio"`` (the engine's one unavoidable import), so that the figures of a
shared machine compare.

    python bench/startup_bench.py [--repeat 20] [--also validate,help] [--importtime]

``--also`` times other quick commands on the same project (``validate``: ``specrun validate
suite.yaml``; ``help``: ``specrun --help``; ``version``: ``specrun --version``);
``--importtime`` prints the modules the run imports, slowest (cumulative) first.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SPECRUN, env

AGENT = 'def reply(messages, ctx):\n    return "hi"\n'
SUITE = "- {id: a, input: hi, assertions: [{type: contains, value: hi}]}\n"
COMMANDS = {
    "run": [SPECRUN, "suite.yaml", "--no-history"],
    "validate": [SPECRUN, "validate", "suite.yaml"],
    "help": [SPECRUN, "--help"],
    "version": [SPECRUN, "--version"],
    "python": [sys.executable, "-c", "pass"],
    "import asyncio": [sys.executable, "-c", "import asyncio"],
}


def write_project(folder: Path) -> None:
    (folder / "bot.py").write_text(AGENT)
    (folder / "agent.yaml").write_text("target: python:bot:reply\n")
    (folder / "suite.yaml").write_text(SUITE)


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def importtime(cwd: Path, top: int = 30) -> None:
    """The run's imports, by cumulative microseconds (``python -X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *COMMANDS["run"]], cwd=cwd, capture_output=True, text=True, env=env()
    )
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, own, cumulative, name = line.replace("|", ":").split(":")
            if own.strip().isdigit():
                rows.append((int(cumulative), int(own), name.rstrip()))
    print(f"\n{len(rows)} modules imported by the run; the slowest, cumulative (own) ms:")
    for cumulative, own, name in sorted(rows, reverse=True)[:top]:
        print(f"  {cumulative / 1000:6.1f} ({own / 1000:5.1f}) {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20, help="starts of each command (the median is reported)")
    parser.add_argument("--also", default="", help="more commands to time: validate,help,version")
    parser.add_argument("--importtime", action="store_true", help="also list the run's slowest imports")
    args = parser.parse_args()
    labels = ["run", *[a for a in args.also.split(",") if a], "python", "import asyncio"]
    unknown = [label for label in labels if label not in COMMANDS]
    if unknown:
        sys.exit(f"unknown --also: {', '.join(unknown)} (known: validate, help, version)")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder)
        for label in labels:  # warm the file and bytecode caches once; not counted
            timed(COMMANDS[label], folder)
        walls: dict[str, list[float]] = {label: [] for label in labels}
        cpus: dict[str, list[float]] = {label: [] for label in labels}
        for _ in range(args.repeat):
            for label in labels:
                wall, cpu = timed(COMMANDS[label], folder)
                walls[label].append(wall)
                cpus[label].append(cpu)
        for label in labels:
            shown = "specrun " + " ".join(COMMANDS[label][1:]) if COMMANDS[label][0] == SPECRUN else label
            print(
                f"{shown:32} median {statistics.median(walls[label]) * 1000:4.0f} ms wall, "
                f"{statistics.median(cpus[label]) * 1000:4.0f} ms CPU (min wall "
                f"{min(walls[label]) * 1000:.0f}) over {args.repeat} starts"
            )
        if args.importtime:
            importtime(folder)


if __name__ == "__main__":
    main()
