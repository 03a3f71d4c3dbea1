"""Shared by the benchmark scripts: start the loopback model server, run specrun, measure it."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECRUN = str(Path(sys.executable).with_name("specrun"))


class Server:
    """tests/support/llm_server.py in its own process, so its CPU is not counted as specrun's."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "support" / "llm_server.py"), *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def cpu(self) -> float:
        """CPU seconds the server process has used so far (user + system)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def run_specrun(args: list[str], cwd: Path) -> dict[str, float]:
    """Wall seconds, CPU seconds (user+sys) and peak RSS (MB) of one specrun process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [SPECRUN, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env()
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024, "code": proc.returncode, "stderr": proc.stderr}


def write_suite(path: Path, cases: list[dict]) -> None:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))


def http_agent(folder: Path, base_url: str, extra: str = "") -> None:
    (folder / "specrun.yaml").write_text("timeout: 60s\n")
    (folder / "agent.yaml").write_text(
        f"target:\n  type: http\n  url: {base_url}/chat/completions\n  format: openai\n{extra}"
    )


def env() -> dict[str, str]:
    """The environment as a user's: bytecode caching on (a sandbox may switch it off)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
