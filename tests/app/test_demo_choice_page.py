"""Real data vs the demo on the pages (issue 32, item 9): /data asks what becomes of the demo before it imports
topics of one's own (drop it, keep it, or use a new store), and /judge and /ptkb say when a queue mixes the
demo's items with one's own. Checked on the stored rows before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_demo_choice import collections, rows, run_file, topics_file
from tests.helpers import open_app, run_cli, snapshot


@pytest.fixture
def demo(demo_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.setenv("ASSESS_OPEN", "1")  # names typed at sign-in; the organizer pages open without a password
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return demo_target


def import_button(at):
    return next(b for b in at.button if b.label == "Import")


def upload_topics(at, tmp_path):
    at.selectbox(key="import_kind").select("topics").run()
    path = topics_file(tmp_path)
    at.file_uploader(key="import_file").set_value(("own.json", Path(path).read_bytes(), "application/json")).run()
    assert not at.exception, at.exception


def test_the_data_page_asks_before_topics_of_ones_own_go_in_beside_the_demo(demo, tmp_path):
    at = open_app("pages/data.py", "boss")
    at.selectbox(key="import_kind").select("qrels").run()
    assert not [r for r in at.radio if r.key == "import_demo"]  # only topics bring conversations of their own
    before = snapshot(demo)  # the sign-in wrote its own rows: from here on, nothing until Import
    upload_topics(at, tmp_path)
    assert at.radio(key="import_demo").value is None and import_button(at).disabled
    at.radio(key="import_demo").set_value("new").run()
    assert any("new store" in i.value for i in at.info) and import_button(at).disabled
    assert snapshot(demo) == before
    at.radio(key="import_demo").set_value("drop").run()
    assert not import_button(at).disabled
    import_button(at).click().run()
    assert not at.exception and not at.error, at.error
    assert any(s.value.startswith("Imported own.json: conversations 1") for s in at.success)
    assert collections(demo) == {"7": "ikat-2024"}
    assert rows(demo, "SELECT COUNT(*) AS n FROM passages") == [{"n": 0}]
    assert rows(demo, "SELECT source FROM label_history WHERE label_table = 'drop-demo'") == [{"source": "open:boss"}]
    at.run()  # no demo left: nothing to ask
    assert not [r for r in at.radio if r.key == "import_demo"]


def test_kept_demo_and_ones_own_in_one_queue_are_said_on_judge(demo, tmp_path):
    at = open_app("pages/data.py", "boss")
    upload_topics(at, tmp_path)
    at.radio(key="import_demo").set_value("keep").run()
    import_button(at).click().run()
    assert not at.exception and not at.error, at.error
    assert set(collections(demo).values()) == {"demo", "ikat-2024"}
    run_cli("import", "run", run_file(tmp_path), db=demo, check=True)  # own passages pooled beside the demo's

    judge = open_app("pages/judge.py", "amy")  # open mode: a queue over every pool
    assert not judge.exception, judge.exception
    assert any("mixes the embedded demo's items" in w.value for w in judge.warning)
    ptkb = open_app("pages/ptkb.py", "amy")  # every turn's statements
    assert not ptkb.exception and any("mixes the embedded demo's items" in w.value for w in ptkb.warning)

    run_cli("import", "topics", topics_file(tmp_path), "--drop-demo", db=demo, check=True)
    for page in ("pages/judge.py", "pages/ptkb.py"):
        after = open_app(page, "amy")
        assert not after.exception and not any("mixes the embedded demo" in w.value for w in after.warning)
    assert rows(demo, "SELECT DISTINCT turn_id FROM pool ORDER BY turn_id") == [{"turn_id": "7_1"}, {"turn_id": "7_2"}]
