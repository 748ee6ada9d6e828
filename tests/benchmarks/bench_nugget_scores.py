"""Timing of the graded nugget scores (not collected by pytest): run ``python tests/benchmarks/bench_nugget_scores.py``.

50 runs x 200 turns x 30 gold nuggets (300,000 graded labels, a third vital, one in ten unjudged):
the AutoNuggetizer All / Vital / Weighted scores (strict and lax) and NtR recall at both thresholds
for every run, as ``score nuggets --assignments`` computes them after reading. Target: under 1 s.
The figure is the median of 5 repetitions after one warm-up call.
"""

from __future__ import annotations

import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from assess.measures.nugget_recall import LAX, STRICT, ntr_run, nugget_scores_run

RUNS, TURNS, NUGGETS = 50, 200, 30


def data(seed: int = 0):
    rng = random.Random(seed)
    importance = {
        f"t{t}": {f"[{k}]": ("vital" if k % 3 == 0 else "okay") for k in range(1, NUGGETS + 1)} for t in range(TURNS)
    }
    support = {
        f"run{r}": {
            turn: {k: rng.choice((0, 1, 2)) for k in nuggets if rng.random() > 0.1}
            for turn, nuggets in importance.items()
        }
        for r in range(RUNS)
    }
    return support, importance


def score_all(support, importance) -> dict:
    keys = {t: set(n) for t, n in importance.items()}
    return {
        run: (
            nugget_scores_run(turns, importance),
            ntr_run(turns, keys, threshold=STRICT),
            ntr_run(turns, keys, threshold=LAX),
        )
        for run, turns in support.items()
    }


def main() -> None:
    support, importance = data()
    labels = sum(len(v) for turns in support.values() for v in turns.values())
    score_all(support, importance)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        score_all(support, importance)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"python {platform.python_version()} on {platform.machine()}")
    print(
        f"{RUNS} runs x {TURNS} turns x {NUGGETS} nuggets ({labels:,} labels): All/Vital/Weighted strict+lax and "
        f"NtR strict+lax in {median:.3f} s (median of 5; min {min(times):.3f} s) — target < 1 s: "
        f"{'met' if median < 1 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
