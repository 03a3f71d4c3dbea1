"""Turn suite files (or generated case data) into validated ``Suite`` objects.

Every problem in every file is collected, each with its file, line, column and field path,
before anything runs; ``load`` raises one ``SuiteError`` listing them all.
"""

from __future__ import annotations

import gc
import mimetypes
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from .._core.data import (
    MISSING,
    Case,
    Checkpoint,
    Location,
    Message,
    Suite,
    parse_duration,
)
from .._core.errors import Problem, SpecrunError, SuiteError
from .._project.registry import Registry
from .case_rules import (
    GeneratedLimits,
    as_list,
    assertion_problems,
    checkpoint_problems,
    expected_assertion,
    generated_problems,
    to_assertion,
    unread_fields,
)
from .discovery import find_suite_files
from .documents import Document, DocumentError, Record, parse
from .problems import describe_schema_error, display_path, duration_problem, pointer
from .schemas import case_schema, compose, validator


class Loader:
    """Validates suite data against the schema composed from ``registry`` and builds suites;
    generated case data is held to ``limits`` (the run's), and every case's assertions are checked
    with the defaults ``config`` (``specrun.yaml``) gives them. ``visit(suite, index, case)``, when
    given, is handed each case of a suite file that has no mistake, built as it is validated
    (the run's planner: a file is then read once to validate and to plan it)."""

    def __init__(
        self,
        registry: Registry,
        limits: GeneratedLimits | None = None,
        visit: Callable[[Suite, int, Case], None] | None = None,
        config: Mapping[str, Any] | None = None,
    ):
        self.registry, self.config = registry, config or {}
        self.limits = limits or GeneratedLimits()
        self.visit = visit
        self.schema = compose(registry)
        self._suite = validator(self.schema)
        self._case = validator(case_schema(registry))
        self._loaded: set[Path] = set()
        self.skipped: list[tuple[Path, str]] = []  # what load passed over, and why (for -v)

    # -- public --------------------------------------------------------------------------------

    def load(self, paths: Iterable[Path]) -> list[Suite]:
        """Validate suite files (directories searched recursively); raise one ``SuiteError`` for all.

        A file is read once per loader, however often it is named or reached (a folder and a
        file in it, a symbolic link): the same cases are never run or counted twice. Its cases
        are not kept: its suite's ``cases`` read them from the file again as they are iterated
        (see ``FileCases``), so that memory does not grow with the suite.
        """
        suites, problems = [], []
        # Validating makes no cyclic garbage (each record is freed by reference counting): the
        # cyclic collector would only rescan what is alive, over and over.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for path in paths:
                files = find_suite_files(path, self.skipped) if path.is_dir() else [path]
                for file in files:
                    real = file.resolve()
                    if real in self._loaded:
                        self.skipped.append((file, "already loaded: a file is read once"))
                        continue
                    self._loaded.add(real)
                    suite, found = self.load_file(file)
                    problems.extend(found)
                    if suite is not None:
                        suites.append(suite)
        finally:
            if collecting:
                gc.enable()
        if problems:
            raise SuiteError(problems)
        return suites

    def load_file(self, path: Path) -> tuple[Suite | None, list[Problem]]:
        """One suite file, validated: the suite (its cases read again as they are iterated), or
        the problems in it."""
        display = display_path(path)
        suite = Suite(path=path.resolve())
        try:
            stamp = _stamp(path)
            doc = parse(path, display)
            problems, count, first = self._check(doc, suite, generated=False, visit=self.visit)
        except DocumentError as exc:
            return None, exc.problems
        except OSError as exc:
            return None, [Problem(display, 1, 1, f"cannot read file: {exc.strerror}")]
        if problems and first is not None and isinstance(first.data, dict) and "specrun_report" in first.data:
            # A report with a name a folder search loads (output-* ones are passed over): say
            # that, not the dozens of schema errors a report makes as a suite.
            return None, [
                Problem(
                    display,
                    first.line,
                    first.column,
                    "a report specrun wrote, not a suite: rename it output-*.jsonl or output-*.json"
                    " (folder searches skip those), or move it out of the suite folder",
                )
            ]
        if problems:
            return None, problems
        suite.cases = FileCases(self, suite, display, count, stamp)
        return suite, []

    def load_data(self, cases: list[Any], origin: str, base_dir: Path, generated: bool = True) -> Suite:
        """Cases produced by a source (a generator agent, a script); validated like a file's."""
        # A generated case has no source text: its "line" is its number in the batch.
        records = [Record(c, i + 1, 1) for i, c in enumerate(cases)]
        doc = Document(base_dir / origin, origin, "data", None, records, None)
        suite = Suite(base_dir / origin, name=origin, generated=generated)
        problems, _, _ = self._check(doc, suite, generated)
        if problems:
            raise SuiteError(problems)
        suite.cases = list(self.cases(doc, suite))
        return suite

    # -- validation ----------------------------------------------------------------------------

    def _check(
        self, doc: Document, suite: Suite, generated: bool, visit: Callable[[Suite, int, Case], None] | None = None
    ) -> tuple[list[Problem], int, Record | None]:
        """Every problem in ``doc`` (sorted by position), how many cases it holds, and its first
        record (the whole document for JSON and YAML). Each case record is checked as
        it is read and then dropped: what is kept of it is its id (duplicates are found) and,
        for the first one, where it is."""
        problems: list[Problem] = []
        bad_cases: set[int] = set()

        def report(record: Record, prefix: list[Any], path: list[Any], message: str, at_key: bool = False) -> None:
            line, col = record.position(path, at_key)
            problems.append(Problem(doc.display, line, col, message, pointer(prefix + path)))

        bad_defaults = False
        first = doc.top
        if doc.top is not None:
            offset = [doc.case_key] if doc.case_key else []
            root = ["cases"] if isinstance(doc.top.data, list) else []
            for error in self._suite.iter_errors(doc.top.data):
                for path, message, at_key in describe_schema_error(error, self.schema, doc.top.data, root):
                    bad_defaults = bad_defaults or path[:1] == ["defaults"]
                    n = len(offset)
                    if len(path) > n and path[:n] == offset and isinstance(path[n], int) and path[n] < len(doc.cases):
                        bad_cases.add(path[n])
                        report(doc.cases[path[n]], ["cases", path[n]], path[n + 1 :], message, at_key)
                    else:
                        report(doc.top, [], path, message, at_key)
            if problems and not doc.cases:
                return problems, 0, first

        defaults = self._defaults(doc, suite, generated)
        if doc.top is not None and suite.target is not None and suite.targets is not None:
            report(doc.top, [], ["targets"], "give 'target' or 'targets', not both", True)
        if defaults and isinstance(defaults, dict) and not bad_defaults and doc.top is not None:
            for path, message in self._case_problems(defaults, suite.base_dir, generated):
                report(doc.top, [], ["defaults", *path], message)
        seen: set[int] = set()  # the hash of each id: the ids would cost twice as much (60 MB a million)
        again: list[tuple[str, int, int, tuple[int, int]]] = []  # a case whose id's hash was seen, and where
        inherited_unread: set[str] = set()
        base_dir = suite.base_dir
        count = 0
        for i, record in enumerate(doc.records()):
            count += 1
            if first is None:
                first = record
            # JSONL or case data: each case checked on its own as it is read (is_valid first: cheaper)
            if doc.top is None and not self._case.is_valid(record.data):
                for error in self._case.iter_errors(record.data):
                    bad_cases.add(i)
                    described = describe_schema_error(error, self.schema, record.data, whole="the case")
                    for path, message, at_key in described:
                        report(record, ["cases", i], path, message, at_key)
            if not isinstance(record.data, dict):
                continue
            prefix = ["cases", i]
            found: list[tuple[list[Any], str]] = []
            # Ids are compared even in cases with other mistakes, so that a duplicate is not missed.
            case_id = record.data.get("id")
            if isinstance(case_id, str) and hash(case_id) in seen:
                again.append((case_id, i, record.line, record.position(["id"])))
            elif isinstance(case_id, str):
                seen.add(hash(case_id))
            if i not in bad_cases:
                found.extend(self._case_problems(record.data, base_dir, generated))
                usable = {} if bad_defaults else defaults
                merged = merge_defaults(usable, record.data) if usable else record.data
                for inherited, path, message in unread_fields(record.data, usable, merged, self.registry):
                    if not inherited:
                        found.append((path, message))
                    elif doc.top is not None and path[0] not in inherited_unread:  # once, at the first case
                        inherited_unread.add(path[0])
                        report(doc.top, [], ["defaults", *path], message)
            for path, message in found:
                report(record, prefix, path, message)
            if visit is not None and not problems and not found and i not in bad_cases and not bad_defaults:
                # planned as it is read (see Loader); once the file is known to be wrong, no more
                visit(suite, i, self._case_from(merged, record, doc, i, suite, base_dir))
        if again:  # the same hash is the same id, unless two ids share one: compared here
            firsts = _first_lines(doc, {case_id for case_id, *_ in again})
            for case_id, i, line, (at, col) in again:
                if firsts[case_id] < line:
                    message = f"duplicate case id {case_id!r} (first at line {firsts[case_id]})"
                    problems.append(Problem(doc.display, at, col, message, pointer(["cases", i, "id"])))
        problems.sort(key=lambda p: (p.line, p.column))
        return problems, count, first

    @staticmethod
    def _defaults(doc: Document, suite: Suite, generated: bool) -> dict[str, Any]:
        """The suite's ``defaults`` (its name and targets set on ``suite``); none for generated cases."""
        if doc.top is None or not isinstance(doc.top.data, dict):
            return {}
        suite.name = doc.top.data.get("name") if isinstance(doc.top.data.get("name"), str) else None
        suite.target = doc.top.data.get("target")
        suite.targets = doc.top.data.get("targets")
        suite.samples = doc.top.data.get("samples")
        suite.pairwise = doc.top.data.get("pairwise")
        return {} if generated else doc.top.data.get("defaults") or {}

    def cases(self, doc: Document, suite: Suite, wanted: Iterator[int] | None = None) -> Iterator[Case]:
        """The cases of a checked ``doc``, built as they are read; with ``wanted`` (case numbers
        from 0, never decreasing: a number repeats for a case with several agents), only those."""
        defaults = self._defaults(doc, suite, suite.generated)
        want = next(wanted, None) if wanted is not None else None
        base = suite.base_dir
        for i, record in enumerate(doc.records()):
            if wanted is not None:
                if want is None:
                    return
                if i != want:
                    continue
            data = merge_defaults(defaults, record.data) if defaults else record.data  # most suites have none
            case = self._case_from(data, record, doc, i, suite, base)
            yield case
            if wanted is not None:
                want = next(wanted, None)
                while want == i:  # the same case again: it runs against several agents
                    yield case
                    want = next(wanted, None)

    def _case_problems(self, case: dict[str, Any], base_dir: Path, generated: bool) -> Iterator[tuple[list[Any], str]]:
        if "assertions" in case and "assert" in case:
            yield ["assert"], "use either 'assertions' or its alias 'assert', not both"
        if "timeout" in case and (wrong := duration_problem(case["timeout"])):
            yield ["timeout"], wrong
        if generated:
            for key in ("before", "after", "target"):
                if key in case:
                    yield [key], f"generated case {case['id']!r} may not set {key!r}: generated cases are data only"
            yield from generated_problems(case, self.registry, self.limits)
        yield from assertion_problems(case, self.registry, base_dir, generated, self.config)
        for path, part in _file_parts(case.get("input")) if not isinstance(case.get("input"), str) else ():
            if generated:
                yield path, f"generated case {case['id']!r} may not attach files"
            elif not resolve_file(part["source"], base_dir).is_file():
                yield path, f"file not found: {part['source']} (resolved to {resolve_file(part['source'], base_dir)})"
        yield from checkpoint_problems(case["checkpoints"]) if case.get("checkpoints") else ()
        if case.get("tools"):  # mocked tools (specrun._mocks): what their schema cannot say
            from .._mocks import problems as tool_problems

            yield from ((["tools", *path], message) for path, message in tool_problems(case["tools"]))

    # -- building ------------------------------------------------------------------------------

    def _case_from(
        self, data: dict[str, Any], record: Record, doc: Document, index: int, suite: Suite, base: Path | None = None
    ) -> Case:
        base = base or suite.base_dir
        location = Location(doc.display, record.line, record.column, f"cases[{index}]")
        raw_assertions = data.get("assertions", data.get("assert"))
        if isinstance(raw_assertions, dict):
            raw_assertions = [raw_assertions]
        assertions = [to_assertion(a) for a in raw_assertions or []]
        expected = data.get("expected", MISSING)
        if expected is not MISSING and "checkpoints" not in data and "simulator" not in data:
            own = record.data.get("assertions", record.data.get("assert"))
            if not own:  # `expected` is the case's own check; the defaults' assertions come in addition, first
                assertions.append(expected_assertion(expected, self.registry))
        checkpoints = _checkpoints(data["checkpoints"]) if "checkpoints" in data else []  # most have none
        timeout = data.get("timeout")
        return Case(
            id=data["id"],
            location=location,
            input=to_messages(data.get("input"), base),
            expected=expected,
            assertions=assertions,
            options=data.get("options") or {},
            metadata=data.get("metadata") or {},
            skip=data.get("skip", False),
            timeout=parse_duration(timeout) if timeout is not None else None,
            tags=list(data.get("tags") or []),
            checkpoints=checkpoints,
            limits=dict(data.get("limits") or {}),
            suite=suite,
            tools=data.get("tools") or [],
            raw=data if suite.generated else {},
            # the fields taken as they are (None when absent), only those the case sets: a case
            # is built twice per run (the plan's read, the run's), most of them set none
            **({key: data[key] for key in given} if (given := _AS_GIVEN.intersection(data)) else {}),
        )


