"""/review's dashboard in headless Chromium at 1280 x 800: the plot and every table fit the main column (no table
is wider than it, none scrolls sideways), with assessors who have judged part of their assigned turns.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent."""

from __future__ import annotations

import pytest

from tests.browser_support import LOAD_TIMEOUT_MS, expect, streamlit_server

pytestmark = pytest.mark.browser


def _campaign(db_path) -> None:
    from assess.services.loading import load_demo
    from store import accounts, open_db, queue
    from store.conversations import assign
    from store.db import column, rows
    from store.sources import ensure_source

    with open_db(db_path) as db:
        load_demo(db)
        turns = column(db, "SELECT id FROM turns ORDER BY conversation_id, position")
        for i, name in enumerate(("amelia-long-assessor-name", "bo", "cy")):
            accounts.add(db, name, "assessor", None, by="setup")
            assign(db, name, turns[i::3], by="setup")
            who = ensure_source(db, name, "assessor")
            for r in rows(db, "SELECT turn_id, passage_id FROM pool WHERE turn_id = :t", {"t": turns[i]})[:10]:
                queue.save_passage_label(
                    db, who, r["turn_id"], r["passage_id"], i, mode="blind", via="ui", active_ms=900
                )


def test_the_dashboard_fits_a_1280_px_window(new_page, tmp_path):
    with streamlit_server(tmp_path, _campaign) as (base, _db):
        page = new_page(1280, 800)
        page.goto(f"{base}/review")
        expect(page.get_by_text("Progress per topic (current assignments)")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        chart = page.locator('[data-testid="stPlotlyChart"]').first
        expect(chart).to_be_visible(timeout=LOAD_TIMEOUT_MS)  # plotly loads lazily, slowly on a busy machine
        expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_be_attached(
            timeout=LOAD_TIMEOUT_MS
        )
        assert page.locator('[data-testid="stException"]').count() == 0
        tables = page.locator('[data-testid="stDataFrame"]')
        expect(tables.first).to_be_visible()
        widths = page.evaluate(
            """() => {
                const main = document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect();
                const out = {main: [main.left, main.right], page: document.documentElement.scrollWidth, items: []};
                for (const el of document.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stPlotlyChart"]')) {
                    const box = el.getBoundingClientRect();
                    const scroller = el.querySelector('.dvn-scroller');
                    out.items.push({left: box.left, right: box.right,
                                    inner: scroller ? scroller.scrollWidth - scroller.clientWidth : 0});
                }
                return out;
            }"""
        )
        assert widths["page"] <= 1280, widths  # the window itself never scrolls sideways
        assert len(widths["items"]) >= 3, widths  # the plot, the assessors and the topics
        for item in widths["items"]:
            assert widths["main"][0] - 1 <= item["left"] and item["right"] <= widths["main"][1] + 1, widths
            assert item["inner"] <= 1, widths  # every column is on screen: no horizontal scroll bar inside
