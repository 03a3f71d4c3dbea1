"""Which files the pytest plugin collects as suites (docs/pytest.md, "Which files").

A plain ``pytest`` walks the whole repository, where ``package.json``, ``docker-compose.yaml``,
CI files and specrun's own reports lie next to the suites; so, unlike a ``specrun`` folder search
(:mod:`specrun._load.discovery`, by name only), it keeps a file with a suite extension only when

1. it is inside a specrun project (``specrun.yaml`` or ``agent.yaml`` at or above it; anywhere
   with ``--specrun``), a folder search would load it (not hidden, not under ``fixtures/``, not
   an agent or config file, ...), and specrun did not write it (a report: ``"specrun_report"``
   in its top-level mapping, or in the first line of a ``.jsonl`` stream); and
2. it lies where the project keeps its suites: under an entry of ``suites:`` in ``specrun.yaml``
   or, in a project without ``suites:``, under a folder named in pytest's ``testpaths`` (not
   the root folder itself). There every file is a suite, so a mistake is a collection error;
3. or, anywhere else, its content is unmistakably a suite: a mapping whose keys, in file order,
   are the suite's own (``name``, ``target``, ``defaults``, ...) up to ``cases``; or a list (in a
   ``.jsonl`` file, the first line) whose first item is a case: case fields only, up to where it
   has ``id`` and one of ``input``, ``checkpoints``, ``assert``, ``assertions``. The keys decide
   as soon as they can, so a large YAML file is never parsed whole to find out.

A file named on the command line is collected whatever its name or content (still only inside
a project, or with ``--specrun``), as pytest does with a ``.py`` file named there.
"""

from __future__ import annotations

import functools
import glob
import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

SUFFIXES = (".jsonl", ".yaml", ".yml", ".json")
MARKERS = ("specrun.yaml", "specrun.yml", "agent.yaml", "agent.yml")
REPORT_KEY = "specrun_report"
"""The key every report specrun writes as JSON carries at its top (a stream: in its first line)."""
CASE_KEYS = frozenset({"input", "checkpoints", "assert", "assertions"})
_REPORT_START = re.compile(rb'\A\s*\{\s*"specrun_report"\s*:')  # the json reporter writes it first


def clear_caches() -> None:
    """Forget projects and their ``suites:``: a new pytest session may see other files."""
    project_folder.cache_clear()
    _config_root.cache_clear()
    _declared_suites.cache_clear()


