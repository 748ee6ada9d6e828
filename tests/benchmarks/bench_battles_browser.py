"""Real-browser benchmark of /battles: key press -> next battle on screen, beside the bare one-button Streamlit
app (the framework floor), measured as tests/benchmarks/bench_browser.py measures /judge (same probe, same
alternating blocks, same floors; its functions are reused).

The store: the demo plus responses of six more runs to each of its 12 turns (9 runs: 36 pairs per turn), and a
plan of all pairs (432 battles). The verdict keys (A, L, T, N and the arrows) are pressed at random; the
watched line is the progress bar's "Battle n of N · ...".

Run: python tests/benchmarks/bench_battles_browser.py [--presses 60] [--block 10] [--gap 0.3] [--warmup 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_browser import (  # noqa: E402
    FLOOR,
    Kind,
    cpu_model,
    floor_server,
    interleaved,
    measure,
    open_page,
    percentile,
)

BATTLES = Kind("battles", r"^Battle (\d+) of (\d+) ·", ("A", "L", "T", "N", "ArrowLeft", "ArrowRight"))


def prepare_store(target: str) -> int:
    """The demo, six more runs answering every turn, and the plan ``bench`` of all pairs; its size."""
    from assess.services import battles
    from assess.services.loading import load_demo
    from assess.tasks import CitedResponse, CitedSentence
    from store import open_db
    from store import responses as cited
    from store.db import column

    with open_db(target) as db:
        load_demo(db)
        turns = column(db, "SELECT DISTINCT turn_id FROM responses")
        extra = [
            CitedResponse(
                f"extra-{k}",
                turn,
                (CitedSentence(f"Answer {k} to {turn}, first sentence."), CitedSentence("A second sentence.")),
            )
            for k in range(6)
            for turn in turns
        ]
        cited.add_responses(db, "extra.jsonl", extra)
        return battles.plan(db, "bench", "all")["pairs"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Key press -> next battle on /battles beside a bare Streamlit app.")
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--gap", type=float, default=0.3)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server

    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is absent: this benchmark needs Debian's chromium (no browser is downloaded)")
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench_battles_") as tmp_name:
        tmp = Path(tmp_name)
        target = str(tmp / "bench.db")
        planned = prepare_store(target)
        with (
            streamlit_server(tmp, db=target) as (url, _),
            floor_server(tmp / "floor.log") as floor_url,
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                page = open_page(browser, f"{url}/battles?assessor=bench-browser", BATTLES)
                floor = open_page(browser, floor_url + "/", FLOOR)
                warm = random.Random(0)
                for one, kind in ((floor, FLOOR), (page, BATTLES)):
                    measure(one, kind, args.warmup, rng=warm)
                found = interleaved(
                    {"floor": (floor, FLOOR), "battles": (page, BATTLES)}, args.presses, args.block, args.gap
                )
            finally:
                browser.close()
        from tests.helpers import rows

        stored = rows(target, "SELECT COUNT(*) FROM battles WHERE source = 'bench-browser'", {})[0][0]
    load_end = os.getloadavg()
    f = [x.ms for x in found["floor"]]
    b = [x.ms for x in found["battles"]]
    f50, f95, b50, b95 = percentile(f, 0.5), percentile(f, 0.95), percentile(b, 0.5), percentile(b, 0.95)
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load average {load_start[0]:.1f} -> {load_end[0]:.1f}")
    print(f"plan of {planned} battles; {stored} verdicts stored for {args.warmup + args.presses} presses")
    print(f"bare floor: p50 {f50:.0f} ms, p95 {f95:.0f} ms ({len(f)} presses)")
    print(f"/battles:   p50 {b50:.0f} ms, p95 {b95:.0f} ms ({len(b)} presses)")
    print(
        f"ratio: p50 {b50 / f50:.2f}x, p95 {b95 / f95:.2f}x (target <= 1.5x: "
        f"{'met' if b50 <= 1.5 * f50 and b95 <= 1.5 * f95 else 'NOT met'})"
    )
    return 0 if stored == args.warmup + args.presses else 1


if __name__ == "__main__":
    sys.exit(main())
