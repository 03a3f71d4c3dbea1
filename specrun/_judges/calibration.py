"""``specrun calibrate``: judge outputs a person has labelled and count how often judge and person agree.

A labels file is JSON Lines, one ``{"case": ID, "output": TEXT, "human": "pass" | "fail"}`` per
line (optionally ``input``, the conversation the output answers when it is not the case's own,
and ``agent``, who wrote it). Each output is judged by its case's model-backed assertions (those
whose type ``uses_model``), exactly as a run judges an agent's answer, with no agent called;
each (output, assertion) verdict is one pair against the label (:mod:`specrun._judges.agreement`).
Labels are read and judged as they come and only their numbers are kept (:class:`Tally`), so
that memory stays flat however long the file or the history is.

Labels also come from the run history: a person marks a judged result in the viewer "I agree"
or "I disagree" (``specrun.viewer.app``), which labels that output for that one assertion
(:func:`history_labels`).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._core.bounds import REPLY_LIMIT
from .._core.data import Assertion, Case, Message, Response
from .._core.errors import Problem, SuiteError
from .._core.kinds import Check
from .._core.results import Verdict
from .._load.documents import PastLimit, load_json
from .._load.jsonl import jsonl_file_lines
from .._run.verdicts import evaluate_all
from .agreement import Confusion

EXCERPT = 200  # characters of an output a disagreement shows
MAX_LISTED = 1000  # bad lines of a labels file listed (the rest are counted)
LINE_LIMIT = REPLY_LIMIT  # a label's output is an agent's reply, bounded so: a longer line is a bad one, never held
WINDOW = 2  # labels held per label judged at once: the next are ready when one is done


@dataclass
class Label:
    """One labelled output, from line ``line`` of the labels file."""

    case: Case
    output: str
    human_passed: bool
    where: str  # labels.jsonl:3, or the history's run and repetition
    messages: list[Message]
    agent: str | None = None
    assertion: int | None = None  # the 1-based place of the one assertion it labels (the viewer's); None: all


@dataclass
class Pair:
    """One assertion's verdict on a labelled output."""

    label: Label
    assertion: str  # "llm #2": the type and its place among the case's assertions
    result: Verdict

    @property
    def judge_passed(self) -> bool | None:
        return None if self.result.status == "error" else self.result.status == "passed"


def judged_assertions(case: Case, registry: Any, config: dict[str, Any]) -> list[tuple[str, Assertion]]:
    """The case's model-backed assertions, each named by its type and 1-based place."""
    return [
        (f"{a.type} #{i}", a)
        for i, a in enumerate(case.assertions, 1)
        if registry.get("assertion", a.type).uses_model(a, config)
    ]


def read_labels(path: Path, cases: Mapping[str, Case | None], judged: Mapping[str, list[Any]]) -> Iterator[Label]:
    """The labels of ``path``, read line by line, so that memory holds a line, not the file.

    A first pass reads the whole file before any label is judged: a ``SuiteError`` lists each bad
    line (file:line and what is wrong; the first ``MAX_LISTED``, then how many more): not a JSON
    object, a missing or mistyped field, an unknown case (None in ``cases``: an id that several
    suites use), a case with nothing to judge. The labels then come from a second pass.
    """
    problems: list[Problem] = []
    count = unlisted = 0
    first_unlisted = None
    for item in _read(path, cases, judged):
        if isinstance(item, Label):
            count += 1
        elif len(problems) < MAX_LISTED:
            problems.append(item)
        else:  # counted, not kept: a file of bad lines is bounded too
            unlisted += 1
            first_unlisted = first_unlisted or item
    if first_unlisted is not None:
        more = f"; this and {unlisted - 1:,} more bad line(s) after it are not listed"
        problems.append(replace(first_unlisted, message=first_unlisted.message + more))
    if not count and not problems:
        problems.append(Problem(str(path), 1, 1, "no labels: each line is {case, output, human}"))
    if problems:
        raise SuiteError(problems)
    return _checked(path, cases, judged)


def _checked(path: Path, cases: Mapping[str, Case | None], judged: Mapping[str, list[Any]]) -> Iterator[Label]:
    for item in _read(path, cases, judged):
        if not isinstance(item, Label):  # the file changed after it was checked
            raise SuiteError([item])
        yield item


def _read(path: Path, cases: Mapping[str, Case | None], judged: Mapping[str, list[Any]]) -> Iterator[Label | Problem]:
    """Each line's label, or the problem with it."""
    try:
        for number, line in jsonl_file_lines(path, LINE_LIMIT):
            if line is None:
                yield Problem(str(path), number, 1, f"a line over {LINE_LIMIT // 2**20} MiB, the bound of a reply")
                continue
            if not line.strip():
                continue
            try:
                yield _label(line, f"{path}:{number}", cases, judged)
            except ValueError as exc:
                yield Problem(str(path), number, 1, str(exc))
    except OSError as exc:
        yield Problem(str(path), 1, 1, f"cannot read the labels file: {exc}")


def _label(line: bytes, where: str, cases: Mapping[str, Case | None], judged: Mapping[str, list[Any]]) -> Label:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    except PastLimit as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object {"case": ..., "output": ..., "human": "pass" or "fail"}')
    for name in ("case", "output", "human"):
        if name not in data:
            raise ValueError(f"missing field `{name}`")
    case_id, output, human = data["case"], data["output"], data["human"]
    if not isinstance(case_id, str) or case_id not in cases:
        raise ValueError(f"unknown case {json.dumps(case_id)}: the suite has no case of that id")
    if not isinstance(output, str):
        raise ValueError(f"`output` must be a string, not {json.dumps(output)[:60]}")
    if human not in ("pass", "fail"):
        raise ValueError(f'`human` must be "pass" or "fail", not {json.dumps(human)[:60]}')
    agent = data.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise ValueError("`agent` must be a string")
    case = cases[case_id]
    if case is None:
        raise ValueError(f"case {case_id!r} is in more than one of the suites: calibrate them one at a time")
    if not judged[case_id]:
        raise ValueError(f"case {case_id!r} has no model-backed assertion (llm, agent, ...) to calibrate")
    messages = _messages(data["input"]) if "input" in data else case.input
    return Label(case, output, human == "pass", where, messages, agent)


