"""The real-browser benchmark's measurement (tests/benchmarks/bench_browser.py), run for a handful of key
presses in headless Chromium: on /judge of a demo store and on the bare floor app, each press gets a
positive time in the page's clock and shows the next item; every judge press is one label row."""

from __future__ import annotations

import random

import pytest

from tests.benchmarks.bench_browser import FLOOR, JUDGE, Crowd, floor_server, interleaved, measure, open_page
from tests.browser_support import browser, streamlit_server  # noqa: F401  (fixtures)
from tests.helpers import rows

pytestmark = pytest.mark.browser
PRESSES = 5


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("bench-judge")) as (url, db_path):
        yield url, db_path


@pytest.fixture(scope="module")
def floor_url(tmp_path_factory):
    with floor_server(tmp_path_factory.mktemp("bench-floor") / "floor.log") as url:
        yield url


def labels(db_path, name: str) -> int:
    return rows(db_path, "SELECT COUNT(*) FROM passage_labels WHERE source = ?", name)[0][0]


def test_judge_presses_are_timed_and_each_stores_a_label(browser, judge_server):
    url, db_path = judge_server
    page = open_page(browser, f"{url}/judge?assessor=bench-judge", JUDGE)
    try:
        presses = measure(page, JUDGE, PRESSES, rng=random.Random(3))
    finally:
        page.context.close()
    assert len(presses) == PRESSES
    assert all(p.ms > 0 for p in presses), [p.ms for p in presses]
    # each press moved on to another passage, never back to one already shown
    shown = [presses[0].before] + [p.shown for p in presses]
    assert all(a == p.before for a, p in zip(shown, presses))
    assert len(set(shown)) == PRESSES + 1, shown
    assert labels(db_path, "bench-judge") == PRESSES


def test_floor_presses_are_timed_and_count_up(browser, floor_url):
    page = open_page(browser, floor_url + "/", FLOOR)
    try:
        presses = measure(page, FLOOR, PRESSES)
    finally:
        page.context.close()
    assert len(presses) == PRESSES
    assert all(p.ms > 0 for p in presses), [p.ms for p in presses]
    assert [(p.before, p.shown) for p in presses] == [(str(i), str(i + 1)) for i in range(PRESSES)]


def test_interleaved_blocks_while_websocket_assessors_press(browser, judge_server, floor_url):
    url, db_path = judge_server
    crowds = [Crowd(url, "judge", 2, 0.2, "bt"), Crowd(floor_url, "floor", 2, 0.2, "bt")]
    judge = open_page(browser, f"{url}/judge?assessor=bench-mixed", JUDGE)
    floor = open_page(browser, floor_url + "/", FLOOR)
    try:
        for crowd in crowds:
            crowd.start()
        for crowd in crowds:
            crowd.wait_ready(120)
        results = interleaved({"floor": (floor, FLOOR), "judge": (judge, JUDGE)}, 3, 2, 0.1)
    finally:
        for crowd in crowds:
            crowd.stop()
        judge.context.close()
        floor.context.close()
    assert [len(results["floor"]), len(results["judge"])] == [3, 3]
    assert all(p.ms > 0 for v in results.values() for p in v)
    assert labels(db_path, "bench-mixed") == 3
    for crowd in crowds:
        assert crowd.errors == [] and crowd.ms, (crowd.kind, crowd.errors)
    # every press of the websocket assessors is a label row too
    pressed = len(crowds[0].ms)
    assert sum(labels(db_path, f"bt-judge-{i:02d}") for i in (1, 2)) == pressed
