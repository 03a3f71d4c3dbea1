"""Text assertions: contains, not_contains, icontains, contains_any, contains_all, starts_with."""

from __future__ import annotations

from typing import Any, ClassVar

from specrun.kinds import AssertionType, Check, Verdict
from specrun.model import Assertion


class Contains(AssertionType):
    name = "contains"
    description = "The output contains the value (a list: every item)."
    params_schema: ClassVar[dict[str, Any]] = {"properties": {"value": {}}, "required": ["value"]}

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        value = assertion.params["value"]
        items = value if isinstance(value, list) else [value]
        text = check.response.text
        missing = [i for i in items if str(i) not in text]
        return Verdict(not missing, f"missing {missing!r}" if missing else "", expected=value, actual=text)
