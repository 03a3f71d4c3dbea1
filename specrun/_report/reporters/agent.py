"""A report written by a project agent (``-r agents:ID``): it receives ``{report, format, options}``.

The report is the JSON report's document; the agent's answer (text, or JSON for structured
output) is written to the ``-o`` file, atomically.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ..._core.data import Context, Message
from ..._core.errors import SpecrunError
from ..._core.kinds import Reporter
from ..._core.redact import redact_json
from ..outputs import atomic_writer
from ._common import load
from .json_report import write

FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".json": "json", ".xml": "xml"}


class AgentReporter(Reporter):
    name = "agent"
    description = "Asks a project agent (-r agents:ID) to write the report from {report, format, options}."
    extensions = ()  # chosen with -r, never by a file extension
    by_agent = True  # writes every -o file but the stream when -r agents:ID is given

    async def run_finished(self, summary: dict[str, Any], stream: Path) -> None:
        agent_id = self.options["agent"].removeprefix("agents:")
        buffer = io.StringIO()
        write(load(summary, stream), buffer)
        payload = {
            "report": json.loads(buffer.getvalue()),
            "format": FORMATS.get(self.path.suffix.lower(), "text"),
            "options": {"verbose": bool(self.options.get("verbose")), "include_outputs": True},
        }
        context = Context(case_id="report", metadata={"test_mode": "reporter", "format": payload["format"]})
        message = Message("user", json.dumps(payload, ensure_ascii=False, allow_nan=False))
        try:
            response = await self.options["call_agent"](agent_id, [message], context)
        except SpecrunError:
            raise
        except Exception as exc:
            raise SpecrunError(f"reporter agent {agent_id!r} failed: {type(exc).__name__}: {exc}") from exc
        if not response.text.strip():
            raise SpecrunError(f"reporter agent {agent_id!r} returned an empty report")
        with atomic_writer(self.path) as out:
            out.write(redact_json(response.text))  # the agent can read the environment
