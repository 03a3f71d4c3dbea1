"""``specrun calibrate``: how often a suite's judges agree with a person's pass/fail labels."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import click


@click.command("calibrate")
@click.argument("suites", nargs=-1, required=True)
@click.option(
    "--labels",
    "labels_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help='JSON Lines: {"case": ID, "output": TEXT, "human": "pass"|"fail"} (optional input, agent);'
    " default: the labels given in `specrun view`.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option(
    "--min-kappa",
    type=click.FloatRange(-1, 1),
    help="Exit 1 when Cohen's kappa over every pair is below this (or cannot be computed).",
)
@click.option("--no-cache", is_flag=True, help="Ask the judge again rather than reuse cached verdicts.")
def command(
    suites: tuple[str, ...], labels_file: Path | None, as_json: bool, min_kappa: float | None, no_cache: bool
) -> None:
    """Judge the labelled outputs of LABELS with the SUITES' model-backed assertions and compare.

    \b
    Without --labels, the labels a person gave in `specrun view` (I agree / I disagree with a
    judge's verdict, kept in the run history) are used, each for the assertion it was given on.
    No agent is called: each output is judged by its case's llm/agent/... assertions as a run
    would judge it, and each verdict is compared with the person's label. Prints n, agreement,
    Cohen's kappa and the true-positive and true-negative rates ("pass" is positive, the person
    the reference) overall, per case and per assertion, then every disagreement. A verdict the
    judge could not reach is an error, counted apart (undecided), never a pair.
    Exit 0; 1 below --min-kappa; 2 for a bad labels file (file:line: an unknown case, a missing
    field, a label that is not pass/fail). The workflow: docs/models.md.
    """
    import asyncio

    result = asyncio.run(_calibrate(list(suites), labels_file, no_cache))
    if as_json:
        from .._core.redact import redact

        click.echo(redact(json.dumps(result, ensure_ascii=False, indent=2)))  # outputs may quote secrets
    else:
        _print(result)
    if min_kappa is not None:
        kappa = result["kappa"]
        if kappa is None or kappa < min_kappa:
            why = "cannot be computed for" if kappa is None else f"{kappa:.2f} is below"
            click.echo(f"specrun: kappa {why} --min-kappa {min_kappa:g}", err=True)
            raise click.exceptions.Exit(1)


async def _calibrate(suites: list[str], labels_file: Path | None, no_cache: bool) -> dict[str, Any]:
    from .._judges.calibration import Tally, judge_labels, judged_assertions, read_labels
    from .._run.session import RunRequest, RunSession
    from .._run.settings import RunOptions

    if labels_file is not None and labels_file.exists() and not labels_file.is_file():
        from .._core.errors import UsageError  # it is read twice (checked, then judged): a file, not a stream

        raise UsageError(f"--labels {labels_file}: not a regular file (a device or a pipe cannot be read twice)")
    session = RunSession(RunRequest(inputs=suites, options=RunOptions(no_cache=no_cache), history=False))
    tally = Tally()
    try:
        with contextlib.ExitStack() as stack:
            registry, config = session.plugins.registry, session.project.config
            loaded = await session.load()
            every = [case for suite in loaded for case in suite.cases]
            cases = {case.id: case for case in every}
            judged = {case_id: judged_assertions(case, registry, config) for case_id, case in cases.items()}
            twice = {case_id for case_id, count in Counter(c.id for c in every).items() if count > 1}
            if labels_file is not None:  # every line checked here; read again as they are judged
                named = {case_id: None if case_id in twice else case for case_id, case in cases.items()}
                labels, source = read_labels(labels_file, named, judged), str(labels_file)
            else:
                labels, source = _history_labels(session, loaded, judged, stack), "the run history"
            if session.models is not None:  # litellm's import, if a judge needs it, off the clock
                session.models.preload([(a.params.get("model"), None) for named in judged.values() for _, a in named])
                await session.models.ready()
            async for pair in judge_labels(labels, session.runner, registry, session.options.parallel):
                tally.add(pair)
    finally:
        await session.aclose()
    return tally.report(source)


def _history_labels(session: Any, suites: list[Any], judged: dict[str, Any], stack: contextlib.ExitStack) -> Any:
    """The labels given in the viewer to the cases of ``suites``, read from the history (kept
    open on ``stack``) as they are judged, after a first pass has counted them; a UsageError
    when there are none."""
    from .._core.errors import UsageError
    from .._core.identity import suite_key
    from .._history.store import History
    from .._judges.calibration import history_labels

    root = session.project.root
    cases = {(suite_key(s.path, root), c.id): c for s in suites for c in s.cases}  # CaseKey.any_agent
    history = History.open(root, session.project.config)  # a HistoryError says why not (off, missing)
    stack.callback(history.close)
    kept = left_out = 0
    for label in history_labels(history.labels(), cases, judged):
        kept += label is not None
        left_out += label is None
    if not kept:
        other = f" ({left_out} of other cases or assertions)" if left_out else ""
        raise UsageError(
            f"no labels for these suites in the run history{other}: mark judged results"
            " I agree / I disagree in `specrun view`, or pass --labels FILE"
        )
    if left_out:
        click.echo(f"{left_out} label(s) of the history are of other suites, cases or assertions: left out", err=True)
    return (label for label in history_labels(history.labels(), cases, judged) if label is not None)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _line(name: str, numbers: dict[str, Any]) -> str:
    kappa = "-" if numbers["kappa"] is None else f"{numbers['kappa']:.2f}"
    undecided = f"  undecided {numbers['undecided']}" if numbers["undecided"] else ""
    return (
        f"{name:<28} n={numbers['n']:<4} agreement {_rate(numbers['agreement']):>6}  kappa {kappa:>5}"
        f"  tpr {_rate(numbers['tpr']):>6}  tnr {_rate(numbers['tnr']):>6}{undecided}"
    )


def _print(result: dict[str, Any]) -> None:
    from .._core.redact import redact

    lines = [f"labels from {result['labels']}", _line("overall", result)]
    for case in result["cases"]:
        lines.append(_line(f"case {case['case']}", case))
        lines.extend(_line(f"  {a['assertion']}", a) for a in result["assertions"] if a["case"] == case["case"])
    for title, entries in (("disagreements", result["disagreements"]), ("undecided", result["errors"])):
        if entries:
            lines.append(f"{title} ({len(entries)}):")
        for e in entries:
            lines.append(
                f"  {e['where']} {e['case']} {e['assertion']}: human {e['human']},"
                f" judge {e['judge']}: {json.dumps(e['output'], ensure_ascii=False)}"
            )
            lines.append(f"    reason: {e['reason'] or '(none given)'}")
    click.echo(redact("\n".join(lines)))  # outputs and reasons may quote this machine's secrets
