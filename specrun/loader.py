"""Turn suite files (or generated case data) into validated ``Suite`` objects.

Every problem in every file is collected, each with its file, line, column and field path,
before anything runs; ``load`` raises one ``SuiteError`` listing them all.
"""

from __future__ import annotations

import gc
import mimetypes
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs

from .case_rules import (
    GeneratedLimits,
    as_list,
    assertions_of,
    expected_assertion,
    generated_problems,
    to_assertion,
    unread_fields,
)
from .discovery import find_suite_files
from .documents import Document, DocumentError, Record, parse
from .errors import Problem, SuiteError
from .kinds import AssertionType
from .model import (
    MISSING,
    Case,
    Checkpoint,
    Location,
    Message,
    Suite,
    parse_duration,
)
from .problems import describe_schema_error, did_you_mean, display_path, duration_problem, pointer
from .registry import Registry
from .schemas import compose


class Loader:
    """Validates suite data against the schema composed from ``registry`` and builds suites;
    generated case data is held to ``limits`` (the run's)."""

    def __init__(self, registry: Registry, limits: GeneratedLimits | None = None):
        self.registry = registry
        self.limits = limits or GeneratedLimits()
        self.schema = compose(registry)
        self._suite = jsonschema_rs.Draft202012Validator(self.schema)
        self._case = jsonschema_rs.Draft202012Validator({"$ref": "#/$defs/case", "$defs": self.schema["$defs"]})
        self._loaded: set[Path] = set()
        self.skipped: list[tuple[Path, str]] = []  # what load passed over, and why (for -v)

    # -- public --------------------------------------------------------------------------------

    def load(self, paths: Iterable[Path]) -> list[Suite]:
        """Load suite files (directories searched recursively); raise one ``SuiteError`` for all.

        A file is read once per loader, however often it is named or reached (a folder and a
        file in it, a symbolic link): the same cases are never run or counted twice.
        """
        suites, problems = [], []
        # Loading makes many long-lived objects and little garbage: the cyclic collector would only
        # rescan them, over and over (measured: 40% of validating 10,000 cases).
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
        """One suite file: the suite, or the problems in it."""
        display = display_path(path)
        try:
            doc = parse(path, display)
        except DocumentError as exc:
            return None, exc.problems
        suite, problems = self._build(doc, Suite(path=path.resolve()), generated=False)
        first = doc.top if doc.top is not None else (doc.cases[0] if doc.cases else None)
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
        return suite, problems

    def load_data(self, cases: list[Any], origin: str, base_dir: Path, generated: bool = True) -> Suite:
        """Cases produced by a source (a generator agent, a script); validated like a file's."""
        # A generated case has no source text: its "line" is its number in the batch.
        records = [Record(c, i + 1, 1) for i, c in enumerate(cases)]
        doc = Document(base_dir / origin, origin, "data", None, records, None)
        built, problems = self._build(doc, Suite(base_dir / origin, name=origin, generated=generated), generated)
        if problems:
            raise SuiteError(problems)
        assert built is not None
        return built

    # -- validation ----------------------------------------------------------------------------

    def _build(self, doc: Document, suite: Suite, generated: bool) -> tuple[Suite | None, list[Problem]]:
        problems: list[Problem] = []
        bad_cases: set[int] = set()

        def report(record: Record, prefix: list[Any], path: list[Any], message: str, at_key: bool = False) -> None:
            line, col = record.position(path, at_key)
            problems.append(Problem(doc.display, line, col, message, pointer(prefix + path)))

        bad_defaults = False
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
                return None, problems
        else:
            for i, record in enumerate(doc.cases):
                for error in self._case.iter_errors(record.data):
                    bad_cases.add(i)
                    described = describe_schema_error(error, self.schema, record.data, whole="the case")
                    for path, message, at_key in described:
                        report(record, ["cases", i], path, message, at_key)

        defaults: dict[str, Any] = {}
        if doc.top is not None and isinstance(doc.top.data, dict):
            suite.name = doc.top.data.get("name") if isinstance(doc.top.data.get("name"), str) else None
            suite.target = doc.top.data.get("target")
            suite.targets = doc.top.data.get("targets")
            if suite.target is not None and suite.targets is not None:
                report(doc.top, [], ["targets"], "give 'target' or 'targets', not both", True)
            defaults = doc.top.data.get("defaults") or {}
            if generated:
                defaults = {}
        if defaults and isinstance(defaults, dict) and not bad_defaults and doc.top is not None:
            for path, message in self._case_problems(defaults, suite.base_dir, generated):
                report(doc.top, [], ["defaults", *path], message)
        seen: dict[str, int] = {}
        inherited_unread: set[str] = set()
        base_dir = suite.base_dir
        for i, record in enumerate(doc.cases):
            if not isinstance(record.data, dict):
                continue
            prefix = ["cases", i]
            found = []
            # Ids are compared even in cases with other mistakes, so that a duplicate is not missed.
            case_id = record.data.get("id")
            if isinstance(case_id, str) and case_id in seen:
                found.append((["id"], f"duplicate case id {case_id!r} (first at line {seen[case_id]})"))
            elif isinstance(case_id, str):
                seen[case_id] = record.line
            if i not in bad_cases:
                found.extend(self._case_problems(record.data, base_dir, generated))
                usable = {} if bad_defaults else defaults
                merged = merge_defaults(usable, record.data)
                for inherited, path, message in unread_fields(record.data, usable, merged, self.registry):
                    if not inherited:
                        found.append((path, message))
                    elif doc.top is not None and path[0] not in inherited_unread:  # once, at the first case
                        inherited_unread.add(path[0])
                        report(doc.top, [], ["defaults", *path], message)
            for path, message in found:
                report(record, prefix, path, message)
            if not found and not problems:
                suite.cases.append(self._case_from(merge_defaults(defaults, record.data), record, doc, i, suite))
        problems.sort(key=lambda p: (p.line, p.column))
        return (None if problems else suite), problems

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
        for path, assertion in assertions_of(case):
            cls = self.registry.get("assertion", assertion["type"])
            if (generated and not cls.data_only) or cls.problems is AssertionType.problems:
                continue  # refused above, or the type checks nothing beyond its schema
            for field, message in cls().problems(to_assertion(assertion), base_dir):
                yield [*path, field], message
        for path, part in _file_parts(case.get("input")):
            if generated:
                yield path, f"generated case {case['id']!r} may not attach files"
            elif not resolve_file(part["source"], base_dir).is_file():
                yield path, f"file not found: {part['source']} (resolved to {resolve_file(part['source'], base_dir)})"
        yield from _checkpoint_problems(case.get("checkpoints") or [])

    # -- building ------------------------------------------------------------------------------

    def _case_from(self, data: dict[str, Any], record: Record, doc: Document, index: int, suite: Suite) -> Case:
        base = suite.base_dir
        location = Location(doc.display, record.line, record.column, pointer(["cases", index]))
        raw_assertions = data.get("assertions", data.get("assert"))
        if isinstance(raw_assertions, dict):
            raw_assertions = [raw_assertions]
        assertions = [to_assertion(a) for a in raw_assertions or []]
        expected = data.get("expected", MISSING)
        own = record.data.get("assertions", record.data.get("assert"))
        if not own and expected is not MISSING and "checkpoints" not in data and "simulator" not in data:
            # `expected` is the case's own check; the defaults' assertions come in addition, first
            assertions.append(expected_assertion(expected, self.registry))
        checkpoints = [
            Checkpoint(
                id=c["id"],
                assertion=to_assertion(c["assertion"]),
                description=c.get("description"),
                after=list(c.get("after") or []),
                required=c.get("required", True),
            )
            for c in data.get("checkpoints") or []
        ]
        timeout = data.get("timeout")
        return Case(
            id=data["id"],
            location=location,
            input=to_messages(data.get("input"), base),
            name=data.get("name"),
            expected=expected,
            assertions=assertions,
            options=data.get("options") or {},
            before=data.get("before"),
            after=data.get("after"),
            user=data.get("user"),
            team=data.get("team"),
            locale=data.get("locale"),
            client_type=data.get("client_type"),
            client_ip=data.get("client_ip"),
            referer=data.get("referer"),
            accept=data.get("accept"),
            metadata=data.get("metadata") or {},
            skip=data.get("skip", False),
            timeout=parse_duration(timeout) if timeout is not None else None,
            tags=list(data.get("tags") or []),
            min_pass_rate=data.get("min_pass_rate"),
            simulator=data.get("simulator"),
            checkpoints=checkpoints,
            max_turns=data.get("max_turns"),
            suite=suite,
            target=data.get("target"),
            raw=data if suite.generated else {},
        )


