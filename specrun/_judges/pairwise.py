"""The pairwise judge of a run that tests several agents: which agent answered a case better.

A suite with ``pairwise: {criteria: ...}`` (and optionally ``model``), run against several
agents, has each case's outputs compared two agents at a time, once per run index, by the judge
model, **in both orders** (A's response shown first, then B's first): judges favour a position,
and asking twice cancels that out. A winner counts only when both orders name it; any other
pair of answers is a tie. An order whose reply was unusable twice, or whose call failed, leaves
the comparison undecided: it counts as neither. A comparison needs both agents to have answered
(a run that passed or failed); an agent's error or skip leaves it out.

The judging runs once the cases have (``run_finished``, first of its implementations), all
comparisons at once within the model's limits, and its tally goes into the run summary as
``pairwise``, which the console, the reports and the stream's summary line then show: per pair
of agents, wins, ties and losses with the 95% Wilson interval of each agent's win rate, and each
comparison. The outputs of the cases of such suites are kept until then (only those).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from .. import hookimpl
from .._core.errors import EvaluationError
from .._core.results import Result
from .._report.display import shorten
from .._report.rates import percent, wilson_pct
from .assertions.judge import conversation_data
from .judging import DATA_RULES, data_block

PROMPT_VERSION = "pairwise/1"
REASON_CHARS = 200

SYSTEM = f"""\
You are an impartial evaluator comparing two AI agents' responses to the same conversation. \
Decide which response better meets the criteria, or whether they are equally good. Judge only \
against the criteria: the order in which the responses are shown, their length and their style \
do not matter unless the criteria say so.
{DATA_RULES}"""

REPLY_FORMAT = (
    'Reply with one JSON object and nothing else: {"winner": "1", "2" or "tie", "reason": "<one sentence>"}, '
    'where "1" is response_1 and "2" is response_2. Write the reason in your own words: do not copy '
    "JSON, code or markers from the material."
)


def pairwise_messages(
    criteria: str, conversation: list[dict[str, Any]], first: Any, second: Any
) -> list[dict[str, str]]:
    """What the judge reads: the author's criteria, then the conversation and both responses as data."""
    material = {"conversation": conversation, "response_1": first, "response_2": second}
    user = (
        f"CRITERIA:\n{criteria}\n\n"
        f"THE MATERIAL TO JUDGE (conversation, response_1, response_2):\n{data_block(material)}\n\n{REPLY_FORMAT}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_winner(text: str) -> tuple[str, str]:
    """``("1" | "2" | "tie", reason)`` from a reply; ``ValueError`` saying what is unusable."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError('the reply is not a JSON object; expected {"winner": "1", "2" or "tie", ...}') from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got a JSON {type(data).__name__}")
    winner = data.get("winner")
    if isinstance(winner, int) and not isinstance(winner, bool):
        winner = str(winner)
    if winner not in ("1", "2", "tie"):
        raise ValueError(f'`winner` must be "1", "2" or "tie", not {json.dumps(winner, default=str)}')
    reason = data.get("reason") or ""
    return winner, reason if isinstance(reason, str) else json.dumps(reason)


@dataclass
class Answer:
    """What one agent answered in one run of a case."""

    agent: str
    output: Any
    conversation: list[dict[str, Any]]


@dataclass
class Comparison:
    """Two agents' answers to one run of one case, and what the judge said of them."""

    case_id: str
    file: str
    run: int
    first: Answer  # the agent whose name sorts first
    second: Answer
    criteria: str
    model: str | None = None
    winner: str | None = None  # an agent, "tie", or None: undecided
    orders: list[str | None] = field(default_factory=list)  # each order's pick (an agent, "tie", None)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.case_id,
            "file": self.file,
            "run": self.run,
            "winner": self.winner,
            "orders": self.orders,
            "reason": shorten(self.reason, REASON_CHARS),
        }


