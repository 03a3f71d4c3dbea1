"""What a mocked tool call costs specrun's mock MCP server: ``--calls`` tools/call (default 1,000)
made by the ``mcp`` SDK's client, in a process of its own (its CPU is not the server's), against
one case's mocks served by specrun in this process.

Prints, per event loop of the server (asyncio; uvloop, which specrun runs on where it is
installed) and client mode (``auto``: the SDK's default, ``legacy``: the initialize handshake), the
server's CPU-ms per call (this process's user + system time over the calls) and the client's
wall-ms per call (one call at a time, loopback).

    python bench/mocks_bench.py [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys

from specrun._mocks.server import MockServer

CLIENT = """
import asyncio, sys, time
from mcp import Client

async def main(url, mode, calls):
    async with Client(url, mode=mode) as client:
        await client.call_tool("lookup", {"id": 0})  # warm: connection, handshake
        start = time.perf_counter()
        for i in range(calls):
            await client.call_tool("lookup", {"id": i})
        print((time.perf_counter() - start) * 1000 / calls)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(calls: int, mode: str) -> tuple[float, float]:
    server = MockServer()
    await server.start()
    try:
        mocks = server.open([{"name": "lookup", "input_schema": {"type": "object"}, "returns": {"status": "ok"}}])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CLIENT, mocks.url, mode, str(calls), stdout=asyncio.subprocess.PIPE
        )
        before = cpu()
        out, _ = await proc.communicate()
        spent = cpu() - before
        assert proc.returncode == 0 and len(mocks.calls) == calls + 1, (proc.returncode, len(mocks.calls))
        return spent * 1000 / (calls + 1), float(out)
    finally:
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    import uvloop

    for loop, run in (("asyncio", asyncio.run), ("uvloop", uvloop.run)):
        for mode in ("auto", "legacy"):
            server_ms, wall_ms = run(measure(args.calls, mode))
            print(f"{loop}, client mode={mode}: server {server_ms:.3f} CPU-ms per call, client {wall_ms:.3f} wall-ms")


if __name__ == "__main__":
    main()
