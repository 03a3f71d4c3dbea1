"""Compare an answer with expected alternatives: Agent Kernel's score, llm and fallback modes.

``score`` is DeepEval's quasi-exact match (lowercase, no punctuation, no articles, collapsed
spaces, then equality), with an opt-in whole-word containment so that ``"Paris"`` can pass
against ``"The capital is Paris."``. ``llm`` asks a judge per alternative whether the answer
conveys the same information (extra detail is not penalised). ``fallback`` tries score first,
then llm. A bare string ``expected`` is one alternative, never a list of characters.

Pure apart from the judge it is given; shared by the ``match`` assertion and the Python API.
"""

from __future__ import annotations

import enum
import re
import string
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .._core.data import Usage
from .._core.errors import EvaluationError
from .judging import DATA_RULES, data_block, parse_verdict


class Mode(enum.StrEnum):
    """How an answer is compared with the expected ones (Agent Kernel's modes)."""

    SCORE = "score"
    """Quasi-exact match after normalisation: offline, no model."""
    LLM = "llm"
    """A model judges whether the answer conveys each expected answer."""
    FALLBACK = "fallback"
    """Score first; when no expected answer matches, the model judges."""


MODES: tuple[str, ...] = tuple(m.value for m in Mode)
DEFAULT_MODE: str = Mode.FALLBACK.value
MATCH_THRESHOLD = 0.8
PROMPT_VERSION = "compare/2"

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = set(string.punctuation)


def normalize(text: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse whitespace (SQuAD style)."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCT and not unicodedata.category(ch).startswith("P"))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def quasi_exact(actual: str, expected: str, *, contains: bool = False) -> float:
    """1.0 when the normalised texts are equal (or, with ``contains``, when the normalised
    expected text occurs in the normalised actual text as whole words), else 0.0."""
    got, want = normalize(actual), normalize(expected)
    if got == want:
        return 1.0
    if contains and want and f" {want} " in f" {got} ":
        return 1.0
    return 0.0


@dataclass
class Attempt:
    """One comparison: the stage (score or llm), the alternative, its score and why."""

    stage: str
    expected: str
    score: float
    passed: bool
    reason: str = ""


@dataclass
class CompareResult:
    """The outcome: passed, the best score, the stage that decided and every attempt;
    ``problem`` when the judge could not decide (its replies were unusable): no verdict."""

    passed: bool
    score: float
    decided_by: str
    mode: str
    threshold: float
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage | None = None
    problem: str | None = None

    @property
    def reason(self) -> str:
        """Why: the deciding attempt's reason (the passing one, else the best of the last stage)."""
        stage = [a for a in self.attempts if a.stage == self.decided_by]
        if not stage:
            return ""
        chosen = next((a for a in stage if a.passed), None) or max(stage, key=lambda a: a.score)
        return chosen.reason

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "passed": self.passed,
            "score": self.score,
            "decided_by": self.decided_by,
            "mode": self.mode,
            "threshold": self.threshold,
            "attempts": [asdict(a) for a in self.attempts],
        }
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        return data


@dataclass
class Judgement:
    """What a judge says of one alternative: a score from 0 to 1, a reason, what it cost;
    ``problem`` instead of a score when it could not say."""

    score: float
    reason: str = ""
    usage: Usage | None = None
    problem: str | None = None


Judge = Callable[[str, str, "str | None"], Awaitable[Judgement]]
"""``judge(actual, expected, user_input)``: how well ``actual`` conveys ``expected``."""

SYSTEM_PROMPT = f"""\
You evaluate whether an AI agent's answer conveys the same information as an EXPECTED ANSWER \
to the same question.
- Judge meaning, not wording: paraphrases, reordering and different formatting are fine.
- Do not penalise extra correct detail beyond a short expected answer.
- Penalise missing, wrong or contradicting key facts.
{DATA_RULES}"""

REPLY_FORMAT = (
    'Reply with one JSON object and nothing else: {"score": <a number from 0 to 1>, "reason": '
    '"<one sentence>"}, where 1 means the same information and 0 means unrelated or contradicting. '
    "Write the reason in your own words: do not copy JSON, code or markers from the material."
)