def _checkpoints(raw: list[dict[str, Any]] | None) -> list[Checkpoint]:
    return [
        Checkpoint(
            id=c["id"],
            assertion=to_assertion(c["assertion"]),
            description=c.get("description"),
            after=list(c.get("after") or []),
            required=c.get("required", True),
        )
        for c in raw or []
    ]


_AS_GIVEN = frozenset(
    "name before after user team locale client_type client_ip referer accept min_pass_rate simulator max_turns"
    " target".split()
)


def _first_lines(doc: Document, ids: set[str]) -> dict[str, int]:
    """The line of the first case with each of ``ids`` (a JSONL file is read again for it)."""
    found: dict[str, int] = {}
    for record in doc.cases if doc.lines is None else parse(doc.path, doc.display).records():
        case_id = record.data.get("id") if isinstance(record.data, dict) else None
        if case_id in ids:
            found.setdefault(case_id, record.line)
    return found


class FileCases(Sequence[Case]):
    """The cases of a validated suite file, read from the file again each time they are iterated.

    Never kept: a suite of any size costs the memory of the case at hand (and of a JSON or YAML
    file's parsed text while it is read), not of all of them. The file must not change once
    validated; if it did, reading it is an error, not cases that were never checked.
    """

    def __init__(self, loader: Loader, suite: Suite, display: str, count: int, stamp: tuple[int, int]):
        self._loader, self._suite, self._display = loader, suite, display
        self._count, self._stamp = count, stamp

    def __len__(self) -> int:
        return self._count

    def __reduce__(self) -> tuple[type, tuple[()]]:
        # Shipped with a case to a worker elsewhere (the ray executor, which ships the cases it
        # runs): the suite's other cases are not, nor the loader (its validators do not pickle).
        return list, ()

    def __iter__(self) -> Iterator[Case]:
        return self.read(iter(range(self._count)))

    @overload
    def __getitem__(self, index: int) -> Case: ...
    @overload
    def __getitem__(self, index: slice) -> list[Case]: ...
    def __getitem__(self, index: int | slice) -> Case | list[Case]:
        if isinstance(index, slice):
            return list(self)[index]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        return next(self.read(iter([index % self._count])))

    def read(self, wanted: Iterator[int]) -> Iterator[Case]:
        """The cases numbered ``wanted`` (increasing, from 0), each built when it is reached; the
        file is checked now (the loader's generator as is: no generator of its own per case)."""
        path = self._suite.path
        try:
            unchanged = _stamp(path) == self._stamp
        except OSError:
            unchanged = False
        if not unchanged:
            raise SpecrunError(f"{self._display} changed after it was validated: run again to use the new version")
        return self._loader.cases(parse(path, self._display), self._suite, wanted)


