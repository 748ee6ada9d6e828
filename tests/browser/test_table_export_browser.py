"""No table offers Streamlit's own CSV download (issue 33, N4/R8): its "Download as CSV" writes every cell as it
is, so a title of user text such as ``=HYPERLINK(...)`` opens in a spreadsheet as a live formula. The served app
turns the toolbar's export off (``client.disableDataExport``); a table's toolbar keeps its search, and the CSVs
the app offers itself are written by ``assess.formats.inert_csv`` (tests/cli/test_inert_csv.py)."""

from __future__ import annotations

import pytest

from tests.browser_support import LOAD_TIMEOUT_MS, expect, open_app, server_per_module, settled

pytestmark = pytest.mark.browser

FORMULA = '=HYPERLINK("http://evil.example/x","open me")'


def formula_store(path) -> None:
    """The demo with a conversation title that a spreadsheet would run as a formula."""
    from assess.services.loading import load_demo
    from store import open_db
    from store.db import run, write

    db = open_db(path)
    load_demo(db)
    with write(db):
        run(db, "UPDATE conversations SET title = :t WHERE id = (SELECT MIN(id) FROM conversations)", {"t": FORMULA})
    db.close()


server = server_per_module("export", formula_store)


def toolbar_actions(page, table) -> list[str]:
    """The labels of the actions a table's toolbar offers once the pointer is over the table."""
    table.hover()
    toolbar = page.locator('[data-testid="stElementToolbar"]:visible').first  # the hovered table's
    expect(toolbar).to_be_visible()
    page.wait_for_timeout(300)
    return toolbar.locator("button").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label') || e.innerText).filter(Boolean)"
    )


def test_no_table_offers_streamlits_csv_download(server, new_page):
    page = new_page()
    open_app(page, server[0] + "/")
    tables = page.locator('[data-testid="stDataFrame"]')
    expect(tables.first).to_be_visible()
    assert tables.count() >= 1
    for index in range(tables.count()):
        actions = toolbar_actions(page, tables.nth(index))
        assert "Search" in actions, actions  # the toolbar is there: only the export is gone
        assert not [a for a in actions if "download" in a.lower() or "csv" in a.lower()], actions
    assert page.locator('button[aria-label="Download as CSV"]').count() == 0


def test_the_scores_tables_csv_comes_from_the_inert_writer(server, new_page, tmp_path):
    """/scores' GFRC2 table (a run named like a formula, from an uploaded file): no toolbar export, and the
    page's own "Download CSV" gives the formula as text (a leading ')."""
    import csv
    import io
    import json

    from tests.helpers import ROOT

    document = json.loads((ROOT / "assets" / "demo" / "gfrc2.json").read_text(encoding="utf-8"))
    for conversation in document["conversations"]:
        conversation["id"] = "=1+2*cmd|x" + conversation["id"]  # the run part of "run/conversation"
    upload = tmp_path / "hostile-gfrc2.json"
    upload.write_text(json.dumps(document), encoding="utf-8")

    page = new_page()
    open_app(page, server[0] + "/scores")
    page.get_by_role("tab", name="GFRC2").click()
    settled(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
    settled(page)
    panel = page.get_by_role("tabpanel", name="GFRC2")
    table = panel.locator('[data-testid="stDataFrame"]').first
    expect(table).to_be_visible()
    actions = toolbar_actions(page, table)
    assert "Search" in actions and "Download as CSV" not in actions, actions
    button = panel.get_by_role("button", name="Download CSV")
    expect(button).to_be_enabled(timeout=LOAD_TIMEOUT_MS)  # drawn after the table (the tab reruns the page)
    with page.expect_download(timeout=LOAD_TIMEOUT_MS) as download:
        button.click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    assert rows[0][:2] == ["run", "conversation"] and len(rows) == len(document["conversations"]) + 1
    runs = {row[0] for row in rows[1:]}
    assert runs and all(run.startswith("'=1+2*cmd|x") for run in runs), runs