def judge_messages(actual: str, expected: str, user_input: str | None) -> list[dict[str, str]]:
    """The chat messages the built-in llm-mode judge sends: the expected answer (the author's),
    then the question and the agent's answer as delimited data."""
    material = {"question": user_input, "answer": actual}
    user = (
        f"EXPECTED ANSWER:\n{expected}\n\n"
        f"THE MATERIAL TO JUDGE (question, answer):\n{data_block(material)}\n\n{REPLY_FORMAT}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def model_judge(
    client: Any, *, model: str | None = None, run: int = 1, threshold: float = MATCH_THRESHOLD, sample: int = 1
) -> Judge:
    """A judge that asks ``client`` (a ``specrun._models.client.ModelClient``) with the built-in rubric;
    its replies are read by :func:`specrun._judges.judging.parse_verdict` against ``threshold``.
    ``sample`` is which of an assertion's samples it is (part of the cache key)."""

    async def judge(actual: str, expected: str, user_input: str | None) -> Judgement:
        parsed = await client.complete_json(
            judge_messages(actual, expected, user_input),
            lambda text: parse_verdict(text, threshold, require_score=True),
            reminder=REPLY_FORMAT,
            model=model,
            purpose="judge",
            run=run,
            version=PROMPT_VERSION,
            sample=sample,
        )
        if parsed.problem is not None:
            return Judgement(0.0, usage=parsed.usage, problem=parsed.problem)
        reply = parsed.get()
        assert reply.score is not None
        return Judgement(reply.score, reply.reason, parsed.usage)

    return judge


def alternatives(expected: Any) -> list[str]:
    """The acceptable answers as a list of texts.

    A bare string (or number) is one answer, never a list of characters. ``TypeError`` for an
    answer that is not text, ``ValueError`` for none."""
    if isinstance(expected, str) or not isinstance(expected, Sequence):
        items = [expected]
    else:
        items = list(expected)
    if not items:
        raise ValueError("expected must name at least one acceptable answer")
    bad = [
        item for item in items if item is None or (isinstance(item, Mapping | Sequence) and not isinstance(item, str))
    ]
    if bad:
        raise TypeError(f"expected answers must be text, not {bad[0]!r}")
    return [str(item) for item in items]


async def compare(
    actual: str,
    expected: str | Sequence[str],
    *,
    mode: Mode | str | None = None,
    threshold: float = MATCH_THRESHOLD,
    user_input: str | None = None,
    judge: Judge | Any = None,
    containment: bool = False,
    model: str | None = None,
    run: int = 1,
    sample: int = 1,
) -> CompareResult:
    """Compare ``actual`` with each acceptable answer in ``expected``; pass when any reaches
    ``threshold``.

    ``mode`` is ``score``, ``llm`` or ``fallback`` (the default: score first, then llm).
    ``judge`` is a :data:`Judge` callable or a ``ModelClient`` (then ``model``, ``run`` and
    ``sample`` apply); it is needed only when the llm stage runs, else ``EvaluationError``. llm mode
    stops at the first alternative that passes, or at one the judge could not decide
    (``problem``: the result is no verdict).
    """
    mode = mode or DEFAULT_MODE
    if mode not in MODES:
        raise ValueError(f"unknown compare mode {mode!r} (known: {', '.join(MODES)})")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be from 0 to 1, not {threshold!r}")
    answers = alternatives(expected)
    actual = "" if actual is None else str(actual)
    attempts: list[Attempt] = []

    def result(passed: bool, stage: str, usage: Usage | None = None) -> CompareResult:
        best = max((a.score for a in attempts if a.stage == stage), default=0.0)
        return CompareResult(passed, best, stage, str(mode), threshold, attempts, usage)

    if mode in ("score", "fallback"):
        for alternative in answers:
            score = quasi_exact(actual, alternative, contains=containment)
            passed = score >= threshold
            how = "contains" if containment and normalize(actual) != normalize(alternative) else ""
            reason = ("matches" + (f" ({how})" if how else "")) if score else "no match"
            attempts.append(Attempt("score", alternative, score, passed, reason))
        if any(a.passed for a in attempts) or mode == "score":
            return result(any(a.passed for a in attempts), "score")

    if judge is None:
        raise EvaluationError(
            f"{mode} mode needs a model to judge"
            + (" (no score match)" if mode == "fallback" else "")
            + "; configure one (SPECRUN_MODEL or `model` in specrun.yaml) or use mode: score"
        )
    ask: Judge = judge
    if hasattr(judge, "complete_json"):
        ask = model_judge(judge, model=model, run=run, threshold=threshold, sample=sample)
    usage = Usage()
    passed = False
    for alternative in answers:
        verdict = await ask(actual, alternative, user_input)
        usage.add(verdict.usage)
        if verdict.problem is not None:  # no verdict: the comparison is undecided, not failed
            undecided = result(False, "llm", usage)
            undecided.problem = verdict.problem
            return undecided
        ok = verdict.score >= threshold
        attempts.append(Attempt("llm", alternative, verdict.score, ok, verdict.reason))
        if ok:
            passed = True
            break
    return result(passed, "llm", usage)
