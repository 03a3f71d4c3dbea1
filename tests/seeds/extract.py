"""Every example in the three seed files (``seed_files/``), found by shape, with its line.

The seeds are the designs specrun re-creates (see ``seed_files/README.md``): V2 is Markdown
with fenced blocks; V1 and Agent Kernel's page lost their fences when they were saved, so
their examples are found by what they look like: a run of ``{"id"...}`` lines, a ``{`` ...
``}`` object at the left margin, a ``yao agent test`` command (with ``\\`` continuations), a
Python block starting at ``import``/``@pytest...``/``def``, a ``# test-config.yaml`` block.

``examples(seed)`` lists them all; each :class:`Example` knows its kind and whether it is a
case, an assertion, a command or a report shape. Suites in the seeds are run as they are
written; only a command's ``yao agent test`` becomes ``specrun`` (see ``command_args``).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SEED_DIR = Path(__file__).parent / "seed_files"
V1 = "003_41b389f1e69677df.txt"  # Yao's agent test design (V1)
V2 = "000_a1f80e7900e98d07.txt"  # Yao's agent test design V2
AK = "004_cb4c70334189ce44.txt"  # Agent Kernel's automated-testing page

# Kinds: "jsonl" (a block of suite text: cases one per line or spread over lines, // comments),
# "json" (one object at the left margin), "command" (a shell command line), "python",
# "typescript", "go", "yaml", "bash" (other shell), "text" (a layout or a tree).


@dataclass(frozen=True)
class Example:
    """One example of a seed: its text as written and where it starts (1-based line)."""

    seed: str
    line: int
    kind: str
    text: str
    heading: str = ""  # the nearest heading or title line above it

    @property
    def id(self) -> str:
        """A stable test id: ``v1:123`` (seed and line)."""
        return f"{SHORT[self.seed]}:{self.line}"

    def values(self, placeholders: bool = False) -> list[Any] | None:
        """The JSON values in a ``jsonl``/``json`` example, read as V2's JSONL is (values one
        per line or spread over lines, ``//`` comment lines); None if it is not JSON (it holds
        ``...`` placeholders). With ``placeholders``, ``{...}`` and ``[...]`` read as empty
        (for report shapes, whose field names are what counts)."""
        if self.kind not in ("jsonl", "json"):
            return None
        body = "\n".join(line for line in self.text.splitlines() if not line.lstrip().startswith(("//", "#")))
        if placeholders:
            body = body.replace("{...}", "{}").replace("[...]", "[]").replace('"..."', '""')
        decoder, values, i = json.JSONDecoder(), [], 0
        try:
            while True:
                while i < len(body) and body[i].isspace():
                    i += 1
                if i == len(body):
                    return values
                value, i = decoder.raw_decode(body, i)
                values.append(value)
        except json.JSONDecodeError:
            return None

    @property
    def role(self) -> str:
        """What it is for: ``cases`` (a runnable suite), ``assertion`` (one assertion to run
        inside a case), ``shape`` (a report or record layout), ``command``, ``code``, ``config``
        or ``other`` (placeholders, trees, layouts)."""
        if self.kind == "command":
            return "command"
        if self.kind in ("python", "typescript", "go"):
            return "code"
        if self.kind == "yaml":
            return "config"
        values = self.values()
        if values is None and (self.values(placeholders=True) or [None])[0] is not None:
            return "shape" if "summary" in self.text else "other"
        if not values or not all(isinstance(v, dict) for v in values):
            return "other"
        if all("id" in v and ("input" in v or "simulator" in v) for v in values):
            return "cases"
        if len(values) == 1 and "type" in values[0] and "id" not in values[0] and values[0]["type"] not in _RECORDS:
            return "assertion"
        return "shape"


_RECORDS = ("start", "result", "summary")
SHORT = {V1: "v1", V2: "v2", AK: "ak"}


def command_args(example: Example) -> list[str]:
    """A ``yao agent test ...`` command's arguments after ``yao agent test`` (specrun's)."""
    words = shlex.split(example.text.replace("\\\n", " "), comments=True)
    assert words[:3] == ["yao", "agent", "test"], example.text
    return words[3:]


@cache
def examples(seed: str) -> tuple[Example, ...]:
    """Every example of ``seed`` (one of ``V1``, ``V2``, ``AK``), in file order."""
    lines = (SEED_DIR / seed).read_text("utf-8").splitlines()
    if seed == V2:
        return tuple(_fenced(seed, lines))
    return tuple(_unfenced(seed, lines))


# Markdown (V2) -------------------------------------------------------------------------


def _fenced(seed: str, lines: list[str]) -> list[Example]:
    found: list[Example] = []
    heading, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") and not line.startswith("#!"):
            heading = line.lstrip("#").strip()
        fence = re.match(r"^```(\w*)\s*$", line)
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body, lang = lines[i + 1 : end], fence.group(1) or "text"
        if lang == "bash":
            found.extend(_commands(seed, body, i + 2, heading, keep_other=True))
        else:
            found.append(Example(seed, i + 2, lang, "\n".join(body), heading))
        i = end + 1
    return found


# Plain text (V1, Agent Kernel) ---------------------------------------------------------

_PY_START = re.compile(r"^(import |from \w[\w.]* import |@pytest|pytestmark|async def |def |\w+ = Test\()")
_HEADING = re.compile(r"^[A-Z][\w ./()&'-]{0,60}$")  # a short title line without a full stop


def _unfenced(seed: str, lines: list[str]) -> list[Example]:
    found: list[Example] = []
    heading, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("yao agent test") or re.match(
            r"^(cd |pytest( -| \S+\.py|$)|pip install|export )", line
        ):
            j = i
            while lines[j].endswith("\\"):
                j += 1
            found.extend(_commands(seed, lines[i : j + 1], i + 1, heading, keep_other=True))
            i = j + 1
        elif line.startswith('{"'):  # a run of one-line JSON values
            j = i
            while j + 1 < len(lines) and lines[j + 1].startswith('{"'):
                j += 1
            found.append(Example(seed, i + 1, "jsonl", "\n".join(lines[i : j + 1]), heading))
            i = j + 1
        elif line == "{":  # an object spread over lines, up to its closing brace at the margin
            j = next(k for k in range(i + 1, len(lines)) if lines[k] == "}")
            found.append(Example(seed, i + 1, "json", "\n".join(lines[i : j + 1]), heading))
            i = j + 1
        elif _PY_START.match(line):
            j = _python_end(lines, i)
            found.append(Example(seed, i + 1, "python", "\n".join(lines[i:j]).rstrip(), heading))
            i = j
        elif line.startswith("# ") and line.endswith(".yaml"):
            j = i + 1
            while j < len(lines) and re.match(r"^(\s+\S|\w+:)", lines[j]):
                j += 1
            found.append(Example(seed, i + 1, "yaml", "\n".join(lines[i:j]), heading))
            i = j
        else:
            if _HEADING.match(line) and line.strip():
                heading = line.strip()
            i += 1
    return found


def _python_end(lines: list[str], start: int) -> int:
    """The line after a Python block that starts at ``start``: it goes on through indented
    lines, blank lines and further top-level statements, and stops at prose."""
    j, end = start + 1, start + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip() or line.startswith((" ", "\t", "#")) or _PY_START.match(line):
            if line.strip():
                end = j + 1
            j += 1
            continue
        break
    return end


def _commands(seed: str, body: list[str], first: int, heading: str, keep_other: bool) -> list[Example]:
    """The commands of a shell block: each ``yao agent test`` (continuations joined) is a
    ``command``; other lines (``cd``, ``pytest``, ``export``) are ``bash`` examples."""
    found = []
    i = 0
    while i < len(body):
        line = body[i]
        j = i
        while j < len(body) - 1 and body[j].endswith("\\"):
            j += 1
        text = "\n".join(body[i : j + 1])
        if line.lstrip().startswith("yao agent test"):
            found.append(Example(seed, first + i, "command", text.strip(), heading))
        elif line.strip() and not line.startswith("#") and keep_other:
            found.append(Example(seed, first + i, "bash", text, heading))
        i = j + 1
    return found
