"""How often a judge agrees with a person: the confusion matrix of its verdicts against human labels.

"pass" is the positive class and the person is the reference: ``tp`` the outputs both passed,
``tn`` those both failed, ``fp`` the judge passed and the person failed, ``fn`` the other way.

- **agreement** ``(tp + tn) / n``.
- **tpr** (true-positive rate) ``tp / (tp + fn)``: of what the person passed, the share the judge
  passed too; **tnr** (true-negative rate) ``tn / (tn + fp)``: of what the person failed, the share
  the judge failed. None when the person gave no label of that side.
- **Cohen's kappa** ``(po - pe) / (1 - pe)`` with ``po`` the agreement and ``pe`` the agreement
  two raters would reach by chance at these rates (``p_judge_pass * p_human_pass + p_judge_fail *
  p_human_fail``): 1 is perfect, 0 no better than chance, below 0 worse. None when ``pe`` is 1
  (both raters gave one same answer to everything: there is nothing to tell apart from chance).

A verdict the judge could not reach (an ``error``) is no pair: it is counted as ``undecided``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Confusion:
    """Judge verdicts against human labels; ``add`` one pair at a time."""

    tp: int = 0
    tn: int = 0
    fp: int = 0
    fn: int = 0
    undecided: int = 0

    def add(self, human_passed: bool, judge_passed: bool | None) -> None:
        """One pair; ``judge_passed`` None is a verdict the judge could not reach."""
        if judge_passed is None:
            self.undecided += 1
        elif human_passed:
            self.tp, self.fn = self.tp + judge_passed, self.fn + (not judge_passed)
        else:
            self.fp, self.tn = self.fp + judge_passed, self.tn + (not judge_passed)

    @property
    def n(self) -> int:
        return self.tp + self.tn + self.fp + self.fn

    @property
    def agreement(self) -> float | None:
        return (self.tp + self.tn) / self.n if self.n else None

    @property
    def tpr(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def tnr(self) -> float | None:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def kappa(self) -> float | None:
        n = self.n
        if not n:
            return None
        judge_pass, human_pass = (self.tp + self.fp) / n, (self.tp + self.fn) / n
        chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
        if chance >= 1:
            return None
        return ((self.tp + self.tn) / n - chance) / (1 - chance)

    def to_dict(self) -> dict[str, Any]:
        """The numbers (rounded to 4 places) and the matrix they come from."""
        return {
            "n": self.n,
            "agreement": _round(self.agreement),
            "kappa": _round(self.kappa),
            "tpr": _round(self.tpr),
            "tnr": _round(self.tnr),
            "matrix": {"tp": self.tp, "tn": self.tn, "fp": self.fp, "fn": self.fn},
            "undecided": self.undecided,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
