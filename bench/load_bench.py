"""Load: 10,000 cases at --parallel 500 against a faulty OpenAI-format agent on loopback.

The server (tests/support/llm_server.py in its own process) answers 10% of requests with 500,
10% with 429 (retry-after: 0), hangs on 2% and answers the rest after 50-100 ms (a seeded
random draw per request). The http target has no retries (the default); every case has a 5 s
timeout, so the hung ones end. For N = 2,500, 5,000 and 10,000 it checks that every case is
accounted for (one result line per case, statuses adding up, nothing lost) and prints wall
time, the ideal, CPU per case and the peak RSS of the specrun process, which must stay under
200 MB and flat as N grows (results stream to disk; nothing per case is kept but counters).

    python bench/load_bench.py [--cases 2500 5000 10000] [--parallel 500] [--retries 0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import SPECRUN, Server, env, write_suite

FAULTS = "500=0.10,429=0.10,hang=0.02"
DELAY, JITTER = 0.05, 0.05  # answers take 50-100 ms
TIMEOUT = 5.0  # per case: a hung request ends here
RSS_LIMIT_MB = 200


def measure(args: list[str], cwd: Path) -> dict[str, float]:
    """Wall, CPU (user+sys) and peak RSS of exactly this specrun process (wait4, not the
    cumulative RUSAGE_CHILDREN maximum, so each N gets its own figure)."""
    started = time.perf_counter()
    proc = subprocess.Popen([SPECRUN, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024, "code": proc.returncode, "stderr": stderr}


def ideal(cases: int, parallel: int) -> float:
    """The shortest possible run: the expected busy time of all cases spread over the workers,
    and never less than one hung case's timeout."""
    hang = 0.02
    busy = cases * ((1 - hang) * (DELAY + JITTER / 2) + hang * TIMEOUT)
    return max(busy / parallel, TIMEOUT)


def account(path: Path, cases: int) -> dict[str, int]:
    """Check every case has exactly one result and the summary adds up; count the outcomes."""
    seen: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    summary: dict = {}
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            if record["type"] == "result":
                seen[record["id"]] += 1
                error = record.get("error") or ""
                kind = error.split(" from ")[0].split(":")[0] if error else record["status"]
                outcomes[kind] += 1
            elif record["type"] == "summary":
                summary = record
    lost = cases - len(seen)
    duplicated = sum(n - 1 for n in seen.values())
    statuses = sum(summary.get(k) or 0 for k in ("passed", "failed", "errors", "skipped"))
    assert lost == 0 and duplicated == 0, f"lost {lost}, duplicated {duplicated}"
    assert statuses == cases and summary.get("not_run") == 0, summary
    return {"results": sum(seen.values()), "lost": lost, **outcomes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, nargs="+", default=[2500, 5000, 10000])
    parser.add_argument("--parallel", type=int, default=500)
    parser.add_argument("--retries", type=int, default=0, help="http target retries (default 0, as shipped)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pad", type=int, default=4096, help="answer size: big results must not raise RSS")
    args = parser.parse_args()
    faults = ["--faults", FAULTS, "--seed", str(args.seed), "--delay", str(DELAY), "--jitter", str(JITTER)]
    faults += ["--pad", str(args.pad)]
    rows = []
    for n in args.cases:
        # A fresh server per N: its own request log does not grow across runs.
        with Server(*faults) as server, tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "specrun.yaml").write_text(f"timeout: {TIMEOUT:g}s\n")
            (folder / "agent.yaml").write_text(
                f"target:\n  type: http\n  url: {server.base_url}/chat/completions\n  retries: {args.retries}\n"
            )
            cases = [
                {"id": f"c{i:05d}", "input": f"question {i}", "assertions": [{"type": "contains", "value": f"{i}"}]}
                for i in range(n)
            ]
            write_suite(folder / "suite.jsonl", cases)
            run = measure(["suite.jsonl", "-q", "-o", "out.jsonl", "--parallel", str(args.parallel)], folder)
            assert run["code"] in (0, 1), run["stderr"][-3000:]
            counts = account(folder / "out.jsonl", n)
            counts["stream_mb"] = round((folder / "out.jsonl").stat().st_size / 1e6)
            rows.append((n, run, ideal(n, args.parallel), counts, server.cpu()))
    print(
        f"\n{'cases':>6} {'wall s':>7} {'ideal s':>8} {'ratio':>6} {'CPU-ms/case':>12} {'server CPU s':>13} "
        f"{'peak RSS MB':>12} {'stream MB':>10} {'lost':>5}  outcomes"
    )
    for n, run, best, counts, server_cpu in rows:
        skip = ("results", "lost", "stream_mb")
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k not in skip)
        print(
            f"{n:>6} {run['wall']:>7.1f} {best:>8.1f} {run['wall'] / best:>6.1f} {run['cpu'] * 1000 / n:>12.2f} "
            f"{server_cpu:>13.1f} {run['rss_mb']:>12.0f} {counts['stream_mb']:>10} {counts['lost']:>5}  {outcomes}"
        )
    peaks = [run["rss_mb"] for _, run, _, _, _ in rows]
    verdict = "ok" if max(peaks) <= RSS_LIMIT_MB else "MISSED"
    print(f"peak RSS {min(peaks):.0f}-{max(peaks):.0f} MB over N = {', '.join(str(r[0]) for r in rows)}  [{verdict}]")
    if len(rows) > 1:
        slope = (rows[-1][1]["rss_mb"] - rows[0][1]["rss_mb"]) * 1024 / (rows[-1][0] - rows[0][0])
        print(f"RSS growth {slope:.1f} KB per case (the loaded suite and per-case counters; results are streamed)")
    sys.exit(0 if verdict == "ok" else 1)


if __name__ == "__main__":
    main()
