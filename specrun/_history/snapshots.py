"""Approved golden outputs ("snapshots") of cases: where each is stored, reading and rewriting it.

A snapshot lives beside its suite, in ``__snapshots__/<suite file>/<case id>[.<name>].txt``
(``.json`` for a structured output), or inline, as the ``value`` of the assertion in a YAML
suite. Rewriting an inline one loads the suite with ruamel.yaml's round-trip loader and changes
only that value, so the file's comments, order and layout stay as they were. The ``snapshot``
assertion, ``--update-snapshots`` and the viewer's approve button all go through ``Snapshot``;
what a failing verdict records (``to_details``) is enough to approve its output later.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._core.errors import EvaluationError
from .._report.outputs import atomic_writer

SNAPSHOT_DIR = "__snapshots__"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_LOCK = threading.Lock()  # one rewrite of a file at a time (parallel cases may share a suite)


def _file_name(case_id: str, name: str | None) -> str:
    stem = case_id + (f".{name}" if name else "")
    safe = _SAFE.sub("_", stem)[:100]
    if safe != stem:  # two ids that differ only in unsafe characters must not share a file
        safe += "-" + hashlib.blake2b(stem.encode(), digest_size=4).hexdigest()
    return safe


@dataclass
class Snapshot:
    """Where one case's snapshot is: ``suite`` (absolute), the case's ``pointer`` in it
    (``cases[3]``), its id, the assertion's ``type`` and its ``name`` when a case has several,
    and whether it is ``inline``."""

    suite: str
    pointer: str
    case_id: str
    type: str
    name: str | None = None
    inline: bool = False

    def to_details(self) -> dict[str, Any]:
        """What a verdict records so that its output can be approved later."""
        return {"snapshot": asdict(self)}

    @classmethod
    def from_details(cls, details: Any) -> Snapshot | None:
        """The snapshot a verdict's details name, or None."""
        data = details.get("snapshot") if isinstance(details, dict) else None
        if not isinstance(data, dict):
            return None
        suite, pointer, case_id, kind, name = (data.get(k) for k in ("suite", "pointer", "case_id", "type", "name"))
        if not (
            isinstance(suite, str) and isinstance(pointer, str) and isinstance(case_id, str) and isinstance(kind, str)
        ):
            return None
        return cls(suite, pointer, case_id, kind, name if isinstance(name, str) else None, bool(data.get("inline")))

    def files(self) -> list[Path]:
        """The text and the JSON file a snapshot kept beside the suite may be in."""
        folder = Path(self.suite).parent / SNAPSHOT_DIR / Path(self.suite).name
        stem = _file_name(self.case_id, self.name)
        return [folder / f"{stem}.txt", folder / f"{stem}.json"]

    def read_file(self) -> tuple[bool, Any]:
        """``(found, value)`` of a snapshot kept in a file."""
        text_file, json_file = self.files()
        if text_file.is_file():
            return True, text_file.read_text("utf-8")
        if json_file.is_file():
            try:
                return True, json.loads(json_file.read_text("utf-8"))
            except ValueError as exc:
                raise EvaluationError(f"snapshot {json_file} is not JSON: {exc}") from None
        return False, None

    def write(self, value: Any) -> Path:
        """Approve ``value`` as this snapshot; returns the file written."""
        with _LOCK:
            if self.inline:
                return self._write_inline(value)
            text_file, json_file = self.files()
            target, stale = (text_file, json_file) if isinstance(value, str) else (json_file, text_file)
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_writer(target) as out:
                out.write(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False) + "\n")
            stale.unlink(missing_ok=True)
            return target

    def _write_inline(self, value: Any) -> Path:
        from ruamel.yaml import YAML
        from ruamel.yaml.scalarstring import LiteralScalarString

        path = Path(self.suite)
        if path.suffix.lower() not in (".yaml", ".yml"):
            raise EvaluationError(
                f"an inline snapshot needs a YAML suite, not {path.name}: drop `value` to keep it in a file"
            )
        from ruamel.yaml.util import load_yaml_guess_indent

        text = path.read_text("utf-8")
        _, indent, dash = load_yaml_guess_indent(text)
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True
        yaml.width = 4096  # never fold a long line the user wrote
        yaml.brace_single_entry_mapping_in_flow_sequence = True  # [{type: x}] stays as written
        if indent is not None:  # the guess: a list item's content column and its dash's offset
            dash = dash or 0
            yaml.indent(mapping=max(2, indent - dash), sequence=indent, offset=dash)
        doc = yaml.load(text)
        entry = self._find(doc)
        entry["value"] = LiteralScalarString(value) if isinstance(value, str) and "\n" in value else value
        with atomic_writer(path) as out:
            yaml.dump(doc, out)
        return path

    def _find(self, doc: Any) -> Any:
        """The assertion mapping of this snapshot in the loaded suite."""
        match = re.fullmatch(r"cases\[(\d+)\]", self.pointer)
        cases = doc.get("cases") if isinstance(doc, dict) else doc
        case = (
            cases[int(match.group(1))]
            if match and isinstance(cases, list) and int(match.group(1)) < len(cases)
            else None
        )
        if not isinstance(case, dict) or str(case.get("id")) != self.case_id:
            raise EvaluationError(f"case {self.case_id!r} is no longer at {self.pointer} of {self.suite}")
        found = [
            a
            for a in case.get("assertions") or []
            if isinstance(a, dict) and a.get("type") == self.type and "value" in a and a.get("name") == self.name
        ]
        if len(found) != 1:
            raise EvaluationError(
                f"case {self.case_id!r} in {self.suite} has {len(found)} inline snapshots named {self.name!r};"
                " give each its own name"
            )
        return found[0]