def _stamp(path: Path) -> tuple[int, int]:
    """What tells that a file changed: its size and modification time."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def merge_defaults(defaults: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """A case with the suite's ``defaults`` under it: the case wins; assertions add up;
    ``metadata``, ``options`` and ``limits`` merge one level deep, ``tools`` by name."""
    if not defaults:
        return case
    merged = {**defaults, **case}
    for key in ("metadata", "options", "limits"):
        if key in defaults and key in case:
            merged[key] = {**defaults[key], **case[key]}
    if defaults.get("tools") and case.get("tools"):  # a case's tool replaces the defaults' of its name
        from .._mocks import merged as merged_tools

        merged["tools"] = merged_tools(defaults["tools"], case["tools"])
    inherited = defaults.get("assertions", defaults.get("assert"))
    if inherited:
        own = case.get("assertions", case.get("assert")) or []
        merged.pop("assert", None)
        merged["assertions"] = as_list(inherited) + as_list(own)
    return merged


def resolve_file(source: str, base_dir: Path) -> Path:
    """A ``file://`` source as a path; relative ones are relative to the suite file's folder."""
    path = source[len("file://") :]
    return Path(path) if os.path.isabs(path) else (base_dir / path).resolve()


def _file_parts(value: Any) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    messages = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    prefix_of = (lambda i: ["input", i]) if isinstance(value, list) else (lambda i: ["input"])
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and str(part.get("source", "")).startswith("file://"):
                    yield [*prefix_of(i), "content", j, "source"], part


