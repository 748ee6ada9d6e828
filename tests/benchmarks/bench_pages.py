"""Server-side time of every menu page, opened as an organizer with Streamlit's AppTest (not collected by pytest).

Run: ``python tests/benchmarks/bench_pages.py [--db STORE] [--json] [--pages review,scores]``

Without ``--db`` the store of docs/cli.md's "The public iKAT files" (iKAT 2024: 45,471 pooled pairs, 53,574
passage labels) is built from ../shared/data into a temporary folder first. For each page of the menu
(``assess.ui.frame.menu``: the assessor pages, then the organizer pages) a fresh AppTest starts app.py as a
browser would (open mode, ASSESS_OPEN=1, signed in as ``--assessor``: an organizer, since no organizer password is set), then
the page is opened (``first``: its first run in that session) and run again unchanged (``rerun``: the median of
``--reruns`` runs). One warm-up session opens the home page first, and the modules a served app imports in the
background from its first session are imported (``--cold``: not), so imports are not counted. Targets (issue 32):
first run <= 1 s and rerun <= 0.3 s on iKAT 2024.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FIRST_TARGET = 1.0
RERUN_TARGET = 0.3


def _session(assessor: str, timeout: float):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.query_params["assessor"] = assessor
    at.run()
    if at.exception:
        raise RuntimeError(f"app.py: {at.exception}")
    return at


class QueryLog:
    """Every SQL statement's time (SQLAlchemy's cursor events on every engine), to name a page's slow queries."""

    def __init__(self):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        self.times: list[tuple[float, str]] = []
        self._started: dict[int, float] = {}
        event.listen(Engine, "before_cursor_execute", self._before)
        event.listen(Engine, "after_cursor_execute", self._after)

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        self._started[id(cursor)] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context, executemany):
        started = self._started.pop(id(cursor), None)
        if started is not None:
            self.times.append((time.perf_counter() - started, " ".join(statement.split())))

    def take(self) -> list[tuple[float, str]]:
        taken, self.times = self.times, []
        return taken


def time_page(
    script: str, *, assessor: str = "bench", reruns: int = 3, timeout: float = 600, log: QueryLog | None = None
) -> dict:
    """One page's figures: {"page", "first", "rerun", "exception"} (seconds; rerun the median of ``reruns``);
    with ``log`` also "queries": the first run's statements, slowest first, as [seconds, SQL]."""
    at = _session(assessor, timeout)
    if log is not None:
        log.take()
    at.switch_page(script)
    start = time.perf_counter()
    at.run()
    first = time.perf_counter() - start
    queries = sorted(log.take(), reverse=True) if log is not None else None
    again = []
    for _ in range(reruns):
        start = time.perf_counter()
        at.run()
        again.append(time.perf_counter() - start)
    exception = [str(e.value) for e in at.exception] or None
    figures = {"page": script, "first": first, "rerun": statistics.median(again) if again else None}
    figures["exception"] = exception
    if queries is not None:
        figures["queries"] = [[round(seconds, 4), sql] for seconds, sql in queries]
    return figures


def add_assessors(target: str, count: int) -> int:
    """``count`` assessors (bench-1, ...) who split NIST's passage labels among them (label i to assessor i mod
    count) through the store's label writes, one transaction (history rows included); returns the labels written."""
    from store import labels, open_db
    from store.db import rows, write
    from store.sources import sign_in

    with open_db(target) as db:
        nist = rows(db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'nist' ORDER BY 1, 2")
        names = [sign_in(db, f"bench-{k + 1}") for k in range(count)]
        with write(db):
            for i, r in enumerate(nist):
                item = (r["turn_id"], r["passage_id"])
                labels.save(db, "passage", names[i % count], item, r["grade"], mode="blind", via="key")
    return len(nist)


def menu_scripts() -> list[str]:
    from assess.ui.frame import menu

    assessor_pages, organizer_pages = menu()
    return [p.script for p in [*assessor_pages, *organizer_pages]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="the store (default: iKAT 2024 built from ../shared/data)")
    parser.add_argument("--pages", help="comma-separated page names (e.g. review,scores; default every menu page)")
    parser.add_argument("--assessor", default="bench")
    parser.add_argument("--reruns", type=int, default=3)
    parser.add_argument(
        "--assessors",
        type=int,
        default=0,
        metavar="N",
        help="first add N assessors who split NIST's labels among them (writes to the store: give a copy)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--cold", action="store_true", help="leave out the served app's background imports (ui.frame.WARM_MODULES)"
    )
    parser.add_argument(
        "--queries", type=float, metavar="MS", help="list each page's first-run SQL statements slower than MS ms"
    )
    args = parser.parse_args(argv)

    if args.db is None:
        from tests.ikat_store import build_ikat2024, missing_files

        if missing_files():
            parser.error(f"no --db and the public iKAT files are absent: {missing_files()[0]}")
        args.db = str(Path(tempfile.mkdtemp(prefix="bench-pages-")) / "ikat2024.db")
        start = time.perf_counter()
        build_ikat2024(args.db)
        print(f"built {args.db} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if args.assessors:
        start = time.perf_counter()
        written = add_assessors(args.db, args.assessors)
        print(f"{args.assessors} assessors, {written} labels in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    os.environ["ASSESS_DB"] = args.db
    os.environ.pop("ASSESS_ORGANIZER_PASSWORD", None)
    os.environ["ASSESS_OPEN"] = "1"  # open sign-in on a store that is not the demo: ?assessor= is an organizer

    scripts = menu_scripts()
    if args.pages:
        wanted = {f"pages/{name.strip().removesuffix('.py')}.py" for name in args.pages.split(",")}
        scripts = [s for s in scripts if s in wanted]
    _session(args.assessor, 600).switch_page("pages/home.py").run()  # warm-up: imports, caches of the process
    if not args.cold:  # what a served app imports in the background from its first session (ui.frame.warm_imports)
        from assess.ui.frame import import_modules

        import_modules()
    log = QueryLog() if args.queries is not None else None
    figures = []
    for script in scripts:
        figures.append(time_page(script, assessor=args.assessor, reruns=args.reruns, log=log))
        if log is not None:
            figures[-1]["queries"] = [q for q in figures[-1]["queries"] if q[0] * 1000 >= args.queries]
        if not args.json:
            f = figures[-1]
            flag = "" if f["first"] <= FIRST_TARGET and (f["rerun"] or 0) <= RERUN_TARGET else "  (over target)"
            error = f"  EXCEPTION {f['exception']}" if f["exception"] else ""
            print(f"{script:32} first {f['first']:7.3f} s   rerun {f['rerun']:7.3f} s{flag}{error}", flush=True)
            for seconds, sql in f.get("queries") or ():
                print(f"    {seconds * 1000:8.1f} ms  {sql[:300]}", flush=True)
    if args.json:
        print(json.dumps({"db": args.db, "pages": figures}, indent=2))
    return 1 if any(f["exception"] for f in figures) else 0


if __name__ == "__main__":
    raise SystemExit(main())
