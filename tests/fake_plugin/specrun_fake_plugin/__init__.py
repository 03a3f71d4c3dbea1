"""specrun-fake-plugin: adds the ``shouting`` assertion type (the output is all upper case).

Implements ``register_assertion_types``. Setting ``SPECRUN_FAKE_PLUGIN_BREAK`` makes the import
fail, so that the tests can check how specrun reports a plugin that cannot be loaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, Verdict, hookimpl

if os.environ.get("SPECRUN_FAKE_PLUGIN_BREAK"):
    raise RuntimeError("broken on purpose: SPECRUN_FAKE_PLUGIN_BREAK is set")


class Shouting(AssertionType):
    """Passes when the output has letters and all of them are upper case."""

    name = "shouting"
    description = "The output is all upper case (and at least min_length characters long)."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "min_length": {
                "type": "integer",
                "minimum": 0,
                "description": "The output must have at least this many characters.",
            },
        },
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        text = check.response.text
        min_length = assertion.params.get("min_length", 0)
        if not text.isupper():
            return Verdict(False, "the output is not all upper case", actual=text)
        if len(text) < min_length:
            return Verdict(False, f"the output has {len(text)} characters, fewer than {min_length}")
        return Verdict(True, actual=text)


@hookimpl
def register_assertion_types(register: Callable[[type[AssertionType]], None]) -> None:
    register(Shouting)
