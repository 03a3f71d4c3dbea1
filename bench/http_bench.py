"""specrun against an OpenAI-format HTTP agent on loopback that answers after 100 ms.

1,000 cases x 3 assertions at --parallel 50 and 200. Goal: wall at most 1.3x the ideal
(ceil(N/P) x 0.1 s) plus start-up, and at most 2 CPU-ms per case. promptfoo measured on the
same work: 9x and 30x the ideal, 16 CPU-ms per case.

For scale, each level also times the floor: a plain aiohttp loop (no engine, no assertions,
no reports) sending the same requests at the same parallelism to the same server.

    python bench/http_bench.py [--cases 1000] [--parallel 50 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from _common import Server, http_agent, run_specrun, write_suite


def plain_client(url: str, cases: int, parallel: int) -> float:
    """Wall seconds for ``cases`` requests by ``parallel`` bare aiohttp workers (the floor)."""
    import aiohttp
    import uvloop

    async def run() -> float:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            numbers = iter(range(cases))

            async def worker() -> None:
                for i in numbers:
                    body = json.dumps({"messages": [{"role": "user", "content": f"question number {i}"}]})
                    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as reply:
                        json.loads(await reply.read())

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(parallel)))
            return time.perf_counter() - started

    return uvloop.run(run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--parallel", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with Server("--delay", "0.1") as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        http_agent(folder, server.base_url)
        cases = [
            {
                "id": f"case-{i:05d}",
                "input": f"question number {i}",
                "assertions": [
                    {"type": "contains", "value": f"number {i}"},
                    {"type": "regex", "value": "^echo: "},
                    {"type": "not_contains", "value": "error"},
                ],
            }
            for i in range(args.cases)
        ]
        write_suite(folder / "suite.jsonl", cases)
        write_suite(folder / "one.jsonl", cases[:1])
        for parallel in args.parallel:
            ideal = math.ceil(args.cases / parallel) * 0.1
            server_cpu = server.cpu()
            # Each run beside a 1-case run that gives its start-up: the machine's speed drifts
            # over minutes, and start-up is as long as the run itself at --parallel 200.
            pairs = [
                (
                    run_specrun(["one.jsonl", "-o", "one-out.jsonl"], folder),
                    run_specrun(["suite.jsonl", "-o", "out.jsonl", "--parallel", str(parallel)], folder),
                )
                for _ in range(args.repeat)
            ]
            server_ms = (server.cpu() - server_cpu) * 1000 / ((args.cases + 1) * args.repeat)
            assert all(r["code"] == 0 for pair in pairs for r in pair), pairs[0][1]["stderr"][-2000:]
            runs = [run for _, run in pairs]
            startup = statistics.median(one["wall"] - 0.1 for one, _ in pairs)
            wall = statistics.median(r["wall"] for r in runs)
            ratio = statistics.median((run["wall"] - (one["wall"] - 0.1)) / ideal for one, run in pairs)
            cpu_ms = statistics.median(r["cpu"] for r in runs) * 1000 / args.cases
            url = f"{server.base_url}/chat/completions"
            floor = statistics.median(plain_client(url, args.cases, parallel) for _ in range(args.repeat))
            verdict = "ok" if ratio <= 1.3 and cpu_ms <= 2.0 else "MISSED"
            print(
                f"--parallel {parallel}: wall {wall:.2f} s, start-up {startup:.2f} s, ideal {ideal:.2f} s, "
                f"(wall - start-up) / ideal = {ratio:.2f}x, {cpu_ms:.2f} CPU-ms/case, "
                f"peak RSS {max(r['rss_mb'] for r in runs):.0f} MB, server {server_ms:.2f} CPU-ms/request  [{verdict}]"
            )
            print(f"    floor, a plain aiohttp loop: {floor:.2f} s = {floor / ideal:.2f}x the ideal")


if __name__ == "__main__":
    main()
