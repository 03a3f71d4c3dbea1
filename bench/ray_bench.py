"""The ray executor against the local one, on this machine's cores.

1. CPU-bound: 400 cases of an in-process Python agent doing a fixed amount of pure-Python work
   (calibrated here to about 50 ms on one core): locally (one event loop and one interpreter
   lock, so one core whatever --parallel says) and on a local Ray cluster of --cpus workers.
2. Overhead: 400 cases of an instant agent, locally and on Ray, at --parallel 1 (each case's
   round trip) and at the cluster's width (throughput): the difference per case.

Each run is a specrun process. "wall" is the whole process (the Ray run includes starting a
local cluster and its workers); "run" is the run's own duration from the summary line (after
the cluster is up; worker start-up and the first imports on each worker are in it).

    python bench/ray_bench.py [--cases 400] [--cpus 2] [--work-ms 50]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _common import run_specrun, write_suite

AGENT = """
def busy(messages, ctx):
    total = 0
    for i in range({n}):
        total += i * i % 7
    return "done"

def instant(messages, ctx):
    return "done"
"""


def calibrate(work_ms: float) -> int:
    """Iterations of the agent's loop that take ``work_ms`` on one core here."""
    n = 200_000
    started = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i % 7
    per_iteration = (time.perf_counter() - started) / n
    return int(work_ms / 1000 / per_iteration)


def project(folder: Path, cases: int, iterations: int, cpus: int) -> None:
    (folder / "specrun.yaml").write_text(f"timeout: 60s\nexecutor:\n  type: ray\n  num_cpus: {cpus}\n")
    for name in ("busy", "instant"):
        (folder / name).mkdir()
        (folder / name / "bot.py").write_text(AGENT.format(n=iterations))
        (folder / name / "agent.yaml").write_text(f"id: {name}\ntarget: python:bot:{name}\n")
        write_suite(folder / name / "suite.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(cases)])


def run(folder: Path, suite: str, *flags: str) -> dict[str, float]:
    out = folder / "out.jsonl"
    measured = run_specrun([suite, "-o", str(out), *flags], folder)
    if measured["code"] != 0:
        raise SystemExit(f"specrun {suite} {' '.join(flags)} exited {measured['code']}: {measured['stderr'][-2000:]}")
    summary = json.loads(out.read_text().splitlines()[-1])
    assert summary["passed"] == summary["total"], summary
    measured["run"] = summary["duration_ms"] / 1000
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--work-ms", type=float, default=50.0)
    args = parser.parse_args()
    iterations = calibrate(args.work_ms)
    with tempfile.TemporaryDirectory(prefix="specrun-ray-bench-") as tmp:
        folder = Path(tmp)
        project(folder, args.cases, iterations, args.cpus)
        print(f"{args.cases} cases; busy agent: {iterations:,} iterations (~{args.work_ms:.0f} ms on one core)")
        rows = [
            ("busy", "local --parallel 1", run(folder, "busy", "--executor", "local", "--parallel", "1")),
            (
                "busy",
                f"local --parallel {args.cpus}",
                run(folder, "busy", "--executor", "local", "--parallel", str(args.cpus)),
            ),
            ("busy", f"ray ({args.cpus} CPUs)", run(folder, "busy", "--executor", "ray")),
            ("instant", "local --parallel 1", run(folder, "instant", "--executor", "local", "--parallel", "1")),
            ("instant", "ray --parallel 1", run(folder, "instant", "--executor", "ray", "--parallel", "1")),
            (
                "instant",
                f"local --parallel {args.cpus}",
                run(folder, "instant", "--executor", "local", "--parallel", str(args.cpus)),
            ),
            ("instant", f"ray ({args.cpus} CPUs)", run(folder, "instant", "--executor", "ray")),
        ]
    print(f"{'agent':8} {'executor':22} {'wall s':>8} {'run s':>8} {'ms/case':>8}")
    for agent, label, m in rows:
        print(f"{agent:8} {label:22} {m['wall']:8.2f} {m['run']:8.2f} {m['run'] * 1000 / args.cases:8.2f}")
    busy = {label: m for agent, label, m in rows if agent == "busy"}
    local, remote = busy["local --parallel 1"], busy[f"ray ({args.cpus} CPUs)"]
    run_speedup, wall_speedup = local["run"] / remote["run"], local["wall"] / remote["wall"]
    print(f"CPU-bound speed-up on Ray: {run_speedup:.2f}x (run), {wall_speedup:.2f}x (wall)")
    instant = {label: m for agent, label, m in rows if agent == "instant"}
    for width in ("--parallel 1", f"({args.cpus} CPUs)"):
        key = "local --parallel 1" if width == "--parallel 1" else f"local --parallel {args.cpus}"
        extra = (instant[f"ray {width}"]["run"] - instant[key]["run"]) * 1000 / args.cases
        print(f"Ray overhead per case, ray {width} vs {key}: {extra:.2f} ms")


if __name__ == "__main__":
    main()