@functools.lru_cache(maxsize=1024)
def project_folder(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding specrun.yaml or agent.yaml."""
    for candidate in [folder, *folder.parents]:
        if any((candidate / name).is_file() for name in MARKERS):
            return candidate
    return None


@functools.lru_cache(maxsize=1024)
def _config_root(folder: Path) -> Path | None:
    from .._project.project import CONFIG_NAMES

    return next((c for c in [folder, *folder.parents] if any((c / n).is_file() for n in CONFIG_NAMES)), None)


@functools.lru_cache(maxsize=64)
def _declared_suites(root: Path) -> tuple[Path, ...] | None:
    """The ``suites:`` of the specrun.yaml in ``root``, resolved; None when it lists none (or
    is broken: collecting a suite of that project then reports the mistake)."""
    from .._project.project import find_config

    try:
        found = find_config(root)
    except Exception:
        return None
    if found is None or not found[1].get("suites"):
        return None
    return tuple((root / entry).resolve() for entry in found[1]["suites"])


def folders_in_testpaths(rootpath: Path, testpaths: Iterable[str]) -> tuple[Path, ...]:
    """pytest's ``testpaths`` (globs, relative to ``rootpath``) as resolved folders, without
    the root folder itself or one above it (they would hold every file)."""
    root = rootpath.resolve()
    found = (Path(p).resolve() for entry in testpaths for p in sorted(glob.glob(str(root / entry), recursive=True)))
    return tuple(path for path in found if path != root and path not in root.parents)


def _under(path: Path, places: Iterable[Path]) -> bool:
    return any(path == place or place in path.parents for place in places)


def is_suite_file(
    path: Path,
    anywhere: bool = False,
    base: Path | None = None,
    testpaths: tuple[Path, ...] = (),
    named: bool = False,
) -> bool:
    """True when pytest should collect ``path`` as a suite (the module docstring's rule).

    ``anywhere``: ``--specrun``; outside a project, folders are then checked from ``base``
    (the invocation folder) down. ``testpaths``: from :func:`folders_in_testpaths`. ``named``:
    the file was given on the command line.
    """
    if path.suffix.lower() not in SUFFIXES or path.name.startswith("."):
        return False  # most files: decided without looking for a project
    folder = path.parent.resolve()
    root = project_folder(folder) or (base if anywhere else None)
    if root is None:
        return False
    if named:
        return True
    from .discovery import skip_reason

    try:
        folders = folder.relative_to(root.resolve()).parts
    except ValueError:
        folders = ()
    if skip_reason(path, folders) is not None or _starts_as_report(path):
        return False
    top, case = _head(path)
    if REPORT_KEY in top:
        return False
    config_root = _config_root(folder)
    declared = _declared_suites(config_root) if config_root is not None else None
    if _under(folder / path.name, testpaths if declared is None else declared):  # a link to a file stays where it is
        return True
    return _suite_mapping(top) is True or _case(case) is True


@functools.cache
def _fields() -> tuple[frozenset[str], frozenset[str]]:
    """The keys a suite mapping and a case may have (the shipped suite schema's)."""
    from .schemas import shipped

    schema = shipped("suite")
    return frozenset(schema["else"]["properties"]), frozenset(schema["$defs"]["case_fields"])


def _suite_mapping(keys: list[str]) -> bool | None:
    """Whether keys in file order make a suite: the suite's own keys up to ``cases`` (True),
    or a key of no suite first (False); None while undecided."""
    for key in keys:
        if key == "cases":
            return True
        if key not in _fields()[0]:
            return False
    return None


def _case(keys: list[str]) -> bool | None:
    """The same for a case: case fields only, until it has ``id`` and one of :data:`CASE_KEYS`."""
    for i, key in enumerate(keys):
        if key not in _fields()[1]:
            return False
        if "id" in keys[: i + 1] and not CASE_KEYS.isdisjoint(keys[: i + 1]):
            return True
    return None


def _starts_as_report(path: Path) -> bool:
    """The json reporter's first key, found without parsing a report of any size."""
    try:
        with path.open("rb") as file:
            return _REPORT_START.match(file.read(64)) is not None
    except OSError:
        return False


def _head(path: Path) -> tuple[list[str], list[str]]:
    """(the keys of the document's top-level mapping, the keys of its first case), in file
    order: what tells a suite or a report from other data. A YAML file is read only until the
    keys decide it (a large one is never parsed whole); one that cannot be parsed has neither."""
    try:
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            keys = _keys(_jsonl_first(path))
            return keys, keys
        text = path.read_text(encoding="utf-8-sig")
        if suffix == ".json":
            from .documents import load_json

            data = load_json(text)
            if isinstance(data, list):
                return [], _keys(data[0] if data else None)
            return _keys(data), []
        return _yaml_head(text)
    except Exception:  # not readable as data: not recognisably a suite (named or declared, it says why)
        return [], []


def _keys(value: Any) -> list[str]:
    return [k for k in value if isinstance(k, str)] if isinstance(value, dict) else []


def _jsonl_first(path: Path) -> Any:
    """The first record of a JSONL file (blank lines and ``//`` comments passed over)."""
    with path.open("rb") as file:
        for raw in file:
            line = raw.decode("utf-8").lstrip("\ufeff").strip()
            if not line or line.startswith("//"):
                continue
            try:
                return json.loads(line)
            except ValueError:
                if line[0] not in "[{":
                    return None
                break  # a record spread over lines (V2's pretty-printed suites)
    from .documents import parse

    with closing(parse(path, str(path)).records()) as records:  # type: ignore[type-var]
        record = next(records, None)
    return record.data if record is not None else None


def _yaml_head(text: str) -> tuple[list[str], list[str]]:
    """:func:`_head` of a YAML text, from its parse events."""
    from ruamel.yaml.events import MappingStartEvent, NodeEvent, SequenceStartEvent

    from .yaml_documents import bounded_yaml

    events = iter(bounded_yaml().parse(text))
    event = next((e for e in events if isinstance(e, NodeEvent)), None)
    if isinstance(event, MappingStartEvent):
        return _mapping_keys(events, _suite_mapping), []
    if isinstance(event, SequenceStartEvent) and isinstance(next(events, None), MappingStartEvent):
        return [], _mapping_keys(events, _case)
    return [], []


def _mapping_keys(events: Iterator[Any], decided: Callable[[list[str]], bool | None]) -> list[str]:
    """The plain keys of the mapping whose start event was just read, until ``decided``."""
    from ruamel.yaml.events import MappingEndEvent, ScalarEvent

    keys: list[str] = []
    for event in events:
        if isinstance(event, MappingEndEvent):
            break
        if isinstance(event, ScalarEvent):
            keys.append(str(event.value))
            if decided(keys) is not None:
                break
        _skip(events, event)  # the rest of a key that is a list or mapping
        _skip(events, next(events))  # the value
    return keys


def _skip(events: Iterator[Any], event: Any) -> None:
    """Read past the node that ``event`` starts."""
    from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

    depth = int(isinstance(event, CollectionStartEvent))
    while depth:
        event = next(events)
        depth += int(isinstance(event, CollectionStartEvent)) - int(isinstance(event, CollectionEndEvent))
