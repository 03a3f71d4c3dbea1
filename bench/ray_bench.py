"""The ray executor against the local one, on this machine's cores.

1. CPU-bound: cases of an in-process Python agent doing a fixed amount of pure-Python work
   (calibrated here to about 50 ms on one core): locally (one event loop and one interpreter
   lock, so one core whatever --parallel says) and on a local Ray cluster of --cpus CPUs.
2. Overhead: cases of an instant agent, locally and on Ray, one at a time (--parallel 1: each
   case's round trip) and at the cluster's width (throughput).

Each configuration runs twice, with fewer and with more cases (N/2 and N for the busy agent;
N and 5N for the instant one), each run a specrun process. "wall" is the whole process (a Ray
run starts a local cluster first); "run" is the run's own duration from the summary line (the
cluster is up; starting the workers and their first imports are in it); "ms/case" is the
steady state, the difference of the two runs per case, which leaves the start-up out.

    python bench/ray_bench.py [--cases 400] [--cpus 2] [--work-ms 50]
"""

from __future__ import annotations

import argparse
import json
import os
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
    """Iterations of the agent's loop that take ``work_ms`` on one core here (the fastest of
    several tries: a busy machine only ever makes a try slower)."""
    n, best = 100_000, float("inf")
    for _ in range(7):
        started = time.perf_counter()
        total = 0
        for i in range(n):
            total += i * i % 7
        best = min(best, time.perf_counter() - started)
    return int(work_ms / 1000 / (best / n))


SIZES = {"busy": (1, 2), "instant": (2, 10)}  # each agent's two runs, in halves of --cases


def project(folder: Path, cases: int, iterations: int, cpus: int) -> None:
    (folder / "specrun.yaml").write_text(f"timeout: 60s\nhistory: false\nexecutor:\n  type: ray\n  num_cpus: {cpus}\n")
    for name, halves in SIZES.items():
        for count in (cases * h // 2 for h in halves):
            agent = folder / f"{name}{count}"
            agent.mkdir()
            (agent / "bot.py").write_text(AGENT.format(n=iterations))
            (agent / "agent.yaml").write_text(f"id: {name}\ntarget: python:bot:{name}\n")
            write_suite(agent / "suite.jsonl", [{"id": f"c{i}", "input": "go"} for i in range(count)])


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
    n = args.cases
    iterations = calibrate(args.work_ms)
    width = f"--parallel {args.cpus}"
    configs = [
        ("busy", "local --parallel 1", ["--executor", "local", "--parallel", "1"]),
        ("busy", f"ray ({args.cpus} CPUs)", ["--executor", "ray"]),
        ("instant", "local --parallel 1", ["--executor", "local", "--parallel", "1"]),
        ("instant", "ray --parallel 1", ["--executor", "ray", "--parallel", "1"]),
        ("instant", f"local {width}", ["--executor", "local", *width.split()]),
        ("instant", f"ray ({args.cpus} CPUs)", ["--executor", "ray"]),
    ]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {n} cases")
    print(f"busy agent: {iterations:,} iterations (~{args.work_ms:.0f} ms on one core)")
    print(
        f"{'agent':8} {'executor':20} {'cases':>6} {'wall s':>8} {'run s':>8} {'fewer':>6} {'run s':>8} {'ms/case':>8}"
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="specrun-ray-bench-") as tmp:
        folder = Path(tmp)
        project(folder, n, iterations, args.cpus)
        for agent, label, flags in configs:
            few, many = (n * h // 2 for h in SIZES[agent])
            small, full = run(folder, f"{agent}{few}", *flags), run(folder, f"{agent}{many}", *flags)
            steady = (full["run"] - small["run"]) * 1000 / (many - few)
            results[agent, label] = (full, steady)
            print(
                f"{agent:8} {label:20} {many:6} {full['wall']:8.2f} {full['run']:8.2f}"
                f" {few:6} {small['run']:8.2f} {steady:8.2f}"
            )
    print(f"load average {os.getloadavg()[0]:.1f}")
    (local, local_steady), (remote, remote_steady) = results["busy", "local --parallel 1"], results[configs[1][:2]]
    print(
        f"CPU-bound on Ray vs local: {local['wall'] / remote['wall']:.2f}x wall, {local['run'] / remote['run']:.2f}x"
        f" run, {local_steady / remote_steady:.2f}x steady state"
    )
    one = results["instant", "ray --parallel 1"][1] - results["instant", "local --parallel 1"][1]
    wide = results["instant", f"ray ({args.cpus} CPUs)"][1] - results["instant", f"local {width}"][1]
    print(f"Ray overhead per case (steady state): {one:.2f} ms one at a time, {wide:.2f} ms at {args.cpus} in flight")


if __name__ == "__main__":
    main()
