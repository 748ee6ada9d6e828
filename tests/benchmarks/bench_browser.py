"""Real-browser benchmark: key press -> next passage id on screen on /judge, side by side with the same
measurement on a bare one-button Streamlit app (tests/benchmarks/floor_app.py, the framework floor).

One headless Chromium (Debian's /usr/bin/chromium through Playwright, flags as tests/browser_support.py)
holds two pages: /judge of the workbench, signed in (open mode, ``?assessor=``) on a store with the
iKAT 2024 NIST pool (20,575 pooled pairs; a synthetic pool of the same size when ../shared/data is
absent), and the floor app. Both are measured in the same run, in alternating blocks of presses, so
the machine's noise hits both.

What is measured, in the page's own clock (performance.now()): from the keydown event of the key
press (page.keyboard.press) to the DOM mutation that shows the next passage id (judge: the line
"Passage ID (n of N)"; floor: the line "item n"), caught by a MutationObserver. The next press
waits until the script run is over (and --gap seconds).

With --assessors 20, 19 more assessors judge on the same server meanwhile: websocket clients that
speak Streamlit's protocol as a browser tab does (tests/benchmarks/st_client.py), each pressing a
grade after a think time (uniform, mean --think s); 19 such clients press the floor app's button too,
so both apps are measured at the same concurrency. Everything listens on 127.0.0.1 only; every wait
is bounded; the servers are stopped at the end.

Run: python tests/benchmarks/bench_browser.py [--presses 60] [--assessors 1|20] [--think 2]
     [--db FILE|postgresql://…] [--block 10] [--gap 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import secrets
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data"
TOPICS = DATA / "irlabamsterdam-iKAT/2024/data/2024_test_topics.json"
NIST = DATA / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec"
FLOOR_APP = Path(__file__).resolve().parent / "floor_app.py"
IKAT_PAIRS, IKAT_TURNS, IKAT_TOPICS = 20_575, 116, 17  # the iKAT 2024 NIST pool
ASSESSORS_LOADED = 20

FIRST_LOAD_MS = 180_000  # a first /judge page on a 20k-pair store, while other sessions open too
PRESS_TIMEOUT_MS = 60_000  # one key press -> next item on screen
CLIENT_TIMEOUT_S = 120.0

PASSAGE_WS = re.compile(r"^Passage (`+) ?(.*?) ?\1 \((\d+) of (\d+)\)$")  # the line as the server sends it


@dataclass(frozen=True)
class Kind:
    """What one page shows and how it is pressed."""

    name: str
    line: str  # JS regular expression of the watched line's text; group 1 changes on every press
    keys: tuple[str, ...]  # keyboard shortcuts to press (one picked at random per press)


JUDGE = Kind("judge", r"^Passage (\S+) \((\d+) of (\d+)\)$", ("0", "1", "2", "3", "4"))
FLOOR = Kind("floor", r"^item (\d+)$", ("N",))

# Installed once per page: a keydown listener (capture phase, so before Streamlit's own) notes the
# press time; a MutationObserver notes the first moment the watched line shows another value.
_INSTALL = """
(pattern) => {
  const re = new RegExp(pattern);
  const read = () => {
    for (const el of document.querySelectorAll('[data-testid="stMarkdownContainer"]')) {
      const m = re.exec(el.textContent.trim());
      if (m) return m[1];
    }
    return null;
  };
  const b = window.__bench = {read, before: null, t0: null, t1: null, shown: null, armed: false};
  window.addEventListener('keydown', () => {
    if (b.armed && b.t0 === null) { b.t0 = performance.now(); b.armed = false; }
  }, true);
  new MutationObserver(() => {
    if (b.t0 === null || b.t1 !== null) return;
    const now = read();
    if (now !== null && now !== b.before) { b.t1 = performance.now(); b.shown = now; }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
  return read();
}
"""
_ARM = """
() => { const b = window.__bench; b.before = b.read(); b.t0 = null; b.t1 = null; b.shown = null;
        b.armed = true; return b.before; }
"""
_RESULT = "() => { const b = window.__bench; return {t0: b.t0, t1: b.t1, before: b.before, shown: b.shown}; }"


@dataclass
class Press:
    """One measured key press: milliseconds in the page's clock, the value shown before and after."""

    kind: str
    key: str
    ms: float
    before: str
    shown: str


# ------------------------------------------------------------------------------------------- pages


def open_page(browser, url: str, kind: Kind, *, timeout_ms: int = FIRST_LOAD_MS):
    """A page in a fresh browser context at ``url``, loaded and settled, with the probe installed."""
    from tests.browser_support import STEP_TIMEOUT_MS, settled

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    page = context.new_page()
    page.goto(url, timeout=timeout_ms)
    page.wait_for_function(
        "(p) => { const re = new RegExp(p); return [...document.querySelectorAll("
        "'[data-testid=\"stMarkdownContainer\"]')].some(e => re.test(e.textContent.trim())); }",
        arg=kind.line,
        timeout=timeout_ms,
    )
    settled(page)
    page.evaluate(_INSTALL, kind.line)
    return page


def measure(page, kind: Kind, presses: int, *, gap: float = 0.0, rng: random.Random | None = None) -> list[Press]:
    """Press ``presses`` keys on ``page`` one after the other; each press's time from keydown to the DOM
    showing another value of the watched line (page clock, ms). Waits for the run's end between presses."""
    from tests.browser_support import press, settled

    rng = rng or random.Random(0)
    out = []
    for _ in range(presses):
        key = rng.choice(kind.keys)
        before = page.evaluate(_ARM)
        if before is None:
            raise RuntimeError(f"{kind.name}: the page shows no line matching {kind.line}")
        press(page, key)
        page.wait_for_function("() => window.__bench.t1 !== null", timeout=PRESS_TIMEOUT_MS)
        r = page.evaluate(_RESULT)
        if r["t0"] is None:
            raise RuntimeError(f"{kind.name}: the page saw no keydown for {key!r}")
        out.append(Press(kind.name, key, r["t1"] - r["t0"], r["before"], r["shown"]))
        settled(page)
        if gap:
            time.sleep(gap)
    return out


def interleaved(pages: dict[str, tuple], presses: int, block: int, gap: float, seed: int = 1) -> dict[str, list]:
    """Measure every page ``presses`` times, in alternating blocks of ``block`` presses."""
    rng = random.Random(seed)
    done: dict[str, list[Press]] = {name: [] for name in pages}
    while any(len(v) < presses for v in done.values()):
        for name, (page, kind) in pages.items():
            n = min(block, presses - len(done[name]))
            if n > 0:
                page.bring_to_front()
                done[name] += measure(page, kind, n, gap=gap, rng=rng)
    return done


# ------------------------------------------------------------------------------------------- servers


@contextlib.contextmanager
def floor_server(log_path: Path, *, bare: bool = True, start_timeout: float = 90):
    """``streamlit run floor_app.py`` on a free port of 127.0.0.1; yields its URL; stopped (its process
    group) on exit. ``bare``: from a folder of its own, so Streamlit runs with its defaults (no
    configuration file), as a bare app does; else from the project root, with the workbench's
    .streamlit/config.toml (the same Streamlit settings as the workbench's server)."""
    import shutil

    from tests.processes import streamlit_app

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", PYTHONUNBUFFERED="1")
    if bare:
        folder = log_path.parent / "floor-bare"
        folder.mkdir(exist_ok=True)
        script = shutil.copy(FLOOR_APP, folder / FLOOR_APP.name)
        with streamlit_app(str(script), log_path, env, start_timeout=start_timeout, cwd=folder) as (url, _proc):
            yield url
    else:
        with streamlit_app(str(FLOOR_APP), log_path, env, start_timeout=start_timeout) as (url, _proc):
            yield url


# ------------------------------------------------------------------------------------------- other assessors


@dataclass
class Crowd:
    """N websocket clients (st_client.StreamlitClient) pressing keys on one app with a think time, in a
    background thread with its own event loop, until stop(). Bounded: every wait has a timeout."""

    url: str
    kind: str  # judge | floor
    n: int
    think: float
    tag: str
    label: str = ""  # how the report names the app (default: kind)
    timeout: float = CLIENT_TIMEOUT_S
    ready: int = 0
    failed: int = 0
    ms: list[float] = field(default_factory=list)  # each press: request sent -> script run finished
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.ready + self.failed < self.n:
            time.sleep(0.2)
        if self.ready < self.n:
            raise RuntimeError(f"{self.kind}: {self.ready} of {self.n} clients ready; errors: {self.errors[:3]}")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 10)

    async def _main(self) -> None:
        tasks = [asyncio.create_task(self._client(i)) for i in range(self.n)]
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _client(self, i: int) -> None:
        from tests.benchmarks.st_client import StreamlitClient

        name = f"{self.tag}-{self.kind}-{i + 1:02d}"
        rng = random.Random(name)
        await asyncio.sleep(0.3 * i)  # staggered arrivals
        if self.kind == "judge":
            client = StreamlitClient(self.url, "judge", f"assessor={name}", timeout=self.timeout)
        else:
            client = StreamlitClient(self.url, "", "", timeout=self.timeout)
        counted = False
        try:
            await client.open()
            if self.kind == "judge" and client.find(PASSAGE_WS) is None:
                raise RuntimeError(f"no passage on the judge page: {client.texts()[:3]}")
            self.ready += 1
            counted = True
            while not self._stop.is_set():
                pause = rng.uniform(0.5 * self.think, 1.5 * self.think) if self.think else 0.0
                stop_at = time.monotonic() + pause
                while time.monotonic() < stop_at and not self._stop.is_set():
                    await asyncio.sleep(min(0.1, max(0.0, stop_at - time.monotonic())))
                if self._stop.is_set():
                    break
                run = await client.click(f"g{rng.randrange(5)}" if self.kind == "judge" else "next")
                self.ms.append((run.finished_at - run.sent_at) * 1000)
                if run.errors:
                    self.errors.append(f"{name}: {'; '.join(run.errors)}")
        except Exception as exc:
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            if not counted:
                self.failed += 1
        finally:
            await client.close()


# ------------------------------------------------------------------------------------------- the store


def synthetic_files(folder: Path, seed: int = 2024) -> tuple[Path, Path]:
    """iKAT-2024-shaped topics and NIST-style qrels of the same size: 17 topics, 116 pooled turns,
    20,575 pooled pairs (no passage text, as with the real qrels)."""
    rng = random.Random(seed)
    topics, qrels = [], []
    pooled = []
    for number in range(IKAT_TOPICS):
        turns = []
        for t in range(1, 13):
            turns.append(
                {
                    "turn_id": t,
                    "utterance": f"Synthetic question {t} of topic {number} about travel, food and health?",
                    "resolved_utterance": f"Synthetic resolved question {t} of topic {number}?",
                    "response": f"A synthetic answer to question {t} of topic {number}. " * 5,
                    "ptkb_provenance": [1],
                    "response_provenance": [f"synthetic-doc-{number:02d}-{t:02d}-0000:0"],
                }
            )
            pooled.append(f"{number}_{t}")
        topics.append(
            {
                "number": number,
                "title": f"Synthetic topic {number}",
                "ptkb": {str(k): f"Synthetic statement {k} about the user." for k in range(1, 13)},
                "turns": turns,
            }
        )
    pooled = sorted(rng.sample(pooled, IKAT_TURNS))
    base, extra = divmod(IKAT_PAIRS, IKAT_TURNS)
    for i, turn in enumerate(pooled):
        for p in range(base + (i < extra)):
            qrels.append(f"{turn} 0 synthetic-doc-{i:03d}-{p // 10:04d}:{p % 10} {rng.choice((0, 0, 0, 1, 2, 3, 4))}")
    topics_path, qrels_path = folder / "synthetic_topics.json", folder / "synthetic_qrels.trec"
    topics_path.write_text(json.dumps(topics), encoding="utf-8")
    qrels_path.write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return topics_path, qrels_path


def prepare_store(target: str, folder: Path) -> str:
    """Make sure the store ``target`` holds a pool: the iKAT 2024 NIST pool (or the synthetic one) is
    imported into it when it holds none. Returns what the pool is."""
    from assess.services.loading import load_file
    from store import open_db
    from store.db import value

    db = open_db(target)
    try:
        pairs = int(value(db, "SELECT COUNT(*) FROM pool") or 0)
        if pairs:
            return f"the store's own pool ({pairs:,} pairs)"
        if NIST.exists() and TOPICS.exists():
            topics, qrels, what = TOPICS, NIST, "iKAT 2024 NIST pool"
        else:
            topics, qrels = synthetic_files(folder)
            what = "synthetic pool of the iKAT 2024 size (../shared/data absent)"
        load_file(db, "topics", topics)
        load_file(db, "qrels", qrels, source="nist")
        pairs = int(value(db, "SELECT COUNT(*) FROM pool") or 0)
        return f"{what}: {pairs:,} pairs"
    finally:
        db.close()


def label_count(target: str, name: str) -> int:
    from tests.helpers import rows

    return int(rows(target, "SELECT COUNT(*) FROM passage_labels WHERE source = :s", {"s": name})[0][0])


# ------------------------------------------------------------------------------------------- report


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (q in 0..1)."""
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def table(results: dict[str, list[Press]], pool: str) -> str:
    """One phase's rows: both floors, /judge, and /judge's ratios to each floor."""
    stats = {
        name: (percentile([p.ms for p in v], 0.5), percentile([p.ms for p in v], 0.95), len(v))
        for name, v in results.items()
    }
    names = {
        "floor": "floor: bare one-button Streamlit app (Streamlit's defaults)",
        "floor-tuned": "floor with the workbench's Streamlit settings (.streamlit/config.toml)",
        "judge": f"/judge ({pool})",
    }
    lines = ["| key press -> next item on screen | presses | p50 (ms) | p95 (ms) |", "|---|---:|---:|---:|"]
    for name, label in names.items():
        if name in stats:
            p50, p95, n = stats[name]
            lines.append(f"| {label} | {n} | {p50:.0f} | {p95:.0f} |")
    j50, j95, _ = stats["judge"]
    for name, label in (("floor", "bare floor"), ("floor-tuned", "floor with the same settings")):
        if name in stats:
            f50, f95, _ = stats[name]
            lines.append(f"| ratio /judge / {label} | | {j50 / f50:.2f}x | {j95 / f95:.2f}x |")
    return "\n".join(lines)


def verdicts(alone: dict[str, list[Press]], loaded: dict[str, list[Press]] | None) -> list[str]:
    """The issue's targets, against the bare floor measured alone (single user) in the same run."""
    f50 = percentile([p.ms for p in alone["floor"]], 0.5)
    f95 = percentile([p.ms for p in alone["floor"]], 0.95)
    j50 = percentile([p.ms for p in alone["judge"]], 0.5)
    j95 = percentile([p.ms for p in alone["judge"]], 0.95)
    out = [
        f"- target, 1 assessor: /judge p50 {j50:.0f} ms <= 1.5 x floor p50 {f50:.0f} ms "
        f"({'met' if j50 <= 1.5 * f50 else 'NOT met'}); p95 {j95:.0f} ms <= 1.5 x floor p95 {f95:.0f} ms "
        f"({'met' if j95 <= 1.5 * f95 else 'NOT met'})"
    ]
    if loaded:
        l95 = percentile([p.ms for p in loaded["judge"]], 0.95)
        out.append(
            f"- target, {ASSESSORS_LOADED} assessors: /judge p95 {l95:.0f} ms <= 2 x the floor's single-user p95 "
            f"{f95:.0f} ms ({'met' if l95 <= 2 * f95 else 'NOT met'})"
        )
    return out


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


# ------------------------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Key press -> next passage on /judge in headless Chromium, beside a bare Streamlit app."
    )
    parser.add_argument("--presses", type=int, default=60, help="measured presses per app (default 60; at least 1)")
    parser.add_argument(
        "--assessors",
        type=int,
        choices=(1, 20),
        default=1,
        help="1: the browser alone; 20: the browser and 19 websocket clients per app (default 1)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=2.0,
        help="mean think time (s) of the 19 other assessors before each key press (uniform 0.5-1.5x; default 2)",
    )
    parser.add_argument(
        "--db",
        help="the store: a SQLite file or a postgresql:// URL (its pool is used; the iKAT 2024 NIST pool is "
        "imported when it holds none); default: a new store in a temporary folder",
    )
    parser.add_argument("--block", type=int, default=10, help="presses per block; floor and judge alternate (10)")
    parser.add_argument("--gap", type=float, default=0.3, help="pause (s) after a run ends before the next press")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured presses per app first (default 3)")
    args = parser.parse_args(argv)
    if not 1 <= args.presses <= 10_000 or args.block < 1 or args.gap < 0 or args.think < 0 or args.warmup < 0:
        parser.error("--presses 1..10000, --block >= 1, --gap, --think, --warmup >= 0")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    from tests.browser_support import CHROMIUM

    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is absent: this benchmark needs Debian's chromium (no browser is downloaded)")
    from playwright.sync_api import sync_playwright

    from tests.browser_support import CHROMIUM_ARGS, streamlit_server

    load_start = os.getloadavg()
    tag = "bb" + secrets.token_hex(3)
    name = f"{tag}-browser"
    crowds: list[Crowd] = []
    with tempfile.TemporaryDirectory(prefix="bench_browser_") as tmp_name:
        tmp = Path(tmp_name)
        target = args.db or str(tmp / "bench.db")
        t = time.perf_counter()
        pool = prepare_store(target, tmp)
        print(f"store ready in {time.perf_counter() - t:.0f} s: {pool}", file=sys.stderr)
        with (
            streamlit_server(tmp, db=target) as (judge_url, _),
            floor_server(tmp / "floor.log") as floor_url,
            floor_server(tmp / "floor-tuned.log", bare=False) as tuned_url,
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                judge = open_page(browser, f"{judge_url}/judge?assessor={name}", JUDGE)
                floor = open_page(browser, floor_url + "/", FLOOR)
                tuned = open_page(browser, tuned_url + "/", FLOOR)
                line = judge.get_by_text(re.compile(r"^Passage \S+ \(\d+ of \d+\)$")).first.inner_text()
                queue = int(re.search(r"of (\d+)\)", line).group(1))
                warm = random.Random(0)
                for page, kind in ((floor, FLOOR), (tuned, FLOOR), (judge, JUDGE)):
                    measure(page, kind, args.warmup, rng=warm)
                pages = {"floor": (floor, FLOOR), "floor-tuned": (tuned, FLOOR), "judge": (judge, JUDGE)}
                alone = interleaved(pages, args.presses, args.block, args.gap)
                loaded = None
                if args.assessors > 1:  # then the same again while the others press on every app
                    others = args.assessors - 1
                    crowds = [
                        Crowd(judge_url, "judge", others, args.think, tag),
                        Crowd(floor_url, "floor", others, args.think, tag),
                        Crowd(tuned_url, "floor", others, args.think, tag + "t", label="same-settings floor"),
                    ]
                    for crowd in crowds:
                        crowd.start()
                    for crowd in crowds:
                        crowd.wait_ready(CLIENT_TIMEOUT_S + 0.3 * others)
                    time.sleep(args.think)  # the others are pressing before the first measured press
                    loaded = interleaved(pages, args.presses, args.block, args.gap, seed=2)
                chromium = browser.version
            finally:
                for crowd in crowds:
                    crowd.stop()
                browser.close()
        stored = label_count(target, name)
    load_end = os.getloadavg()

    judged = args.warmup + args.presses * (2 if loaded else 1)
    pool_name = f"queue of {queue:,} pairs"
    import streamlit

    print()
    print("## Key press -> next passage on /judge vs a bare Streamlit app (the framework floor)")
    print()
    print("1 assessor (nothing else pressing):")
    print()
    print(table(alone, pool_name))
    if loaded:
        print()
        print(f"{args.assessors} assessors ({args.assessors - 1} more on each app, think {args.think} s mean):")
        print()
        print(table(loaded, pool_name))
    print()
    for line in verdicts(alone, loaded):
        print(line)
    print(f"- measured in headless Chromium {chromium} (page clock: keydown -> DOM shows the next id)")
    print(
        f"- the three apps interleaved in blocks of {args.block}; {args.warmup} unmeasured presses each first; "
        f"{args.gap} s after each run before the next press"
    )
    if crowds:
        for crowd in crowds:
            extra = (
                f"p50 {percentile(crowd.ms, 0.5):.0f} ms, p95 {percentile(crowd.ms, 0.95):.0f} ms (request -> run end)"
                if crowd.ms
                else "no press"
            )
            print(
                f"- {crowd.n} more {crowd.label or crowd.kind} clients (websocket, think {args.think} s mean): "
                f"{len(crowd.ms)} presses, {extra}; {len(crowd.errors)} errors"
            )
            for error in crowd.errors[:3]:
                print(f"  - {error}")
    print(f"- store: {'a new SQLite file' if not args.db else 'given'} ({pool}); Streamlit {streamlit.__version__}")
    print(f"- labels stored for the browser's assessor: {stored} of {judged} presses")
    print(f"- machine: {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}")
    print(
        "- load average (1/5/15 min) at start "
        + "/".join(f"{x:.2f}" for x in load_start)
        + ", at end "
        + "/".join(f"{x:.2f}" for x in load_end)
        + " (other work on the machine is not excluded)"
    )
    command = " ".join(["python tests/benchmarks/bench_browser.py", *(sys.argv[1:] if argv is None else argv)])
    print(f"- command: `{command}`")
    ok = stored == judged and not any(c.errors for c in crowds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