def merge_defaults(defaults: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """A case with the suite's ``defaults`` under it: the case wins; assertions add up;
    ``metadata`` and ``options`` merge one level deep."""
    if not defaults:
        return case
    merged = {**defaults, **case}
    for key in ("metadata", "options"):
        if key in defaults and key in case:
            merged[key] = {**defaults[key], **case[key]}
    inherited = defaults.get("assertions", defaults.get("assert"))
    if inherited:
        own = case.get("assertions", case.get("assert")) or []
        merged.pop("assert", None)
        merged["assertions"] = as_list(inherited) + as_list(own)
    return merged


def _checkpoint_problems(checkpoints: list[dict[str, Any]]) -> Iterator[tuple[list[Any], str]]:
    if not checkpoints:
        return
    ids: dict[str, int] = {}
    for i, c in enumerate(checkpoints):
        if c["id"] in ids:
            yield ["checkpoints", i, "id"], f"duplicate checkpoint id {c['id']!r}"
        ids.setdefault(c["id"], i)
    # A suggestion is sought among a bounded number of ids, and at most SHOWN are listed, so
    # that a thousand unknown names cost a thousand short messages, not a million comparisons.
    hint = ids if len(ids) <= 100 else {}
    known = ", ".join(list(ids)[:SHOWN]) + (f", ... ({len(ids)} in all)" if len(ids) > SHOWN else "")
    for i, c in enumerate(checkpoints):
        for j, dep in enumerate(c.get("after") or []):
            if dep not in ids:
                yield (
                    ["checkpoints", i, "after", j],
                    f"checkpoint {c['id']!r} comes after unknown checkpoint {dep!r}{did_you_mean(dep, hint)}"
                    f" (known: {known})",
                )
    graph = {c["id"]: [d for d in c.get("after") or [] if d in ids] for c in checkpoints}
    for cycle in _cycles(graph):
        first = min(range(len(cycle)), key=lambda k: ids[cycle[k]])  # start where the file does
        cycle = cycle[first:] + cycle[:first]
        yield ["checkpoints", ids[cycle[0]], "after"], f"checkpoints form a cycle: {' → '.join([*cycle, cycle[0]])}"


SHOWN = 10


def _cycles(graph: dict[str, list[str]]) -> Iterator[list[str]]:
    """One cycle through each group of nodes that wait on each other; time linear in the graph.

    Nodes whose dependencies can all be met are peeled off first (Kahn's algorithm). Every
    node left waits on another one left, so a walk from it along such edges closes a cycle;
    each node is walked once.
    """
    waiting = {node: len(deps) for node, deps in graph.items()}
    dependents: dict[str, list[str]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            dependents[dep].append(node)
    ready = [node for node, count in waiting.items() if count == 0]
    while ready:
        for dependent in dependents[ready.pop()]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    walked: set[str] = set()
    for start in graph:
        if waiting[start] == 0 or start in walked:
            continue
        trail: dict[str, int] = {}  # node -> its place in this walk
        node = start
        while node not in walked:
            walked.add(node)
            trail[node] = len(trail)
            node = next(dep for dep in graph[node] if waiting[dep] > 0)
        if node in trail:
            yield list(trail)[trail[node] :]


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
    """A case's ``input`` (text, a message or a history) as messages, ``file://`` parts resolved."""
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("user", value)]
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
    for error in jsonschema_rs.Draft202012Validator(schema).iter_errors(data):
        for where, message, at_key in describe_schema_error(error, schema, data):
            line, col = record.position(where, at_key)
            problems.append(Problem(display, line, col, message, pointer(where)))
    if problems:
        raise SuiteError(problems)
    return data
