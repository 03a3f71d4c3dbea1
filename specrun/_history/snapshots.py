"""Approved golden outputs ("snapshots") of cases: where each is stored, reading and rewriting it.

A snapshot lives beside its suite, in ``__snapshots__/<suite file>/<stem>.txt`` (``.json`` for
a structured output), or inline, as the ``value`` of the assertion in a YAML suite. The stem is
the case id, and ``<case id>@<name>`` for a named snapshot, when each is lower-case letters,
digits, ``.``, ``_`` and ``-`` (starting with a letter or digit, 100 characters in all at most);
any other id or name gets a readable prefix and a hash of both, ``<prefix>~<10 hex digits>``.
No two (id, name) pairs share a file, even on a disk that ignores case: a plain stem has no
``~`` and no capital, and the hash tells the others apart.

A snapshot never holds a secret: what is written is masked as the run's outputs are
(``specrun._core.redact``), and ``masked`` gives both sides of a comparison the same mask. Rewriting
an inline one changes only that value's text (``yaml_splice``), so the rest of the file stays
byte for byte. The ``snapshot`` assertion, ``--update-snapshots`` and the viewer's approve
button all go through ``Snapshot``; what a failing verdict records (``to_details``) is enough
to approve its output later.
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
from .._core.redact import redact_data
from .._load.case_rules import assertions_of
from .._report.outputs import atomic_writer
from .yaml_splice import SpliceError, replace_value

SNAPSHOT_DIR = "__snapshots__"
_PLAIN = re.compile(r"[a-z0-9][a-z0-9._-]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]")
_LOCK = threading.Lock()  # one rewrite of a file at a time (parallel cases may share a suite)


def file_stem(case_id: str, name: str | None) -> str:
    """The file name (without extension) of a case's snapshot: see the module docstring."""
    parts = [case_id] if name is None else [case_id, name]
    stem = "@".join(parts)
    if all(_PLAIN.fullmatch(p) for p in parts) and len(stem) <= 100:
        return stem
    digest = hashlib.blake2b(json.dumps(parts).encode(), digest_size=5).hexdigest()
    return f"{_UNSAFE.sub('_', stem)[:60]}~{digest}"


def _legacy_stem(case_id: str, name: str | None) -> str:
    """How specrun named the file before ``file_stem`` (ambiguous: ``a`` + ``b`` and ``a.b``
    shared it); only to point at such a file when a snapshot is missing."""
    stem = case_id + (f".{name}" if name else "")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:100]
    if safe != stem:
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

    @staticmethod
    def masked(value: Any) -> Any:
        """``value`` with every secret in its strings masked, as snapshots are kept and compared."""
        return redact_data(value)

    def files(self) -> list[Path]:
        """The text and the JSON file a snapshot kept beside the suite may be in."""
        folder = Path(self.suite).parent / SNAPSHOT_DIR / Path(self.suite).name
        stem = file_stem(self.case_id, self.name)
        return [folder / f"{stem}.txt", folder / f"{stem}.json"]

    def legacy_file(self) -> Path | None:
        """A file where an older specrun kept this snapshot, if one is there (it may be
        another case's: the old names were ambiguous)."""
        text_file, _ = self.files()
        stem = _legacy_stem(self.case_id, self.name)
        if stem == file_stem(self.case_id, self.name):
            return None
        return next((f for f in (text_file.with_name(stem + ext) for ext in (".txt", ".json")) if f.is_file()), None)

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
        """Approve ``value``, masked, as this snapshot; returns the file written."""
        value = self.masked(value)
        if not Path(self.suite).is_file():
            raise EvaluationError(f"suite {self.suite} is no longer there: its snapshot cannot be approved")
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
        path = Path(self.suite)
        if path.suffix.lower() not in (".yaml", ".yml"):
            raise EvaluationError(
                f"an inline snapshot needs a YAML suite, not {path.name}: drop `value` to keep it in a file"
            )
        data = path.read_bytes()
        bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
        try:
            text = data[len(bom) :].decode("utf-8")
            spliced = replace_value(text, self._path, value)
        except (UnicodeDecodeError, SpliceError) as exc:
            raise EvaluationError(f"cannot rewrite the snapshot of {self.case_id!r} in {path}: {exc}") from None
        with atomic_writer(path) as out:  # which writes line endings as given: CRLF stays CRLF
            out.write(("\ufeff" if bom else "") + spliced)
        return path

    def _path(self, doc: Any) -> list[str | int]:
        """Where this snapshot's value is in the suite's data: ``["cases", 3, "assertions", 1, "value"]``."""
        match = re.fullmatch(r"cases\[(\d+)\]", self.pointer)
        keys: list[str | int] = ["cases"] if isinstance(doc, dict) else []
        cases = doc.get("cases") if isinstance(doc, dict) else doc
        index = int(match.group(1)) if match else -1
        case = cases[index] if isinstance(cases, list) and 0 <= index < len(cases) else None
        if not isinstance(case, dict) or str(case.get("id")) != self.case_id:
            raise EvaluationError(f"case {self.case_id!r} is no longer at {self.pointer} of {self.suite}")
        try:
            found = [
                path
                for path, a in assertions_of(case)
                if isinstance(a, dict) and a.get("type") == self.type and "value" in a and a.get("name") == self.name
            ]
        except (KeyError, TypeError):  # the file changed since it was loaded, and is no suite now
            found = []
        if len(found) != 1:
            raise EvaluationError(
                f"case {self.case_id!r} in {self.suite} has {len(found)} inline snapshots named {self.name!r};"
                " give each its own name"
            )
        return [*keys, index, *found[0], "value"]
