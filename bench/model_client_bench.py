"""The candidate model clients of issue 14, each in a fresh process against the loopback server.

Each candidate makes N chat-completion calls with P in flight to tests/support/llm_server.py
(its own process, answering after 10 ms) and reports its CPU: the import and set-up, and the
calls, per call. ``processes`` spreads the litellm calls over K processes (each imports litellm).

    python bench/model_client_bench.py [--calls 1000] [--parallel 200] [--processes 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time

from _common import ROOT, Server, env

CANDIDATES = {
    "aiohttp": "bare aiohttp, one session (the floor)",
    "litellm-openai": "litellm.acompletion, openai/ route",
    "litellm-aiohttp_openai": "litellm.acompletion, aiohttp_openai/ route",
    "litellm-shared-client": "litellm.acompletion, openai/ route, one shared AsyncOpenAI client",
    "specrun": "specrun._models.client.ModelClient.complete (what judges call)",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _calls(send, calls: int, parallel: int) -> None:
    numbers = iter(range(calls))

    async def worker() -> None:
        for i in numbers:
            await send([{"role": "user", "content": f"question number {i}"}])

    await asyncio.gather(*(worker() for _ in range(parallel)))


def worker(candidate: str, base_url: str, calls: int, parallel: int) -> None:
    """Run one candidate in this process and print its figures as JSON."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    start = _cpu()

    if candidate == "aiohttp":
        import aiohttp

        async def main() -> float:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

                async def send(messages):
                    body = json.dumps({"model": "judge", "messages": messages})
                    headers = {"Content-Type": "application/json", "Authorization": "Bearer unused"}
                    async with session.post(f"{base_url}/chat/completions", data=body, headers=headers) as reply:
                        json.loads(await reply.read())

                ready = _cpu()
                await _calls(send, calls, parallel)
                return ready

    elif candidate.startswith("litellm"):
        import litellm

        litellm.suppress_debug_info = True
        route = "aiohttp_openai" if candidate == "litellm-aiohttp_openai" else "openai"
        extra = {}
        if candidate == "litellm-shared-client":
            from openai import AsyncOpenAI

            extra["client"] = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)

        async def main() -> float:
            async def send(messages):
                await litellm.acompletion(
                    model=f"{route}/judge", messages=messages, api_base=base_url, api_key="unused", **extra
                )

            ready = _cpu()
            await _calls(send, calls, parallel)
            return ready

    else:
        from specrun._models.client import ModelClient

        client = ModelClient("openai/judge", params={"api_base": base_url, "api_key": "unused"})

        async def main() -> float:
            await client.ready()
            ready = _cpu()
            await _calls(lambda messages: client.complete(messages, cache=False), calls, parallel)
            await client.aclose()
            return ready

    ready = asyncio.run(main())
    done = _cpu()
    print(json.dumps({"setup_s": ready - start, "call_ms": (done - ready) * 1000 / calls}))


def measure(candidate: str, base_url: str, calls: int, parallel: int, processes: int = 1) -> dict[str, float]:
    script = [sys.executable, __file__, "--worker", candidate, "--url", base_url]
    share = [str(calls // processes), "--parallel", str(max(1, parallel // processes))]
    started = time.perf_counter()
    procs = [
        subprocess.Popen([*script, "--calls", *share], stdout=subprocess.PIPE, text=True, env=env())
        for _ in range(processes)
    ]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "setup_s": sum(o["setup_s"] for o in outs),
        "call_ms": sum(o["call_ms"] for o in outs) / processes,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2, help="for the spread-over-processes candidate")
    parser.add_argument("--only", nargs="*", default=list(CANDIDATES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, str(ROOT))
        worker(args.worker, args.url, args.calls, args.parallel)
        return
    with Server("--delay", "0.01") as server:
        print(f"{args.calls} calls, {args.parallel} in flight\n")
        print("| candidate | import + set-up CPU s | CPU ms per call | total CPU ms per call | wall s |")
        print("|---|---|---|---|---|")
        rows = [(c, CANDIDATES[c], 1) for c in args.only]
        rows.append(("litellm-openai", f"litellm openai/ spread over {args.processes} processes", args.processes))
        for candidate, label, processes in rows:
            m = measure(candidate, server.base_url, args.calls, args.parallel, processes)
            total = m["call_ms"] + m["setup_s"] * 1000 / args.calls
            print(
                f"| {label} | {m['setup_s']:.2f} | {m['call_ms']:.2f} | {total:.2f} | {m['wall_s']:.2f} |", flush=True
            )


if __name__ == "__main__":
    main()
