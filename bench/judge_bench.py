"""The judge workload: every case is an agent turn and an ``llm`` judge call, both on loopback.

1,000 cases (``contains`` + ``llm``) against an OpenAI-format HTTP agent, judged by an
``openai/`` model on the same loopback server (tests/support/llm_server.py in its own process,
answering every request after 100 ms, judge prompts with a passing verdict). The ideal is
ceil(N/P) x 0.2 s (agent turn, then judge call). Goals (issue 14): wall at most 2x the ideal at
``-j 50`` and 4x at ``-j 200``, at most 4 CPU-ms per judged case, start-up included.

The floor is measured in the same run: a bare aiohttp loop (no engine, no assertions, no
reports, no start-up) sending the same two requests per case at the same parallelism.

    python bench/judge_bench.py [--cases 1000] [--parallel 50 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _common import Server, http_agent, run_specrun, write_suite

DELAY = 0.1  # the server's answer time, agent and judge alike
GOALS = {50: 2.0, 200: 4.0}  # x ideal
CPU_GOAL_MS = 4.0


def floor(url: str, cases: int, parallel: int) -> tuple[float, float]:
    """Wall seconds and CPU-ms per case of ``parallel`` bare aiohttp workers doing each case's
    agent request then its judge request."""
    import aiohttp
    import uvloop

    async def run() -> float:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            numbers = iter(range(cases))

            async def post(content: str) -> str:
                body = json.dumps({"model": "judge", "messages": [{"role": "user", "content": content}]})
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as reply:
                    return json.loads(await reply.read())["choices"][0]["message"]["content"]

            async def worker() -> None:
                for i in numbers:
                    answer = await post(f"question number {i}")
                    json.loads(await post(f"judge this\n<<<BEGIN DATA 0>>>\n{json.dumps(answer)}\n<<<END DATA 0>>>"))

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(parallel)))
            return time.perf_counter() - started

    cpu = time.process_time()
    wall = uvloop.run(run())
    return wall, (time.process_time() - cpu) * 1000 / cases


def project(folder: Path, base_url: str, cases: int) -> None:
    http_agent(folder, base_url)
    (folder / "specrun.yaml").write_text(
        f"timeout: 60s\nmodel: openai/judge\nmodel_params:\n  api_base: {base_url}\n  api_key: unused\n"
    )
    write_suite(
        folder / "suite.jsonl",
        [
            {
                "id": f"case-{i:05d}",
                "input": f"question number {i}",
                "assertions": [
                    {"type": "contains", "value": f"number {i}"},
                    {"type": "llm", "criteria": "Repeats the question's number."},
                ],
            }
            for i in range(cases)
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--parallel", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with Server("--delay", str(DELAY), "--verdicts") as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        project(folder, server.base_url, args.cases)
        url = f"{server.base_url}/chat/completions"
        for parallel in args.parallel:
            ideal = math.ceil(args.cases / parallel) * 2 * DELAY
            runs, floors = [], []
            for _ in range(args.repeat):  # specrun and the floor interleaved: the machine drifts
                shutil.rmtree(folder / ".specrun-cache", ignore_errors=True)  # every judge call is made
                run = run_specrun(["suite.jsonl", "-q", "-o", "out.jsonl", "--parallel", str(parallel)], folder)
                assert run["code"] == 0, run["stderr"][-3000:]
                runs.append(run)
                floors.append(floor(url, args.cases, parallel))
            wall = statistics.median(r["wall"] for r in runs)
            cpu_ms = statistics.median(r["cpu"] for r in runs) * 1000 / args.cases
            floor_wall = statistics.median(f[0] for f in floors)
            floor_cpu = statistics.median(f[1] for f in floors)
            rows.append((parallel, ideal, wall, cpu_ms, floor_wall, floor_cpu))
    print(
        f"\n{args.cases} cases, contains + llm judge, medians of {args.repeat}\n"
        "| -j | ideal | specrun (x ideal) | specrun CPU ms/case | bare aiohttp floor (x ideal) | floor CPU ms/case |"
        "\n|---|---|---|---|---|---|"
    )
    met = True
    for parallel, ideal, wall, cpu_ms, floor_wall, floor_cpu in rows:
        goal = GOALS.get(parallel)
        ok = (goal is None or wall / ideal <= goal) and cpu_ms <= CPU_GOAL_MS
        met = met and ok
        print(
            f"| {parallel} | {ideal:.2f} s | {wall:.2f} s ({wall / ideal:.1f}x) | {cpu_ms:.2f} | "
            f"{floor_wall:.2f} s ({floor_wall / ideal:.1f}x) | {floor_cpu:.2f} |" + ("" if ok else "  MISSED")
        )
    print(f"goals: {', '.join(f'{g:g}x ideal at -j {p}' for p, g in GOALS.items())}, {CPU_GOAL_MS:g} CPU-ms/case")
    raise SystemExit(0 if met else 1)


if __name__ == "__main__":
    main()
