"""Commands a test starts side by side: two independent processes started together, then
finished one by one, overlap their start-ups (python, imports) on the machine's second core."""

from __future__ import annotations

import subprocess


def finish(process: subprocess.Popen[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """What ``subprocess.run(..., capture_output=True, text=True, timeout=...)`` returns for a
    process started with both streams piped; killed, as ``run`` does it, past ``timeout``."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
