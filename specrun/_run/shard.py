"""``--shard I/N``: the I-th of N disjoint parts of a run's selected cases, for parallel CI jobs.

The partition is a function of the selected cases alone (their project-relative file and id,
never the order files were found in), so every job computes the same one: each case lands in
exactly one shard, with all its ``--runs``. Without past durations, cases are ordered by a hash
of their key and dealt round-robin (shard sizes differ by one at most). With durations (the
history store's), the longest cases are placed first, each on the shard with the least work so
far; a case with no past duration counts as the median of those known.

Each shard's result stream records the part it ran (:meth:`Partition.info`): ``specrun merge``
(:mod:`specrun._history.merge`) checks that the streams it joins are parts of one partition of one
version of the suites. So the selection's fingerprint covers each case's content (its
``content_hash``, what the history compares too), not only its key: every shard reads every
selected case once more, not only its own, to hash it.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.errors import UsageError
from .._core.identity import CaseKey, suite_key

if TYPE_CHECKING:
    from .._core.data import Case
    from .pairs import Selection

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def _digest(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/3"`` as a ``Shard``; a ``UsageError`` for anything but ``I/N`` with 1 ≤ I ≤ N."""
        match = _SPEC.fullmatch(text)
        if not match:
            raise UsageError(f"--shard {text!r}: expected I/N, e.g. 2/3 (the 2nd of 3 parts)")
        index, count = int(match[1]), int(match[2])
        if count < 1 or not 1 <= index <= count:
            raise UsageError(f"--shard {text!r}: I must be from 1 to N (1/{max(count, 1)} to {count}/{count})")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass
class Partition:
    """Every selected case's shard, and what identifies the selection and the partition."""

    shard: Shard
    keys: list[CaseKey]  # sorted
    assigned: dict[CaseKey, int]  # key -> 1-based shard
    balanced: bool  # by past durations
    contents: dict[str, dict[str, str]]  # file -> case id -> its content hash

    def info(self, selected: int) -> dict[str, Any]:
        """What a shard's result stream records (``start`` line, key ``shard``)."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "selected": selected,  # cases in the whole selection, every shard's
            # The same cases (suites, filters, agents), in the same version, in every shard ...
            "selection": _digest([self.keys, self.contents]),
            "partition": _digest([self.assigned[k] for k in self.keys]),  # ... split the same way
            "balanced": self.balanced,
            "contents": self.contents,  # what names the case that differs when the selections do
        }


def partition(keys: Sequence[CaseKey], count: int, durations: dict[str, float]) -> dict[CaseKey, int]:
    """Each key's shard (1-based): dealt round-robin in hash order, or by ``durations`` (by
    case id) placed longest first on the least loaded shard."""
    order = sorted(set(keys), key=lambda k: (_digest(k), k))
    known = [d for d in (durations.get(k.id) for k in order) if d is not None and d >= 0]
    if not known:
        return {key: i % count + 1 for i, key in enumerate(order)}
    default = statistics.median(known)
    cost = {k: durations.get(k.id, default) for k in order}
    loads = [0.0] * count
    assigned = {}
    for key in sorted(order, key=lambda k: -cost[k]):  # stable: ties keep the hash order
        lightest = min(range(count), key=lambda i: (loads[i], i))
        loads[lightest] += cost[key]
        assigned[key] = lightest + 1
    return assigned


def select(
    pairs: Selection,
    shard: Shard,
    root: Path,
    durations: Callable[[list[str]], dict[str, float]] | None = None,
) -> tuple[Selection, Partition]:
    """The pairs of ``shard``, in their plan order (``pairs.select``), and the partition they come
    from. ``durations(case_ids)`` gives past mean durations (ms) where history has them. Each
    pair's key is held while the partition is made: cases are not read. A suite outside the
    project is named by its cases' file as displayed (``suite_key``'s ``outside``)."""
    files = [suite_key(suite.path, root, outside="") for suite in pairs.suites]
    keyed = [CaseKey(files[ref.suite] or ref.file, ref.id, agent.id) for ref, agent in pairs]
    keys = sorted(set(keyed))
    past = durations(sorted({k.id for k in keys})) if durations is not None else {}
    assigned = partition(keys, shard.count, past)
    chosen = pairs.select(i for i, key in enumerate(keyed) if assigned[key] == shard.index)
    return chosen, Partition(shard, keys, assigned, any(k.id in past for k in keys), _contents(pairs, keyed))


def _contents(pairs: Selection, keyed: list[CaseKey]) -> dict[str, dict[str, str]]:
    """Each selected case's content hash, by file and id, sorted; read in one pass over the
    suites (a case run against several agents is hashed once)."""
    from .._history.recording import content_hash
    from .plan import Plan

    contents: dict[str, dict[str, str]] = {}
    cases: Iterator[tuple[Case, Any]] = Plan(pairs.suites, pairs).cases()
    for (file, case_id, _), (case, _) in zip(keyed, cases, strict=False):
        known = contents.setdefault(file, {})
        if case_id not in known:
            known[case_id] = content_hash(case)[:_HASH_CHARS]
    return {file: dict(sorted(ids.items())) for file, ids in sorted(contents.items())}


_HASH_CHARS = 12  # of a case's content hash in the start line: 48 bits tell an edited case
