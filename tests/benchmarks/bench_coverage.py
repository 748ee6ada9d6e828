"""Benchmark of ``assess.measures.ppi.coverage``: 1,000 repeats on the iKAT 2024 NIST vs GPT-4 pairs.

Run: ``python tests/benchmarks/bench_coverage.py [--repeats 1000] [--sample 200 500 1000]``. The
issue's target: 1,000 repeats on the 8,103 shared pairs under 5 s. Without ../shared it runs on a
synthetic population of the same size (stated in the output). Prints one line per sample size:
time, coverage and mean interval width for PPI and for the human labels alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from assess.formats.trec import parse_qrels  # noqa: E402
from assess.measures.ppi import coverage  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
NIST = DATA / "gyeozai-CFDA-TREC-iKAT2025" / "DATA" / "topics" / "2024_test_qrels.trec"
GPT4 = DATA / "irlabamsterdam-CONE-RAG" / "resources" / "automatic_resources" / "llm-gpt4-pool-depth-30.txt"


def labels(path: Path) -> dict:
    return {(q.turn_id, q.item_id): q.grade for q in parse_qrels(path)}


def synthetic(n: int = 8103, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    human = rng.choice(5, size=n, p=[0.5, 0.2, 0.2, 0.08, 0.02])
    judge = np.clip(human + rng.choice([-2, -1, 0, 1, 2], size=n, p=[0.05, 0.2, 0.45, 0.2, 0.1]), 0, 4)
    items = [(f"t{i % 100}", f"p{i}") for i in range(n)]
    return dict(zip(items, human.tolist())), dict(zip(items, judge.tolist()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1000)
    parser.add_argument("--sample", type=int, nargs="+", default=[100, 200, 500, 1000, 2000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if NIST.exists() and GPT4.exists():
        reference, judge, what = labels(NIST), labels(GPT4), "iKAT 2024 NIST (reference) vs GPT-4 depth-30 (judge)"
    else:
        reference, judge = synthetic()
        what = "synthetic population (../shared absent)"
    print(what)
    for n in args.sample:
        start = time.perf_counter()
        out = coverage(reference, judge, threshold=2, sample=n, repeats=args.repeats, seed=args.seed)
        took = time.perf_counter() - start
        print(
            f"n_items {out['n_items']}  sample {n:5d}  repeats {args.repeats}  {took:6.2f} s  "
            f"true {out['true_value']:.4f}  "
            f"ppi coverage {out['ppi']['coverage']:.3f} width {out['ppi']['mean_width']:.4f}  "
            f"human-only coverage {out['human_only']['coverage']:.3f} width {out['human_only']['mean_width']:.4f}  "
            f"width ratio {out['ppi']['mean_width'] / out['human_only']['mean_width']:.3f}"
        )


if __name__ == "__main__":
    main()