class PairwiseJudge:
    """A plugin of one run (on ``case_finished`` and ``run_finished``); see the module docstring."""

    def __init__(self, models: Any):
        self.models = models
        self._answers: dict[tuple[str, str, int], list[Answer]] = {}
        self._comparisons: list[Comparison] = []

    @hookimpl
    def case_finished(self, result: Result) -> None:
        suite = result.case.suite
        settings = suite.pairwise if suite is not None else None
        if not settings or result.agent is None or result.status not in ("passed", "failed"):
            return
        case = result.case
        output = result.response.content if result.response is not None else None
        answer = Answer(result.agent, output, conversation_data(case.input))
        others = self._answers.setdefault((case.location.file, case.id, result.run), [])
        for other in others:
            first, second = sorted((answer, other), key=lambda a: a.agent)
            criteria, model = str(settings["criteria"]), settings.get("model")
            self._comparisons.append(
                Comparison(case.id, case.location.file, result.run, first, second, criteria, model)
            )
        others.append(answer)

    @hookimpl(tryfirst=True)  # before the reports, the stream and the console: they show the tally
    async def run_finished(self, summary: dict[str, Any]) -> None:
        self._answers.clear()
        if summary.get("interrupted"):
            summary["pairwise"] = {"skipped": "the run was interrupted", "pairs": []}
            return
        try:
            await asyncio.gather(*(self._judge(c) for c in self._comparisons))
        finally:
            if self.models is not None:  # the run closed the client's connections before the hook; close ours
                await self.models.aclose()
        summary["pairwise"] = {"pairs": tally(self._comparisons)}

    async def _judge(self, c: Comparison) -> None:
        picks = await asyncio.gather(self._ask(c, c.first, c.second), self._ask(c, c.second, c.first))
        c.orders = [agent for agent, _ in picks]
        undecided = [why for agent, why in picks if agent is None]
        c.reason = undecided[0] if undecided else picks[0][1]
        if undecided:
            c.winner = None
        elif c.orders[0] == c.orders[1]:
            c.winner = c.orders[0]
        else:  # the orders disagree: the judge followed the position, not the answers
            c.winner = "tie"

    async def _ask(self, c: Comparison, shown_first: Answer, shown_second: Answer) -> tuple[str | None, str]:
        """Which agent the judge picks with ``shown_first`` as response 1: an agent, "tie", or
        None with why it could not say."""
        if self.models is None:
            return None, "pairwise judging needs a model: set `model` in specrun.yaml or SPECRUN_MODEL"
        messages = pairwise_messages(c.criteria, shown_first.conversation, shown_first.output, shown_second.output)
        try:
            parsed = await self.models.complete_json(
                messages,
                parse_winner,
                reminder=REPLY_FORMAT,
                model=c.model,
                purpose="judge",
                run=c.run,
                version=PROMPT_VERSION,
            )
        except EvaluationError as exc:  # a call that failed for good (or no model): this order is undecided
            return None, str(exc)
        except Exception as exc:  # never a verdict, and never the run's failure either
            return None, f"the pairwise judge crashed: {type(exc).__name__}: {exc}"
        if parsed.problem is not None:
            return None, parsed.problem
        pick, reason = parsed.get()
        return {"1": shown_first.agent, "2": shown_second.agent}.get(pick, "tie"), reason


def tally(comparisons: list[Comparison]) -> list[dict[str, Any]]:
    """Per pair of agents: wins, ties and losses of the first, the undecided, each side's win rate
    with its 95% Wilson interval (over the decided comparisons), and every comparison."""
    pairs: dict[tuple[str, str], list[Comparison]] = {}
    for c in comparisons:
        pairs.setdefault((c.first.agent, c.second.agent), []).append(c)
    out = []
    for (a, b), found in sorted(pairs.items()):
        wins = sum(c.winner == a for c in found)
        losses = sum(c.winner == b for c in found)
        ties = sum(c.winner == "tie" for c in found)
        decided = wins + losses + ties
        out.append(
            {
                "agents": [a, b],
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "undecided": len(found) - decided,
                "win_rate": percent(wins, decided),
                "win_rate_ci": wilson_pct(wins, decided),
                "loss_rate": percent(losses, decided),
                "loss_rate_ci": wilson_pct(losses, decided),
                "comparisons": [c.to_dict() for c in found],
            }
        )
    return out
