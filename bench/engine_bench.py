"""The engine's own cost per case: 200,000 cases against an instant (async) python agent, one ``contains``.

The agent answers at once and the check is a substring test, so what the process spends is the
engine's: loading, planning, the runner, sealing each result, the stream line, the run history
row, the statistics and the console. Each figure is of one fresh ``specrun`` process as a user
runs it (``specrun suite.jsonl -q --parallel 50 -o out.jsonl``, history on by default), read
with ``wait4``. The floor (importing, discovering the project, starting, the summary) is taken
out by running a small suite of the same shape in the same session:

    CPU-ms per case = (CPU(N cases) - CPU(small)) / (N - small)

The machine is shared: each size runs ``--repeat`` times, interleaved, and the medians are
reported. Goals (issue 24): at most 0.07 CPU-ms per case and 100 MB peak RSS at 200,000 cases
with the history on.

    python bench/engine_bench.py [--cases 200000] [--small 2000] [--repeat 3] [--no-history] [--sync]
                                 [--baseline OTHER/.venv/bin/specrun] [--profile FILE]

``--baseline`` measures another checkout's ``specrun`` in the same rounds, each of its runs next
to this one's: on a shared machine only figures taken side by side compare.

The agent is an ``async`` function by default; ``--sync`` makes it a plain function, which the
``python`` target runs in a worker thread (that hand-off is then part of the figure).

``--profile FILE`` runs the big suite once more under cProfile and writes its statistics to FILE
(read with ``python -m pstats FILE``). ``bench/engine_instructions.py`` counts the same workload
in instructions, which other work on the machine does not move.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from _common import SPECRUN
from memory_bench import check_stream, measure

CPU_GOAL_MS = 0.07
RSS_GOAL_MB = 100
AGENT = "async def answer(messages, ctx):\n    return 'ok: ' + ctx.case_id\n"


def write_project(folder: Path, cases: int, sync: bool = False) -> None:
    (folder / "specrun.yaml").write_text("timeout: 60s\n")
    (folder / "agent.yaml").write_text("target:\n  type: python\n  function: instant:answer\n")
    (folder / "instant.py").write_text(AGENT.removeprefix("async ") if sync else AGENT)
    with (folder / "suite.jsonl").open("w") as out:
        for i in range(cases):
            check = {"type": "contains", "value": "ok"}
            case = {"id": f"case-{i:07d}", "input": f"question {i}", "assertions": [check]}
            out.write(json.dumps(case) + "\n")


def run_once(
    folder: Path, cases: int, history: bool, profile: Path | None = None, program: str = SPECRUN
) -> dict[str, float]:
    (folder / ".specrun").exists() and _clear(folder / ".specrun")  # each run starts with no history
    args = ["suite.jsonl", "-q", "--parallel", "50", "-o", "out.jsonl"] + ([] if history else ["--no-history"])
    if profile is not None:  # the same process under cProfile (its figures are not the measured ones)
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), program, *args]
        figures = measure(argv[1:], folder, program=argv[0])
    else:
        figures = measure(args, folder, program=program)
    assert figures["code"] == 0, figures["stderr"][-3000:]
    check_stream(folder / "out.jsonl", cases)
    return figures


def _clear(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--small", type=int, default=2000, help="the floor's suite size")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-history", action="store_true", help="run with --no-history (nothing recorded)")
    parser.add_argument("--sync", action="store_true", help="a sync agent function (run in a worker thread)")
    parser.add_argument("--profile", type=Path, help="profile one more big run with cProfile into this file")
    parser.add_argument(
        "--baseline",
        help="another specrun executable (another checkout's) measured in the same rounds, interleaved",
    )
    args = parser.parse_args()
    history = not args.no_history
    with tempfile.TemporaryDirectory() as big_dir, tempfile.TemporaryDirectory() as small_dir:
        big, small = Path(big_dir), Path(small_dir)
        write_project(big, args.cases, args.sync)
        write_project(small, args.small, args.sync)
        programs = {"this": SPECRUN, **({"baseline": args.baseline} if args.baseline else {})}
        rows: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {name: [] for name in programs}
        for i in range(args.repeat):
            for name, program in programs.items():
                floor = run_once(small, args.small, history, program=program)
                full = run_once(big, args.cases, history, program=program)
                rows[name].append((floor, full))
                per_case = per_case_of(args, floor, full)
                print(
                    f"round {i + 1} {name}: {args.small:,} cases {floor['cpu']:.2f} CPU s; {args.cases:,} cases"
                    f" {full['wall']:.1f} s wall, {full['cpu']:.1f} CPU s, {full['rss_mb']:.0f} MB"
                    f" -> {per_case:.4f} CPU-ms/case",
                    file=sys.stderr,
                    flush=True,
                )
        if args.profile:
            run_once(big, args.cases, history, profile=args.profile)
    if args.baseline:
        report(args, "baseline", rows["baseline"], history)
        ratios = [
            per_case_of(args, *mine) / per_case_of(args, *theirs) for mine, theirs in zip(*rows.values(), strict=True)
        ]
        print(
            f"this / baseline, round by round: median {statistics.median(ratios):.2f}"
            f" ({', '.join(f'{r:.2f}' for r in ratios)})"
        )
    sys.exit(0 if report(args, "this", rows["this"], history) else 1)


def per_case_of(args: argparse.Namespace, floor: dict[str, float], full: dict[str, float]) -> float:
    """CPU-ms per case of one round: the big run less the floor's run, per case more."""
    return (full["cpu"] - floor["cpu"]) * 1000 / (args.cases - args.small)


def report(
    args: argparse.Namespace, name: str, rows: list[tuple[dict[str, float], dict[str, float]]], history: bool
) -> bool:
    """Print the medians of one executable's rounds; whether they meet the goals."""
    per_case = statistics.median(per_case_of(args, s, f) for s, f in rows)
    rss = statistics.median(f["rss_mb"] for _, f in rows)
    wall = statistics.median(f["wall"] for _, f in rows)
    start = statistics.median(s["cpu"] for s, _ in rows)
    ok = per_case <= CPU_GOAL_MS and rss <= RSS_GOAL_MB
    print(
        f"{name}: {args.cases:,} cases, {'sync' if args.sync else 'async'} agent, history {'on' if history else 'off'},"
        f" median of {args.repeat}: {per_case:.4f} CPU-ms per case (goal {CPU_GOAL_MS}), peak RSS {rss:.0f} MB"
        f" (goal {RSS_GOAL_MB}), wall {wall:.1f} s; the {args.small:,}-case floor {start:.2f} CPU s"
        f"  [{'ok' if ok else 'MISSED'}]"
    )
    return ok


if __name__ == "__main__":
    main()
