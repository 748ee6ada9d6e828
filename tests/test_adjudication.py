"""The adjudication page: adjudicators (and organizers) compare two sources and save an adjudicated grade,
recorded under the source 'adjudication' and in the history with who decided; assessors are stopped."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from store import accounts, labels, open_db
from store.db import rows
from store.imports import ensure_source
from store.review import disagreements
from tests.helpers import open_app

PASSWORD = "correct-horse-battery"


@pytest.fixture
def campaign(tmp_path, monkeypatch):
    from assess.services.loading import load_demo

    path = tmp_path / "campaign.db"
    database = open_db(path)
    load_demo(database)
    service.add_account(database, "boss", "organizer", password=PASSWORD, by="setup")
    service.add_account(database, "ada", "adjudicator", password=PASSWORD, by="boss")
    service.add_account(database, "amy", "assessor", password=PASSWORD, by="boss")
    # A second source that disagrees with the demo's labels on three items.
    ensure_source(database, "second", "import")
    for item in rows(
        database,
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' AND grade IS NOT NULL "
        "ORDER BY turn_id, passage_id LIMIT 3",
    ):
        labels.save(
            database,
            "passage",
            "second",
            (item["turn_id"], item["passage_id"]),
            (item["grade"] + 1) % 5,
            mode="import",
            via=None,
        )
    database.close()
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def signed_in(name: str, page: str):
    at = open_app()
    at.text_input(key="account_name").input(name)
    at.text_input(key="account_password").input(PASSWORD)
    at.button(key="account_sign_in").click().run()
    assert at.session_state["assessor"] == name
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def test_an_adjudicator_saves_a_grade_recorded_with_their_name(campaign):
    at = signed_in("ada", "pages/adjudicate.py")
    a, b = at.selectbox(key="dis_a").value, at.selectbox(key="dis_b").value
    with open_db(campaign) as db:
        before = disagreements(db, a, b)
    assert before, "the demo's first two sources disagree somewhere"
    first = before[0]
    assert at.dataframe[0].value.shape[0] == len(before)
    at.radio[0].set_value(4)
    at.button[0].click().run()  # the form's submit button
    assert not at.exception, at.exception
    with open_db(campaign) as db:
        stored = labels.get(db, "passage", "adjudication", (first["turn_id"], first["passage_id"]))
        assert (stored["value"], stored["note"], stored["mode"]) == (4, "by ada", "adjudication")
        got = [(x["kind"], x["by"], x["item"], x["new"]) for x in accounts.actions(db, "adjudication")]
    assert got == [("adjudication", "ada", f"{first['turn_id']} {first['passage_id']}", "4")]


def test_an_assessor_has_no_adjudication_and_an_adjudicator_no_organizer_page(campaign):
    # A page missing from the signed-in role's menu cannot be reached (Streamlit knows no such page).
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        signed_in("amy", "pages/adjudicate.py")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        signed_in("ada", "pages/review.py")
    at = signed_in("boss", "pages/adjudicate.py")
    at.selectbox(key="dis_a").select("llm:demo-gpt")
    at.selectbox(key="dis_b").select("second").run()
    assert not at.warning and at.dataframe[0].value.shape[0] == 3


def test_imports_are_organizer_actions_naming_who(tmp_path):
    import getpass

    from assess.services.loading import DEMO_DIR, load_upload
    from tests.helpers import run_cli

    path = tmp_path / "imports.db"
    run_cli("import", "topics", DEMO_DIR / "topics.json", db=path, check=True)
    with open_db(path) as db:
        load_upload(db, "passages", "my passages.jsonl", (DEMO_DIR / "passages.jsonl").read_bytes(), by="boss")
        got = [(a["by"], a["item"], a["via"]) for a in accounts.actions(db, "import")]
        summary = accounts.actions(db, "import")[1]["new"]
    assert got == [
        (f"cli:{getpass.getuser()}", "topics topics.json", "topics"),
        ("boss", "passages my passages.jsonl", "passages"),
    ]
    assert summary.startswith('{"passages": ')
