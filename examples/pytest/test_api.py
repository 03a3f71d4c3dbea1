"""Agent Kernel's API-testing example, with the server's readiness polled instead of a 15 s sleep."""

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import pytest_asyncio

from specrun.testing import Mode, Test

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read()


async def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Poll ``url`` until it answers; fail early if the server exits, or after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the API server exited with code {proc.returncode}")
        try:
            await asyncio.to_thread(get, url)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the API server did not answer {url} within {timeout:g}s") from None
            await asyncio.sleep(0.1)


async def make_api_call(base_url: str, message: str) -> str:
    def post() -> str:
        request = urllib.request.Request(
            f"{base_url}/chat",
            data=json.dumps({"message": message}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())["response"]

    return await asyncio.to_thread(post)


@pytest_asyncio.fixture(scope="session")
async def api_server():
    # Start the API server
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), "--port", str(port)],
        stdout=sys.stdout,
        stderr=sys.stderr,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_until_up(f"{url}/health", proc)  # Wait for server to start
        yield url
    finally:
        proc.terminate()
        proc.wait()


@pytest.mark.asyncio
async def test_api_endpoint(api_server):
    # Test API responses using the Test.compare method
    response = await make_api_call(api_server, "Who won the 1996 cricket world cup?")
    Test.compare(
        actual=response,
        expected=["Sri Lanka won the 1996 cricket world cup"],
        user_input="Who won the 1996 cricket world cup?",
        mode=Mode.LLM,  # Use llm mode for API testing
    )


@pytest.mark.asyncio
async def test_api_through_a_target_mapping(api_server):
    # The same server as a specrun http target: Test sends, then expects.
    target = {
        "type": "http",
        "url": f"{api_server}/chat",
        "format": "template",
        "body": {"message": "{{input}}"},
        "output": "response",
    }
    async with Test(target, mode=Mode.SCORE) as client:
        await client.send("Which countries hosted the tournament?")
        await client.expect("Co-hosted by India, Pakistan and Sri Lanka.")
