"""Memory flat in suite size: peak RSS, validate time and run time at 1k, 10k, 100k and 1M cases.

Writes one JSONL suite of N cases (a 200-character input and two assertions each) next to an
instant agent (an async Python function that answers at once), then measures two fresh specrun
processes as a user runs them: ``specrun validate suite.jsonl`` and ``specrun suite.jsonl -q
--parallel 50 -o out.jsonl``. Each figure is of exactly that process (``wait4``). Goal: peak
RSS at most 200 MB at every N, whatever N (the suite is validated without keeping its cases,
then streamed to the workers; results stream to disk).

    python bench/memory_bench.py [--cases 1000 10000 100000 1000000] [--parallel 50] [--no-run] [--no-history]

``--no-history`` runs with ``--no-history``: against a run recorded in the history (the default),
it shows what recording costs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SPECRUN, env

RSS_LIMIT_MB = 200
AGENT = "async def answer(messages, ctx):\n    return 'ok: ' + ctx.case_id\n"


def measure(args: list[str], cwd: Path, program: str = SPECRUN) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of exactly this specrun process."""
    started = time.perf_counter()
    proc = subprocess.Popen([program, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024, "code": code, "stderr": stderr}


def write_project(folder: Path, cases: int) -> None:
    (folder / "specrun.yaml").write_text("timeout: 60s\n")
    (folder / "agent.yaml").write_text("target:\n  type: python\n  function: instant:answer\n")
    (folder / "instant.py").write_text(AGENT)
    filler = "x" * 200
    with (folder / "suite.jsonl").open("w") as out:
        for i in range(cases):
            case = {
                "id": f"case-{i:07d}",
                "input": f"{i:07d} {filler}"[:200],
                "assertions": [{"type": "contains", "value": "ok"}, {"type": "not_contains", "value": "error"}],
            }
            out.write(json.dumps(case) + "\n")


def check_stream(path: Path, cases: int) -> None:
    """Every case has its result line and the summary adds up (read line by line)."""
    results, summary = 0, {}
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            if line.startswith(('{"type": "result"', '{"type":"result"')):
                results += 1
            elif '"type": "summary"' in line or '"type":"summary"' in line:
                summary = json.loads(line)
    assert results == cases, f"{results} result lines for {cases} cases"
    assert summary.get("passed") == cases, summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--parallel", type=int, default=50)
    parser.add_argument("--no-run", action="store_true", help="measure validate only")
    parser.add_argument("--no-history", action="store_true", help="run with --no-history (nothing recorded)")
    args = parser.parse_args()
    rows = []
    for n in args.cases:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_project(folder, n)
            validate = measure(["validate", "suite.jsonl"], folder)
            assert validate["code"] == 0, validate["stderr"][-3000:]
            run = None
            if not args.no_run:
                flags = ["-q", "--parallel", str(args.parallel), "-o", "out.jsonl"]
                flags += ["--no-history"] if args.no_history else []
                run = measure(["suite.jsonl", *flags], folder)
                assert run["code"] == 0, run["stderr"][-3000:]
                check_stream(folder / "out.jsonl", n)
            rows.append((n, validate, run))
            shown = f"validate {validate['wall']:.1f} s {validate['rss_mb']:.0f} MB"
            if run:
                shown += f"; run {run['wall']:.1f} s {run['rss_mb']:.0f} MB"
            print(f"{n:>9,} cases: {shown}", file=sys.stderr, flush=True)
    print(f"\n{'cases':>9} {'validate s':>11} {'CPU s':>7} {'MB':>6} {'run s':>8} {'CPU s':>7} {'MB':>6}")
    peaks = []
    for n, validate, run in rows:
        peaks.append(validate["rss_mb"])
        line = f"{n:>9,} {validate['wall']:>11.2f} {validate['cpu']:>7.2f} {validate['rss_mb']:>6.0f}"
        if run:
            peaks.append(run["rss_mb"])
            line += f" {run['wall']:>8.1f} {run['cpu']:>7.1f} {run['rss_mb']:>6.0f}"
        print(line)
    verdict = "ok" if max(peaks) <= RSS_LIMIT_MB else "MISSED"
    print(f"peak RSS {min(peaks):.0f}-{max(peaks):.0f} MB (goal: at most {RSS_LIMIT_MB} MB at every N)  [{verdict}]")
    sys.exit(0 if verdict == "ok" else 1)


if __name__ == "__main__":
    main()
