"""Timings of the judge-audit measures (not collected by pytest): run ``python tests/benchmarks/bench_audit.py``.

1. agreement_matrix over 10 sources x 50,000 labelled items each (all 45 pairs), with breakdowns by
   topic, turn depth and personal turn; target: well under 2 s without bootstrap intervals per group.
   Measured without any bootstrap, with 1,000 replicates for each pair's overall figures, and with
   100 replicates for every pair and group (group intervals cost replicates x groups x 25 cells per pair).
2. compare_systems for 50 runs x 200 topics (1,000 bootstrap replicates over topics, 1,225 run pairs
   t-tested under both sources).
3. bias_report and self_consistency on 50,000 items.
Each figure is the median of several repetitions (after one warm-up call, so imports are not counted).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from assess.measures.agreement import agreement_matrix
from assess.measures.bias import bias_report, self_consistency
from assess.measures.systems import compare_systems


def median_time(function, repeat: int = 3) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sources(n_sources: int = 10, per_source: int = 50_000, pool: int = 60_000, seed: int = 0):
    """Labels of ``n_sources`` sources on 0-4, each on ``per_source`` items of a ``pool``, noisy around a truth."""
    rng = np.random.default_rng(seed)
    items = [(f"t{i % 200}_{i % 7}", f"doc{i}") for i in range(pool)]
    truth = rng.integers(0, 5, pool)
    labels, kinds = {}, {}
    for s in range(n_sources):
        chosen = rng.choice(pool, per_source, replace=False)
        noisy = np.clip(truth[chosen] + rng.integers(-1, 2, per_source) * (rng.random(per_source) < 0.4), 0, 4)
        labels[f"source{s}"] = {items[i]: int(v) for i, v in zip(chosen.tolist(), noisy.tolist())}
        kinds[f"source{s}"] = "human" if s < 3 else "llm"
    groups = {
        "topic": {item: item[0].split("_")[0] for item in items},
        "depth": {item: int(item[0].split("_")[1]) for item in items},
        "personal": {item: int(item[1][3:]) % 3 == 0 for item in items},
    }
    return labels, kinds, groups


def main() -> None:
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, numpy {np.__version__}")
    labels, kinds, groups = sources()
    scale = [0, 1, 2, 3, 4]
    for title, kwargs in (
        ("no bootstrap", {"bootstrap": 0}),
        ("1,000 replicates per pair, none per group", {"bootstrap": 1000, "group_bootstrap": False}),
        ("100 replicates per pair and per group", {"bootstrap": 100, "group_bootstrap": True}),
    ):
        seconds = median_time(
            lambda kwargs=kwargs: agreement_matrix(labels, scale=scale, kinds=kinds, groups=groups, **kwargs)
        )
        print(f"agreement_matrix, 10 sources x 50,000 items, 45 pairs, 3 breakdowns, {title}: {seconds:.3f} s")

    rng = np.random.default_rng(1)
    quality = rng.random(50)
    reference = {
        f"run{r:02d}": {f"t{t}": float(quality[r] + rng.normal(0, 0.3)) for t in range(200)} for r in range(50)
    }
    other = {run: {t: v + float(rng.normal(0, 0.2)) for t, v in topics.items()} for run, topics in reference.items()}
    seconds = median_time(lambda: compare_systems(reference, other))
    print(f"compare_systems, 50 runs x 200 topics, 1,000 replicates, 1,225 pairs t-tested twice: {seconds:.3f} s")

    human = labels["source0"]
    llm = labels["source5"]
    lengths = {item: len(item[1]) * 20 for item in human}
    depth = groups["depth"]
    personal = groups["personal"]
    seconds = median_time(lambda: bias_report(llm, human, lengths=lengths, depth=depth, personal=personal))
    print(f"bias_report (length, depth, personal) on {len(set(llm) & set(human)):,} shared items: {seconds:.3f} s")
    samples = {item: [g, g, min(4, g + 1)] for item, g in list(llm.items())}
    seconds = median_time(lambda: self_consistency(samples, scale=scale))
    print(f"self_consistency, {len(samples):,} items x 3 samples: {seconds:.3f} s")


if __name__ == "__main__":
    main()
