"""Offline set-up for the examples: a loopback model server that judges llm mode by simple rules.

The judge model is ``openai/gpt-4o-mini`` as far as litellm knows, but every request goes to
the repository's scripted OpenAI-compatible server on 127.0.0.1 (``tests/support``), which
scores an answer by the share of the expected answer's words it contains. Drop this file and
set ``OPENAI_API_KEY`` to judge with a real model.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from support.llm_server import LLMServer, data_section

STOPWORDS = {"a", "an", "the", "of", "was", "is", "by", "and", "in", "to"}
_SERVER: LLMServer | None = None


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


def judge(body: dict[str, Any]) -> dict[str, Any]:
    """Score = the share of the expected answer's words found in the actual answer."""
    prompt = str(body["messages"][-1]["content"])
    found = re.search(r"EXPECTED ANSWER:\s*(.*?)\s*THE MATERIAL TO JUDGE", prompt, re.S)
    if not found:
        return {"content": json.dumps({"score": 0, "reason": "not a judge prompt"})}
    expected, actual = content_words(found.group(1)), content_words(data_section(prompt)[0]["answer"])
    score = len(expected & actual) / len(expected) if expected else 0.0
    missing = ", ".join(sorted(expected - actual)) or "nothing"
    return {"content": json.dumps({"score": round(score, 2), "reason": f"missing: {missing}"})}


def pytest_configure(config: Any) -> None:
    global _SERVER
    _SERVER = LLMServer(responder=judge).start()
    os.environ["SPECRUN_TEST__LLM__MODEL"] = "openai/gpt-4o-mini"
    os.environ["OPENAI_API_BASE"] = _SERVER.base_url
    os.environ["OPENAI_API_KEY"] = "test"


def pytest_unconfigure(config: Any) -> None:
    if _SERVER is not None:
        _SERVER.stop()