def to_messages(value: Any, base_dir: Path) -> list[Message]:
    """A case's ``input`` (text, a message, a history or a tool call) as messages, ``file://``
    parts resolved; a tool call ``{tool, arguments}`` is a user message asking for it."""
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("user", value)]
    if isinstance(value, dict) and "tool" in value:
        return [Message.calling(value["tool"], value.get("arguments"))]
    items = value if isinstance(value, list) else [value]
    messages = []
    for item in items:
        content = item["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                part = dict(part)
                source = str(part.get("source", ""))
                if source.startswith("file://"):
                    path = resolve_file(source, base_dir)
                    part["path"] = str(path)
                    part["mime"] = part.get("mime") or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                parts.append(part)
            content = parts
        messages.append(
            Message(item["role"], content, item.get("name"), item.get("tool_calls"), item.get("tool_call_id"))
        )
    return messages


def load_mapping_file(path: Path, schema: dict[str, Any], empty_ok: bool = False) -> dict[str, Any]:
    """An agent or config file, validated against ``schema``; a ``SuiteError`` lists every mistake.

    With ``empty_ok`` an empty file is an empty mapping (a ``specrun.yaml`` that only marks the root).
    """
    from .documents import load_mapping

    display = display_path(path)
    if empty_ok and path.is_file() and not path.read_bytes().strip():
        return {}
    try:
        data, record = load_mapping(path, display)
    except DocumentError as exc:
        raise SuiteError([exc.problem]) from None
    problems = []
    for error in validator(schema).iter_errors(data):
        for where, message, at_key in describe_schema_error(error, schema, data):
            line, col = record.position(where, at_key)
            problems.append(Problem(display, line, col, message, pointer(where)))
    if problems:
        raise SuiteError(problems)
    return data
