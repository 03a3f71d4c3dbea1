"""What the ``similar`` assertion costs: its local embedder's load time and CPU per case.

Two runs of the same 1,000 cases against an in-process python agent that answers with a
paraphrase (so nothing waits on a network): one checked with ``similar`` (the local WordLlama
embedder), one with ``contains``. The difference in the specrun process's CPU, divided by the
cases, is what ``similar`` adds per case, its one model load included; the load itself is
timed on its own in this process (CPU and wall), and so is the embedding of one case.

    python bench/similar_bench.py [--cases 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, run_specrun, write_suite

AGENT = """
def answer(messages, ctx):
    return "The capital city of France is Paris, case " + messages[-1].text
"""
EXPECTED = ["Paris is the capital of France.", "France's capital is Paris."]


def project(folder: Path, cases: int, check: dict) -> None:
    (folder / "specrun.yaml").write_text("timeout: 60s\n")
    (folder / "bench_agent.py").write_text(AGENT)
    (folder / "agent.yaml").write_text("target: python:bench_agent:answer\n")
    write_suite(
        folder / "suite.jsonl", [{"id": f"c{i:05d}", "input": str(i), "assertions": [check]} for i in range(cases)]
    )


def load_and_embed() -> tuple[float, float, float]:
    """CPU-ms and wall-ms of loading the model once, and CPU-ms of one case's embedding and scores."""
    sys.path.insert(0, str(ROOT / "plugins"))
    from specrun_plugins.assertions import similar

    cpu, wall = time.process_time(), time.perf_counter()
    similar._load_local()
    load_cpu, load_wall = (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000
    cpu = time.process_time()
    for i in range(1000):
        vectors = similar._local_vectors([f"The capital city of France is Paris, case {i}", *EXPECTED])
        [similar.cosine(vectors[0], v) for v in vectors[1:]]
    return load_cpu, load_wall, (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_cpu, load_wall, embed_ms = load_and_embed()
    print(f"model load: {load_cpu:.0f} CPU-ms, {load_wall:.0f} ms wall; one case's embedding: {embed_ms:.3f} CPU-ms")
    checks = {
        "similar": {"type": "similar", "value": EXPECTED, "threshold": 0.5},
        "contains": {"type": "contains", "value": "Paris"},
    }
    cpu: dict[str, list[float]] = {name: [] for name in checks}
    for _ in range(args.repeat):
        for name, check in checks.items():
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                project(folder, args.cases, check)
                done = run_specrun(["suite.jsonl", "--no-history", "-o", "out.jsonl", "-j", "20"], folder)
                assert done["code"] == 0, done["stderr"]
                assert (folder / "out.jsonl").read_text().count('"status": "passed"') >= args.cases, name
                cpu[name].append(done["cpu"])
                print(f"{name:8s} {args.cases} cases: {done['cpu']:.2f} CPU-s, {done['wall']:.2f} s wall")
    extra = (statistics.median(cpu["similar"]) - statistics.median(cpu["contains"])) * 1000 / args.cases
    print(f"similar adds {extra:.2f} CPU-ms per case over contains (median of {args.repeat}), its model load included")
    print(f"without the one load: {extra - load_cpu / args.cases:.2f} CPU-ms per case")


if __name__ == "__main__":
    main()
