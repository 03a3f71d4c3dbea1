"""Find Debian's headless Chromium for browser tests, installing it once when missing.

``find_chromium()`` returns the path of the binary, or raises ``ChromiumUnavailable`` with the
reason (not root, no apt-get, install failed): a test then skips, or fails in CI
(``support.missing``).
Installation is tried at most once per process: ``apt-get install -y chromium``, and when that
fails, ``apt-get update`` and the install again.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")

HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


class ChromiumUnavailable(Exception):
    """Chromium is not installed and could not be installed; the message says why."""


def _existing() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name) if not os.path.isabs(name) else (name if os.access(name, os.X_OK) else None)
        if found:
            return found
    return None


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], capture_output=True, text=True, env=env, timeout=900, check=False)


@functools.cache
def find_chromium() -> str:
    """The Chromium binary; installs Debian's ``chromium`` package once if it is missing."""
    found = _existing()
    if found:
        return found
    if not shutil.which("apt-get"):
        raise ChromiumUnavailable("chromium is not installed and apt-get is not available")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise ChromiumUnavailable("chromium is not installed and installing it needs root")
    result = _apt("install", "-y", "--no-install-recommends", "chromium")
    if result.returncode != 0:
        update = _apt("update")
        if update.returncode != 0:
            tail = (update.stderr or update.stdout).strip().splitlines()[-1:]
            raise ChromiumUnavailable(f"apt-get update failed: {' '.join(tail)}")
        result = _apt("install", "-y", "--no-install-recommends", "chromium")
    found = _existing()
    if result.returncode != 0 or not found:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
        raise ChromiumUnavailable(f"apt-get install chromium failed: {' '.join(tail)}")
    return found
