"""Sources that need no model: suite files and folders, and a direct message.

Implements the ``file`` source (``-i path``, ``-i file:path``; any existing path) and the
``message`` source (``-i "hello"``; whatever no other source claims).
"""

from __future__ import annotations

import os
from pathlib import Path

from specrun.plugin import Source, SourceContext, Suite, UsageError

SUITE_EXTENSIONS = (".jsonl", ".yaml", ".yml", ".json")


class FileSource(Source):
    name = "file"
    description = "A suite file, or a folder searched recursively for suite files."
    priority = 10

    @classmethod
    def claims(cls, spec: str) -> bool:
        # A missing `suite.jsonl` or `suites/` is a typo to report, not a message to send.
        looks_like_path = not any(c.isspace() for c in spec) and (
            spec.lower().endswith(SUITE_EXTENSIONS) or spec.endswith(("/", os.sep))
        )
        return looks_like_path or os.path.exists(spec)  # os.path: False for a name too long

    async def load(self, spec: str, context: SourceContext) -> list[Suite]:
        if not os.path.exists(spec):
            raise UsageError(f"no such file or directory: {spec}")
        return context.loader.load([Path(spec)])


class MessageSource(Source):
    name = "message"
    description = "One message sent to the agent as a single case (direct-message mode)."
    priority = 1000

    @classmethod
    def claims(cls, spec: str) -> bool:
        return True

    async def load(self, spec: str, context: SourceContext) -> list[Suite]:
        case = {"id": "message", "input": spec}
        return [context.loader.load_data([case], "<message>", Path.cwd(), generated=False)]
