"""``specrun init``: a starter project that runs offline and passes, to edit into a real one.

It writes ``specrun.yaml`` (the project root; ``suites:`` is what a plain ``specrun`` runs), an
``agent.yaml`` with a small Python agent, a suite showing the main assertion types, the JSON
Schemas of the installed plugins under ``.specrun/schemas/`` with a ``yaml-language-server``
line in each YAML file pointing at its schema (editor completion and checks), and a
``.gitignore`` for what runs leave behind: ``.specrun/`` (result streams under
``.specrun/runs/``, history) but its schemas, and the model cache. An existing file is never
overwritten: nothing is written then. An existing ``.gitignore`` gets the missing lines
appended, as ``cargo init`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._core.errors import UsageError
from .._load.schemas import agent_schema, compose, config_schema
from .registry import Registry

SCHEMAS = ".specrun/schemas"

CONFIG = f"""\
# yaml-language-server: $schema={SCHEMAS}/config.schema.json
# The project root: agent ids are folder paths from here. Every key: docs/cli.md, docs/models.md.
suites: [suites]   # what a plain `specrun` runs
timeout: 30s       # per case
"""

AGENT = f"""\
# yaml-language-server: $schema={SCHEMAS}/agent.schema.json
# The agent under test for the suites below this folder. Here a Python function; point
# `target` at yours: python:module:function, an http URL, a process or a model (docs/targets.md).
target: python:example_agent:answer
"""

AGENT_CODE = '''\
"""A small offline agent to start from: answers greetings, the return policy and order status."""

import re

from specrun import Response, ToolCall

ORDERS = {"1042": "shipped", "1043": "processing"}


def lookup_order(order_id):
    """The agent's tool: an order's status."""
    return {"order_id": order_id, "status": ORDERS.get(order_id, "unknown")}


def answer(messages, ctx):
    """Called once per case with the conversation so far; returns the agent's reply."""
    text = messages[-1].text.strip().lower()
    if text == "ping":
        return "pong"
    order = re.search(r"order #?(\\d+)", text)
    if order:
        result = lookup_order(order.group(1))
        return Response(result, tool_calls=[ToolCall("lookup_order", {"order_id": order.group(1)}, result)])
    if "return" in text or "refund" in text:
        return "You can return any item within 30 days of delivery for a full refund."
    return "Hello! I can help with your orders and returns."
'''

SUITE = f"""\
# yaml-language-server: $schema=../{SCHEMAS}/suite.schema.json
# Each case sends `input` to the agent (agent.yaml, the nearest one above this file) and checks
# the reply with its assertions. Run: specrun (all suites), specrun -m smoke (by tag), specrun -v.
# Every field: docs/suite-format.md; every assertion type: docs/assertions.md (specrun plugins).
name: Example agent
cases:
  - id: greets
    input: Hi there
    tags: [smoke]
    assertions:
      - {{type: icontains, value: hello}}          # text, ignoring case
      - {{type: not_contains, value: error}}

  - id: return-window
    name: States the return window
    input: How long do I have to return a jacket?
    tags: [policy]
    assertions:
      - {{type: regex, pattern: "\\\\b30 days\\\\b"}}   # RE2 syntax

  - id: order-status
    name: Looks the order up with its tool and answers in JSON
    input: "Where is my order #1042?"             # quoted: in YAML, " #" starts a comment
    tags: [orders]
    assertions:
      - {{type: tool_called, name: lookup_order, arguments: {{order_id: "1042"}}}}
      - {{type: json_path, path: $.status, value: shipped}}

  - id: exact-answer
    input: ping
    expected: pong                                  # no assertions: compared with equals
    tags: [smoke]
"""

GITIGNORE = """\
# specrun: result streams (.specrun/runs/), run history and the model response cache
.specrun/*
!.specrun/schemas/
.specrun-cache/
"""

KEEP_SCHEMAS = """\
# specrun init: the editor schemas are part of the project
!schemas/
!schemas/*
"""


def files(registry: Registry) -> dict[str, str]:
    """What ``init`` writes, by path relative to the project folder (the ``.gitignore`` apart)."""
    schemas = {"suite": compose(registry), "agent": agent_schema(registry), "config": config_schema(registry)}
    written = {
        "specrun.yaml": CONFIG,
        "agent.yaml": AGENT,
        "example_agent.py": AGENT_CODE,
        "suites/example.yaml": SUITE,
    }
    for kind, schema in schemas.items():
        written[f"{SCHEMAS}/{kind}.schema.json"] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return written


def scaffold(folder: Path, registry: Registry) -> list[str]:
    """Write the starter project into ``folder``; the paths written (and ``.gitignore`` when it
    changed). A file that exists already is a ``UsageError`` naming each one, and nothing is written."""
    planned = files(registry)
    existing = sorted(p for p in [*planned, "specrun.yml", "agent.yml"] if (folder / p).exists())
    if existing:
        raise UsageError(
            f"init: {folder.resolve()} has a project already ({', '.join(existing)} exist); nothing was"
            " written (specrun init never overwrites: move them away or init another folder)"
        )
    for path, text in planned.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
    written = list(planned)
    if _update_gitignore(folder / ".gitignore", GITIGNORE):
        written.append(".gitignore")
    private = folder / ".specrun" / ".gitignore"  # a run before init wrote `*` there: keep the schemas
    if private.exists() and _update_gitignore(private, KEEP_SCHEMAS):
        written.append(".specrun/.gitignore")
    return written


def _update_gitignore(path: Path, text: str) -> bool:
    """Add the lines of ``text`` (a comment, then patterns) that ``path`` lacks (all to a new file)."""
    old = path.read_text("utf-8") if path.exists() else ""
    have = {line.strip() for line in old.splitlines()}
    comment, *lines = text.splitlines()
    missing = [line for line in lines if line not in have]
    if not missing:
        return False
    lead = "" if not old or old.endswith("\n") else "\n"
    path.write_text(old + lead + "\n".join([comment, *missing]) + "\n", "utf-8")
    return True
