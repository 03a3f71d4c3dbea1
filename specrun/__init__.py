"""specrun: test AI agents from declarative suites.

The public API for agents and plugin authors. Heavy dependencies (litellm, rich, click) are
never imported from here.
"""

from __future__ import annotations

import pluggy

from ._core.data import Context, Message, Response, ToolCall, Usage
from ._core.errors import EvaluationError, SpecrunError, TargetError

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("specrun")
"""Marks a plugin's hook implementation: ``@specrun.hookimpl``."""

__all__ = [
    "Context",
    "EvaluationError",
    "Message",
    "Response",
    "SpecrunError",
    "TargetError",
    "ToolCall",
    "Usage",
    "__version__",
    "hookimpl",
]
