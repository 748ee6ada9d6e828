"""Benchmark of issue 37: `audit simulate` with 4 policies x 5 budgets x 200 repeats on the iKAT 2024 store (target
under 60 s), for P@5 and nDCG@5, the sequential policy alone, and the active queue of 1,000 items (`audit sample
--design active`, target under 2 s).

Run: ``python tests/benchmarks/bench_budget.py [--db STORE] [--repeats 200]``. Without --db it builds the iKAT 2024
store of docs/cli.md from ../shared/data, adds the eight runs of ``tests.ikat_store.add_shared_runs`` and a second
judge (GPT-4's grades, a seeded 30% moved one grade: the disagreement policy needs one). Prints the timings and
the curve (coverage, width, tau, pairs settled per policy and budget) that docs/estimates.md reports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from assess.cli import main  # noqa: E402
from store import open_db  # noqa: E402

BUDGETS = (100, 200, 400, 800, 1600)
POLICIES = ("uniform", "stratified", "disagreement", "active")


def build(target: Path) -> None:
    from store.audit import task_labels
    from store.sources import sign_in
    from tests.ikat_store import add_shared_runs, build_ikat2024, missing_files

    if missing_files():
        sys.exit(f"the public iKAT files are absent: {missing_files()[0]}")
    build_ikat2024(target)
    add_shared_runs(target)
    with open_db(target) as db:
        gpt = task_labels(db, "passage", ["llm:gpt-4"])["llm:gpt-4"]
        sign_in(db, "bench")
    rng = np.random.default_rng(0)
    qrels = target.parent / "second.qrels"
    lines = []
    for (turn, passage), g in sorted(gpt.items()):
        moved = int(np.clip(g + rng.choice([-1, 1]), 0, 4)) if rng.random() < 0.3 else g
        lines.append(f"{turn} 0 {passage} {moved}\n")
    qrels.write_text("".join(lines), encoding="utf-8")
    if main(["import", "qrels", str(qrels), "--source", "llm:second", "--db", str(target)]):
        sys.exit("importing the second judge failed")


def _table(report: dict) -> None:
    print("| policy | budget | coverage | mean width | tau | pairs settled | judged |")
    print("|---|---|---|---|---|---|---|")
    for r in report["results"]:
        print(
            f"| {r['policy']} | {r['budget']} | {r['coverage']:.3f} | {r['mean_width']:.3f} | {r['tau']:.3f} "
            f"| {r['settled']:.3f} | {r['spent']:.0f} |"
        )


def run(db_path: str, repeats: int) -> None:
    from assess.services.budget import active_sample, simulate_view

    timings, reports = [], {}
    with open_db(db_path) as db:
        for measure in ("P@5", "nDCG@5"):
            for policies in (POLICIES, ("active-sequential",)):
                start = time.perf_counter()
                report = simulate_view(
                    db, "nist", "llm:gpt-4", measure=measure, budgets=BUDGETS, policies=policies, repeats=repeats,
                    second="llm:second",
                )  # fmt: skip
                took = time.perf_counter() - start
                assert len(report["results"]) == len(policies) * len(BUDGETS)
                label = f"{len(policies)} policies" if len(policies) > 1 else policies[0]
                timings.append(
                    f"audit simulate {measure}: {label} x {len(BUDGETS)} budgets x {repeats} repeats: {took:.2f} s"
                )
                reports.setdefault(measure, []).extend(report["results"])
            start = time.perf_counter()
            queued = active_sample(
                db, f"bench-{time.time_ns()}", "llm:gpt-4", budget=1000, measure=measure, assessor="bench", by="bench"
            )
            took = time.perf_counter() - start
            timings.append(
                f"active queue ({measure}) of {queued['items']} items (of {queued['population']}): {took:.2f} s"
            )
    print("\n".join(timings))
    for measure, results in reports.items():
        print(f"\n{measure}")
        _table({"results": results})


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a store built by this script before (default: build one)")
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    if args.db:
        run(args.db, args.repeats)
        return
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "ikat2024.db"
        build(target)
        run(str(target), args.repeats)


if __name__ == "__main__":
    cli()
