"""Trust: no case field goes unread, generated cases stay data only, evaluators return booleans.

18.9: a ``Test`` API evaluator that returns a non-boolean ``passed`` is an error.
"""

from __future__ import annotations

from typing import Any

import pytest

from specrun.errors import EvaluationError
from specrun.testing import Test

# -- 18.9: a `Test` API evaluator's verdict is a boolean -----------------------------------------


class _Returns:
    def __init__(self, verdict: Any):
        self.verdict = verdict

    def evaluate(self, actual, expected, user_input, threshold, mode):
        return self.verdict


@pytest.mark.parametrize(
    ("verdict", "problem"),
    [
        (("no", 0.0, "a truthy string"), "returned passed='no' (str); expected True or False"),
        ((1, 1.0, "an int"), "returned passed=1 (int); expected True or False"),
        ((None, 0.0, "nothing"), "returned passed=None (NoneType); expected True or False"),
        ((True, True, "a boolean score"), "returned a non-numeric score True"),
        ((True, None, "no score"), "returned a non-numeric score None"),
    ],
)
def test_an_evaluator_verdict_that_is_not_a_boolean_is_an_error(verdict, problem):
    with pytest.raises(EvaluationError, match=f"evaluator _Returns {problem}".replace("(", r"\(").replace(")", r"\)")):
        Test.compare("an answer", "the answer", evaluator=_Returns(verdict))


def test_an_evaluator_boolean_verdict_still_decides():
    assert Test.compare("x", "x", evaluator=_Returns((True, 0.9, "fine"))) == (True, 0.9, "fine")
    with pytest.raises(AssertionError, match=r"best score: 0\.1; not close"):
        Test.compare("x", "y", evaluator=_Returns((False, 0.1, "not close")))
