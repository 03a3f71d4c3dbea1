"""Test agents and servers imported from tests/agents by path: ``agents`` is also the OpenAI
Agents SDK's top-level package, so ``import agents.x`` depends on which was imported first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

AGENTS = Path(__file__).resolve().parent.parent / "agents"


def agent_module(name: str) -> ModuleType:
    """``tests/agents/<name>.py``, imported once under a name of its own."""
    key = f"specrun_test_agents_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, AGENTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
