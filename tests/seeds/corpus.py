"""Running the seeds' examples: the example project, its model, and the command line.

``project(tmp_path)`` copies ``project/`` (the seeds' agents: V1's keyword agent, V2's expense
assistant, simulator, validator, generator, reporter agents) to a temporary folder. V1's keyword
agent is a model, as in the seed; its model is :class:`KeywordModel`, an OpenAI-compatible
loopback server (``tests/support/llm_server.py``) whose answers are keyword JSON. ``specrun``
runs a seed command line in a folder of that project, with ``yao agent test`` read as
``specrun`` (the one change a command gets).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.cli import run_cli
from support.llm_server import LLMServer, _last_user_text

from .extract import Example, command_args

PROJECT = Path(__file__).parent / "project"

# What V1's keyword agent answers where the seed expects a particular output (T005's expected).
CANNED = {"Text input": {"keywords": ["keyword1", "keyword2"]}}


def keywords(text: str) -> dict[str, Any]:
    """A keyword model's answer: the words of the text, whether it asks something, a confidence."""
    if text in CANNED:
        return CANNED[text]
    words = [w for w in re.findall(r"\w+", text.lower()) if len(w) > 2 or not w.isascii()]
    return {"keywords": words[:5], "need_search": text.rstrip().endswith("?"), "confidence": 0.99}


def keyword_model() -> LLMServer:
    """The loopback model behind V1's keyword agent (``SEEDS_MODEL_BASE``), started."""
    return LLMServer(lambda body: {"content": json.dumps(keywords(_last_user_text(body)))}).start()


def project(tmp_path: Path) -> Path:
    """A fresh copy of the example project."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def write_suite(path: Path, *examples: Example) -> Path:
    """The examples' text, as written in the seed, as the suite file ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(e.text for e in examples) + "\n", "utf-8")
    return path


def specrun(args: list[str], cwd: Path, server: LLMServer | None = None) -> subprocess.CompletedProcess[str]:
    """``specrun ARGS`` in ``cwd``, the keyword model's address in the environment."""
    env = dict(os.environ)
    if server is not None:
        env["SEEDS_MODEL_BASE"] = server.base_url
    return run_cli(args, cwd, env)


def run_command(example: Example, cwd: Path, server: LLMServer | None = None) -> subprocess.CompletedProcess[str]:
    """A seed's ``yao agent test ...`` line, run as ``specrun ...`` in ``cwd``."""
    return specrun(command_args(example), cwd, server)


def stream_records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every field name of a JSON value as a path: ``summary.total``, ``results[].id``."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            paths |= key_paths(child, path)
    elif isinstance(value, list):
        for child in value:
            paths |= key_paths(child, f"{prefix}[]")
    return paths