def history_labels(
    rows: Iterable[Mapping[str, Any]], cases: Mapping[tuple[str, str], Case], judged: Mapping[str, list[Any]]
) -> Iterator[Label | None]:
    """The history's labels (rows of its ``labels`` table) of the ``cases`` given by (suite key,
    case id), ``CaseKey.any_agent`` (a label of any agent), each for the one assertion it was
    given on, one row at a time; None for a row left out: of another suite, a case gone, or an
    assertion that is no longer a model-backed one there."""
    for row in rows:
        case = cases.get((str(row.get("suite")), str(row.get("case_id"))))
        place = row.get("assertion")
        if case is None or not any(name.endswith(f" #{place}") for name, _ in judged.get(case.id, [])):
            yield None
            continue
        try:  # the conversation as recorded; one with attachments is judged as the case asks it
            messages = _messages(row.get("input"))
        except ValueError:
            messages = case.input
        where = f"run {row.get('run_id')} #{row.get('run_index')}"
        human, agent = row.get("human") == "pass", str(row.get("agent") or "") or None
        yield Label(case, str(row.get("output") or ""), human, where, messages, agent, place)


def _messages(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [Message("user", value)]
    if isinstance(value, list) and value and all(_is_message(m) for m in value):
        return [Message(m["role"], m["content"]) for m in value]
    raise ValueError("`input` must be a string or a list of {role, content} messages with string values")


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("role"), str) and isinstance(value.get("content"), str)


async def judge_labels(labels: Iterable[Label], runner: Any, registry: Any, parallel: int) -> AsyncIterator[Pair]:
    """Every label judged by its case's model-backed assertions, ``parallel`` labels at a time,
    each assertion within the case timeout, as a run would (``runner``: the run's context and
    services). The pairs come in the labels' order; ``labels`` is read on as the oldest label is
    done, so that at most ``WINDOW`` times ``parallel`` labels are held at once."""
    config = runner.project.config
    parallel = max(1, parallel)
    gate = asyncio.Semaphore(parallel)

    async def one(label: Label) -> list[Pair]:
        named = judged_assertions(label.case, registry, config)
        if label.assertion is not None:
            named = [(name, a) for name, a in named if name.endswith(f" #{label.assertion}")]
        check = Check(
            Response(label.output),
            label.case,
            runner.context_for(label.case, 1),
            runner.services(1),
            label.messages,
        )
        timeout = label.case.timeout or runner.options.timeout
        async with gate:
            results = await evaluate_all([a for _, a in named], check, registry, timeout)
        return [Pair(label, name, result) for (name, _), result in zip(named, results, strict=True)]

    window: deque[asyncio.Task[list[Pair]]] = deque()
    try:
        for label in labels:
            window.append(asyncio.ensure_future(one(label)))
            if len(window) >= WINDOW * parallel:
                for pair in await window.popleft():
                    yield pair
        while window:
            for pair in await window.popleft():
                yield pair
    finally:  # stopped early (a bad line read late, an interrupt): the labels in flight are dropped
        for task in window:
            task.cancel()
        await asyncio.gather(*window, return_exceptions=True)


class Tally:
    """The numbers of the pairs added so far: overall, per case and per assertion, and the
    disagreements and the verdicts that could not be reached (an excerpt of each output is kept,
    never the pair)."""

    def __init__(self) -> None:
        self.overall = Confusion()
        self.cases: dict[str, Confusion] = {}
        self.assertions: dict[tuple[str, str], Confusion] = {}
        self.disagreements: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []

    def add(self, pair: Pair) -> None:
        """Count one pair."""
        case_id = pair.label.case.id
        for confusion in (
            self.overall,
            self.cases.setdefault(case_id, Confusion()),
            self.assertions.setdefault((case_id, pair.assertion), Confusion()),
        ):
            confusion.add(pair.label.human_passed, pair.judge_passed)
        if pair.judge_passed is None:
            self.errors.append(_entry(pair))
        elif pair.judge_passed != pair.label.human_passed:
            self.disagreements.append(_entry(pair))

    def report(self, labels_from: str) -> dict[str, Any]:
        """Overall numbers at the top level, then per case, per assertion, the disagreements and
        the verdicts that could not be reached (``errors``)."""
        return {
            **self.overall.to_dict(),
            "labels": labels_from,
            "cases": [{"case": c, **m.to_dict()} for c, m in self.cases.items()],
            "assertions": [{"case": c, "assertion": a, **m.to_dict()} for (c, a), m in self.assertions.items()],
            "disagreements": self.disagreements,
            "errors": self.errors,
        }


def _entry(pair: Pair) -> dict[str, Any]:
    output = pair.label.output
    entry = {
        "case": pair.label.case.id,
        "assertion": pair.assertion,
        "where": pair.label.where,
        "human": "pass" if pair.label.human_passed else "fail",
        "judge": pair.result.status,
        "output": output if len(output) <= EXCERPT else output[: EXCERPT - 1] + "…",
        "reason": pair.result.message,
    }
    if pair.label.agent:
        entry["agent"] = pair.label.agent
    return entry
