"""The ``snapshot`` assertion: the output equals the approved golden output stored beside the suite.

The golden output is a file under ``__snapshots__/`` next to the suite, or, when the assertion
has a ``value``, that value inline in a YAML suite. ``--update-snapshots`` approves what the
agent said instead of comparing (an inline one is rewritten in place, comments kept). A case
with no approved snapshot yet is an error, never a pass. Both sides of the comparison are
masked as the snapshot is stored (``Snapshot.masked``): a secret is never kept, and an approved
masked output matches the next run's. Storage is ``specrun.plugin.Snapshot``.
Registered by the family's register_assertion_types hook.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ..._core.data import Assertion
from ..._core.errors import EvaluationError
from ..._core.kinds import AssertionType, Check, Verdict


def _same(golden: Any, output: Any) -> bool:
    """Text equal but for line endings and trailing whitespace; JSON equal whatever the key order."""
    if isinstance(golden, str) and isinstance(output, str):
        return golden.replace("\r\n", "\n").rstrip() == output.replace("\r\n", "\n").rstrip()
    return _canonical(golden) == _canonical(output)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _own_file(assertion: Assertion, assertions: list[Assertion]) -> None:
    """Two snapshots of a case kept in files under one name would share a file: refuse."""
    name = assertion.params.get("name")
    same = [
        a for a in assertions if a.type == assertion.type and "value" not in a.params and a.params.get("name") == name
    ]
    if len(same) > 1:
        raise EvaluationError(
            f"this case has {len(same)} snapshots named {name!r} kept in files; give each its own name"
        )


class SnapshotAssertion(AssertionType):
    name = "snapshot"
    description = "The output equals its approved snapshot (a file under __snapshots__/, or inline `value`)."
    data_only: ClassVar[bool] = False  # reads and writes files beside the suite
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "Tells a case's snapshots apart when it has several (default: none).",
            },
            "value": {
                "description": "The approved output, inline (YAML suites; null until approved); "
                "without it the snapshot is kept in __snapshots__/<suite>/<case id>.txt or .json.",
            },
        },
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        from ..snapshots import Snapshot  # its storage: imported by a run that has a snapshot

        case = check.case
        if case.suite is None:
            raise EvaluationError("a snapshot needs a suite file to keep its approved output beside")
        params = assertion.params
        inline = "value" in params
        suite = str(case.suite.path.resolve())
        snap = Snapshot(suite, case.location.pointer, case.id, self.name, params.get("name"), inline)
        if not inline:
            _own_file(assertion, case.assertions)
        found, golden = (params["value"] is not None, params["value"]) if inline else snap.read_file()
        golden, output = Snapshot.masked(golden), Snapshot.masked(check.response.content)
        where = f"{case.suite.path.name} (inline)" if inline else str(snap.files()[0 if isinstance(output, str) else 1])
        details = snap.to_details()
        if found and _same(golden, output):
            return Verdict(True, f"output matches the approved snapshot in {where}", details=details)
        services = check.services
        if services is not None and services.update_snapshots:
            written = snap.write(output)
            return Verdict(True, f"snapshot {'updated' if found else 'written'}: {written}", details=details)
        if not found:
            legacy = None if inline else snap.legacy_file()
            moved = (
                f"; {legacy.name} is where an older specrun kept it: rename it if it is this case's" if legacy else ""
            )
            missing = EvaluationError(
                f"no approved snapshot yet for {case.id!r} ({where}): run with --update-snapshots to approve"
                f" this output (then review the change), or approve it in specrun view{moved}"
            )
            missing.details = details
            raise missing
        return Verdict(False, f"output differs from the approved snapshot in {where}", golden, output, details=details)
