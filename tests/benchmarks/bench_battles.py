"""Timing of the battle ranking (not collected by pytest): run ``python tests/benchmarks/bench_battles.py``.

100 systems, 500,000 battles (``--ties``: a share of them ties, 0 by default) drawn from known Bradley-Terry strengths, ranked with 1,000 bootstrap
replicates (target < 10 s): the battles aggregated into per-pair counts, each replicate a multinomial draw of
the pair counts, all replicates fitted at once by Newton's method. Prints the median of ``--repeat`` runs and
how far the estimate lies from the true strengths.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    import numpy as np

    from assess.measures.battles import rank_indices

    parser = argparse.ArgumentParser()
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--battles", type=int, default=500_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--ties", type=float, default=0.0, help="share of battles drawn as ties, whatever the strengths"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, m = args.systems, args.battles
    true = rng.normal(size=n)
    left = rng.integers(0, n, m)
    right = (left + rng.integers(1, n, m)) % n
    p = 1 / (1 + np.exp(true[right] - true[left]))
    u = rng.random(m)
    ties = args.ties
    winner = np.where(u < ties, 2, np.where(u < ties + (1 - ties) * p, 0, 1))
    times, got = [], None
    from threadpoolctl import threadpool_info

    blas = ", ".join(f"{i['internal_api']} {i['num_threads']} threads" for i in threadpool_info())
    for _ in range(args.repeat):
        start = time.perf_counter()
        got = rank_indices(left, right, winner, n, replicates=args.replicates)
        times.append(time.perf_counter() - start)
    error = np.abs(got["strength"] - (true - true.mean())).max()
    covered = np.mean((got["low"] <= true - true.mean()) & (true - true.mean() <= got["high"]))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}, {blas}"
    )
    print(
        f"{n} systems, {m:,} battles, {args.replicates} replicates: median {statistics.median(times):.2f} s "
        f"(runs {', '.join(f'{t:.2f}' for t in times)}; target < 10 s); "
        f"largest error vs the true strengths {error:.3f}, 95% intervals covering them {covered:.0%}"
        + (" (ties drawn regardless of strength pull the estimates toward 0)" if ties else "")
    )


def controlled_main() -> None:
    """``--controlled``: the controlled ranking (two controls, one a citation confound) of the same battles with
    1,000 score-bootstrap replicates (target < 20 s), then the top pair's fragility (target < 30 s)."""
    import numpy as np

    from assess.measures import battle_controls as bc
    from assess.measures import fragility as fr

    rng = np.random.default_rng(0)
    n, m = 100, 500_000
    true = rng.normal(size=n)
    habit = rng.uniform(1, 6, n)
    left = rng.integers(0, n, m)
    right = (left + rng.integers(1, n, m)) % n
    fa = np.stack([rng.poisson(100, m), rng.poisson(habit[left])], 1)
    fb = np.stack([rng.poisson(100, m), rng.poisson(habit[right])], 1)
    d = bc.differences(fa, fb)
    p = 1 / (1 + np.exp(-(true[left] - true[right] + 0.8 * (d[:, 1] - d[:, 1].mean()) / d[:, 1].std())))
    y = (rng.random(m) < p).astype(float)
    start = time.perf_counter()
    got = bc.rank_controlled(left, right, y, d, n, ["length", "citations"], replicates=1000, level=0.95, seed=0)
    ranked = time.perf_counter() - start
    rank = fr.order(got["strength"])
    start = time.perf_counter()
    chosen = fr.flip_set(left, right, y, d, n, int(rank[0]), int(rank[1]))
    fragile = time.perf_counter() - start
    print(
        f"controlled: {n} systems, {m:,} battles, 1000 replicates: {ranked:.2f} s (target < 20 s); "
        f"citations coefficient {got['coef'][1]:.3f}; fragility of the top pair: "
        f"{'none found' if chosen is None else len(chosen)} battles in {fragile:.2f} s (target < 30 s); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__" and "--controlled" in sys.argv:
    controlled_main()
    sys.exit(0)


if __name__ == "__main__":
    main()
