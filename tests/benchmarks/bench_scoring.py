"""Timings of the scoring module (not collected by pytest): run ``python tests/benchmarks/bench_scoring.py``.

1. GFRC2 + GFRC for 10,000 conversations x 30 nuggets, from the JSON-like document (target < 2 s).
2. Cohen's kappa report on 1,000,000 label pairs (target < 0.5 s for one kappa).
3. 40 runs x 120 turns (depth 100) with the CAsT measures: ours vs ir_measures alone (target < 20% overhead).
Each figure is the median of several repetitions.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def median_time(function, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gfrc_document(n_conv: int = 10_000, n_nuggets: int = 30, seed: int = 0) -> dict:
    rng = random.Random(seed)
    pronouns, hindex = ["he", "she", "other"], ["G1", "G2", "G3", "G4"]
    conversations = []
    for c in range(n_conv):
        pos, nuggets = 1, []
        for j in range(n_nuggets):
            start = pos + rng.randint(0, 20)
            end = start + rng.randint(0, 5)
            pos = end + 1
            nuggets.append(
                {
                    "turn": 1 + j // 10,
                    "start": start,
                    "end": end,
                    "level": rng.randint(1, 2),
                    "groups": {"PRONOUN": rng.choice(pronouns), "HINDEX": rng.choice(hindex)},
                }
            )
        conversations.append({"id": f"c{c}", "nuggets": nuggets})
    return {
        "L": 1000,
        "max_level": 2,
        "conversations": conversations,
        "attributes": [
            {"name": "PRONOUN", "kind": "nominal", "groups": pronouns},
            {"name": "HINDEX", "kind": "ordinal", "groups": hindex},
        ],
    }


def bench_gfrc() -> None:
    from assess.measures.gfrc import gfrc2_scores, gfrc_scores, nugget_table, parse_attributes, score_gfrc2_document

    data = gfrc_document()
    total = median_time(lambda: score_gfrc2_document(data), repeat=3)
    attributes = parse_attributes(data["attributes"])
    table = nugget_table(data["conversations"], attributes)
    core = median_time(lambda: (gfrc2_scores(table, attributes), gfrc_scores(table, attributes)))
    print(
        f"GFRC2+GFRC, 10,000 conversations x 30 nuggets: {total:.3f} s end to end "
        f"(document in, dict out; scoring arrays alone {core:.3f} s)  [target < 2 s]"
    )


def bench_kappa() -> None:
    import numpy as np

    from assess.measures.agreement import agreement_report, cohen_kappa

    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 1_000_000)
    b = np.clip(a + rng.integers(-1, 2, 1_000_000), 0, 4)
    scale = [0, 1, 2, 3, 4]
    one = median_time(lambda: cohen_kappa(a, b, scale=scale, weights="quadratic"))
    as_lists = (a.tolist(), b.tolist())
    lists = median_time(lambda: cohen_kappa(*as_lists, scale=scale, weights="quadratic"))
    report = median_time(lambda: agreement_report(*as_lists, scale=scale, weights="linear", threshold=2), repeat=3)
    print(
        f"Cohen's kappa, 1,000,000 pairs: {one:.3f} s (numpy arrays), {lists:.3f} s (Python lists); "
        f"full agreement_report incl. bootstrap CI {report:.3f} s  [target < 0.5 s]"
    )


def bench_runs() -> None:
    import ir_measures
    import numpy as np

    from assess.measures.rankings import cast_measures, evaluate_runs

    rng = np.random.default_rng(0)
    qrels = {f"t{q}": {f"d{d}": int(rng.integers(0, 5)) for d in range(200)} for q in range(120)}
    runs = {
        f"run{r}": {
            f"t{q}": {f"d{int(d)}": float(s) for d, s in zip(rng.choice(400, 100, replace=False), rng.random(100))}
            for q in range(120)
        }
        for r in range(40)
    }
    measures = cast_measures(2)

    def alone():
        evaluator = ir_measures.pytrec_eval.evaluator(measures, qrels)
        return {name: list(evaluator.iter_calc(run)) for name, run in runs.items()}

    def ours():
        return evaluate_runs(qrels, runs, measures)

    ours()  # warm up
    base_times, our_times = [], []
    for _ in range(7):  # interleave, so that machine load hits both equally
        base_times.append(median_time(alone, repeat=1))
        our_times.append(median_time(ours, repeat=1))
    base, mine = statistics.median(base_times), statistics.median(our_times)
    print(
        f"40 runs x 120 turns (depth 100, 6 measures): ours {mine:.3f} s vs ir_measures alone {base:.3f} s "
        f"-> overhead {100 * (mine / base - 1):+.1f}%  [target < 20%]"
    )


def main() -> None:
    print(
        f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    bench_gfrc()
    bench_kappa()
    bench_runs()


if __name__ == "__main__":
    main()
