"""``specrun init``: a starter project that runs offline and passes, to edit into a real one.

It writes ``specrun.yaml`` (the project root; ``suites:`` is what a plain ``specrun`` runs), an
``agent.yaml`` with a small Python agent, a suite showing the main assertion types, the JSON
Schemas of the installed plugins under ``.specrun/schemas/`` with a ``yaml-language-server``
line in each YAML file pointing at its schema (editor completion and checks), and a
``.gitignore`` for what runs leave behind: ``.specrun/`` (result streams under
``.specrun/runs/``, history) but its schemas, and the model cache. An existing file is never
overwritten, and every path is checked before the first is written (a file where a folder
must be, a ``.gitignore`` that is no UTF-8 text): any problem, and nothing is written. An
existing ``.gitignore`` gets the missing lines appended, as ``cargo init`` does.
"""

from __future__ import annotations

import json
import os
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
    """Write the starter project into ``folder``; the paths written (and each ``.gitignore``
    that changed). Every path is checked before any is written: a file that exists already, a
    file where a folder must be, a ``.gitignore`` that is no UTF-8 text file is a ``UsageError``
    naming each one with its fix. A write that fails anyway (a full disk) undoes the others."""
    planned = files(registry)
    problems = _blocked(folder, planned)
    updates: dict[str, tuple[bytes | None, str]] = {}
    for name, lines in ((".gitignore", GITIGNORE), (".specrun/.gitignore", KEEP_SCHEMAS)):
        path = folder / name
        if name != ".gitignore" and not os.path.lexists(path):
            continue  # only a run before init writes .specrun/.gitignore (`*`, hiding the schemas too)
        try:
            old = _read_gitignore(path)
        except _Unreadable as exc:
            problems.append(exc.args)
            continue
        text = _with_lines(old.decode("utf-8") if old is not None else "", lines)
        if text is not None:
            updates[name] = (old, text)
    if len(problems) == 1:
        raise UsageError(f"init: {problems[0][0]}; nothing was written ({problems[0][1]})")
    if problems:
        raise UsageError("init: nothing was written:" + "".join(f"\n  {what} ({fix})" for what, fix in problems))
    _write_all(folder, planned, updates)
    return [*planned, *updates]


class _Unreadable(Exception):
    """A ``.gitignore`` init cannot add its lines to: ``(what is wrong, the fix)``."""


def _blocked(folder: Path, planned: dict[str, str]) -> list[tuple[str, str]]:
    """What stops the files of ``planned`` from being created in ``folder``: ``(what, fix)`` pairs."""
    problems = []
    # lexists: a dangling symbolic link counts, or writing it would create its target elsewhere
    existing = sorted(p for p in [*planned, "specrun.yml", "agent.yml"] if os.path.lexists(folder / p))
    if existing:
        problems.append(
            (
                f"{folder.resolve()} has a project already ({', '.join(existing)} exist{'s' * (len(existing) == 1)})",
                "specrun init never overwrites: move them away or init another folder",
            )
        )
    in_the_way: dict[Path, str] = {}  # a file where a folder must be: the first file needing it
    writable: set[Path] = set()  # the existing folders init creates something in
    for name in planned:
        parents = list(reversed((folder / name).parents))  # from the outermost
        for parent in parents:
            if os.path.lexists(parent) and not parent.is_dir():
                in_the_way.setdefault(parent, str(folder / name))
                break
        else:
            writable.add(next(p for p in reversed(parents) if p.is_dir()))
    for path, name in in_the_way.items():
        problems.append((f"{path} is a file, but init writes {name} under a folder of that name", f"move {path} away"))
    for path in sorted(writable):
        if not os.access(path, os.W_OK | os.X_OK):
            problems.append((f"the folder {path} is not writable", "check its permissions, or init another folder"))
    return problems


def _read_gitignore(path: Path) -> bytes | None:
    """The bytes of ``path`` (None when there is none yet), checked to be UTF-8 text init can rewrite."""
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise _Unreadable(f"{path} is {kind}", f"move it away: init writes its ignore lines into a file {path.name}")
    try:
        data = path.read_bytes()
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _Unreadable(
            f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})",
            "save it as UTF-8, or move it away, and rerun",
        ) from None
    except OSError as exc:
        raise _Unreadable(f"cannot read {path}: {exc.strerror or exc}", "check its permissions") from None
    if not os.access(path, os.W_OK):
        raise _Unreadable(f"{path} is not writable", "check its permissions")
    return data


def _with_lines(old: str, text: str) -> str | None:
    """``old`` with the lines of ``text`` (a comment, then patterns) it lacks; None when it lacks none."""
    have = {line.strip() for line in old.splitlines()}
    comment, *lines = text.splitlines()
    missing = [line for line in lines if line not in have]
    if not missing:
        return None
    lead = "" if not old or old.endswith("\n") else "\n"
    return old + lead + "\n".join([comment, *missing]) + "\n"


def _write_all(folder: Path, planned: dict[str, str], updates: dict[str, tuple[bytes | None, str]]) -> None:
    """Create the files of ``planned`` and write ``updates`` (old bytes or None, new text); when
    a write fails, undo the others and raise a ``UsageError`` saying which failed."""
    done: list[tuple[Path, bytes | None]] = []  # what was created (None) or changed (its old bytes), in order
    path = folder
    try:
        for name, (old, text) in [*((n, (None, t)) for n, t in planned.items()), *updates.items()]:
            path = folder / name
            for parent in reversed(path.parents):
                if not os.path.lexists(parent):
                    parent.mkdir()
                    done.append((parent, None))
            _put(path, text, old, done)
    except OSError as exc:
        left = _undo(done)
        undone = "nothing was written" if not left else f"could not remove what it wrote: {', '.join(left)}"
        raise UsageError(
            f"init: cannot write {exc.filename or path}: {exc.strerror or exc}; {undone}"
            " (free some space or fix the permissions, and rerun)"
        ) from None


def _put(path: Path, text: str, old: bytes | None, done: list[tuple[Path, bytes | None]]) -> None:
    """Write one file: a new one with "x", so that a file that appeared since the checks is
    never overwritten; noted in ``done`` as soon as it is ours to undo."""
    if old is not None:
        done.append((path, old))
        path.write_text(text, "utf-8")
        return
    with open(path, "x", encoding="utf-8") as fh:
        done.append((path, None))  # before writing: a write that fails leaves the file behind
        fh.write(text)


def _undo(done: list[tuple[Path, bytes | None]]) -> list[str]:
    """Put back what ``_write_all`` did, newest first; the paths it could not put back."""
    left = []
    for path, old in reversed(done):
        try:
            if old is not None:
                path.write_bytes(old)
            elif path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()
        except OSError:
            left.append(str(path))
    return left
