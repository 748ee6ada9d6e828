"""The adjudication page: adjudicators (and organizers) compare two sources and save an adjudicated grade,
recorded under the source 'adjudication' and in the history with who decided; assessors are stopped."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from store import history, labels, open_db, review
from store.db import rows
from store.sources import ensure_source
from tests.helpers import open_app

PASSWORD = "correct-horse-battery"


def named(source: str) -> str:
    """How the adjudication page heads a source's card (an inert line, in bold)."""
    from assess.text import line_html

    return line_html(None, source, css="inert-line", strong=True)


@pytest.fixture
def campaign(tmp_path, monkeypatch, demo_copy):
    path = demo_copy(tmp_path / "campaign.db")
    database = open_db(path)
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
    with open_db(campaign) as db:
        review.set_adjudication_settings(db, ["llm:demo-gpt", "second"], False, by="boss")
        first = review.adjudication_order(db, ["llm:demo-gpt", "second"])[0]
    at = signed_in("ada", "pages/adjudicate.py")
    assert any("(1 of 3)" in m.value for m in at.markdown)
    shown = [m.value for m in at.markdown]
    assert named("llm:demo-gpt") in shown and named("second") in shown  # not blind: the sources' names
    at.text_input(key=f"adj_note_{first[0]}_{first[1]}").input("the passage answers the question").run()
    at.button(key="adj_g4").click().run()
    assert not at.exception, at.exception
    with open_db(campaign) as db:
        stored = labels.get(db, "passage", "adjudication", first)
        assert (stored.value, stored.note, stored.mode) == (
            4,
            "by ada: the passage answers the question",
            "adjudication",
        )
        got = [(x["kind"], x["by"], x["item"], x["old"], x["new"]) for x in history.actions(db, "adjudication")]
    assert got == [("adjudication", "ada", f"{first[0]} {first[1]}", None, "4")]
    assert any("(2 of 3)" in m.value for m in at.markdown), "the next disagreement is shown after saving"


def test_adjudication_order_holds_exactly_the_disagreements(campaign):
    with open_db(campaign) as db:
        got = review.adjudication_order(db, ["llm:demo-gpt", "second"])
        by_hand = sorted(
            (r["turn_id"], r["passage_id"])
            for r in rows(
                db,
                "SELECT a.turn_id, a.passage_id FROM passage_labels a JOIN passage_labels b "
                "ON b.turn_id = a.turn_id AND b.passage_id = a.passage_id "
                "WHERE a.source = 'llm:demo-gpt' AND b.source = 'second' AND a.grade IS DISTINCT FROM b.grade",
            )
        )
    assert sorted(got) == by_hand and len(got) == 3


def test_cannot_judge_and_undo_walk_back_only_ones_own_adjudications(campaign):
    with open_db(campaign) as db:
        one, two = review.adjudication_order(db, ["llm:demo-gpt", "second"])[:2]
        review.adjudicate(db, *one, 2, by="ada")
        review.adjudicate(db, *two, None, by="ada", reason="no text")
        review.adjudicate(db, *one, 3, by="boss")  # a later decision of someone else on ada's first item
        assert labels.get(db, "passage", "adjudication", two).value is None
        assert review.undo_adjudication(db, "ada") == two
        assert labels.get(db, "passage", "adjudication", two) is None
        assert review.undo_adjudication(db, "ada") is None  # item one is boss's decision now
        assert labels.get(db, "passage", "adjudication", one).value == 3
        assert review.undo_adjudication(db, "boss") == one
        assert labels.get(db, "passage", "adjudication", one).value == 2
        got = [(x["by"], x["old"], x["new"], x["via"]) for x in history.actions(db, "adjudication")]
    assert got == [
        ("ada", None, "2", "adjudication"),
        ("ada", None, "cannot-judge", "adjudication"),
        ("boss", "2", "3", "adjudication"),
        ("ada", "cannot-judge", None, "undo"),
        ("boss", "3", "2", "undo"),
    ]


def test_blind_adjudication_shows_letters_not_names(campaign):
    from assess.services.judging import adjudication_screen

    with open_db(campaign) as db:
        review.set_adjudication_settings(db, ["llm:demo-gpt", "second"], True, by="boss")
        item = review.adjudication_order(db, ["llm:demo-gpt", "second"])[0]
        screen = adjudication_screen(db, *item, ["llm:demo-gpt", "second"], blind=True)
    assert [label["shown_as"] for label in screen.labels] == ["Source A", "Source B"]
    assert all("source" not in label for label in screen.labels)
    at = signed_in("ada", "pages/adjudicate.py")
    shown = " ".join(m.value for m in at.markdown)
    assert named("Source A") in shown and named("Source B") in shown
    assert named("llm:demo-gpt") not in shown and named("second") not in shown


def test_an_assessor_has_no_adjudication_and_an_adjudicator_no_organizer_page(campaign):
    # A page missing from the signed-in role's menu is known (a bookmark finds it) but shows only its guard.
    at = signed_in("amy", "pages/adjudicate.py")
    assert not at.exception and [w.value for w in at.warning] == [
        "This page is for adjudicators: you are signed in as amy (assessor). "
        "Sign out and sign in with an adjudicator or organizer account to open it."
    ]
    assert not any("(1 of" in m.value for m in at.markdown)
    at = signed_in("ada", "pages/review.py")
    assert not at.exception and [w.value for w in at.warning] == [
        "This page is for organizers: you are signed in as ada (adjudicator). "
        "Sign out and sign in with an organizer account to open it."
    ]
    assert not at.title
    with open_db(campaign) as db:
        review.set_adjudication_settings(db, ["llm:demo-gpt", "second"], False, by="boss")
    at = signed_in("boss", "pages/adjudicate.py")
    assert not at.warning and any("(1 of 3)" in m.value for m in at.markdown)


def test_imports_are_organizer_actions_naming_who(tmp_path):
    import getpass

    from assess.services.loading import DEMO_DIR, load_upload
    from tests.helpers import run_cli

    path = tmp_path / "imports.db"
    run_cli("import", "topics", DEMO_DIR / "topics.json", db=path, check=True)
    with open_db(path) as db:
        load_upload(db, "passages", "my passages.jsonl", (DEMO_DIR / "passages.jsonl").read_bytes(), by="boss")
        got = [(a["by"], a["item"], a["via"]) for a in history.actions(db, "import")]
        summary = history.actions(db, "import")[1]["new"]
    assert got == [
        (f"cli:{getpass.getuser()}", "topics topics.json", "topics"),
        ("boss", "passages my passages.jsonl", "passages"),
    ]
    assert summary.startswith('{"passages": ')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgresql)])
def demo_store(request, tmp_path, demo_copy):
    """The demo on either engine (PostgreSQL skips, saying why, without its server binaries)."""
    target = tmp_path / "demo.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    database = open_db(demo_copy(target))
    yield database
    database.close()


def test_the_adjudication_queue_and_its_undo_on_both_engines(demo_store):
    compared = ["llm:demo-gpt", "llm:demo-llama"]
    order = review.adjudication_order(demo_store, compared)
    by_hand = {
        (r["turn_id"], r["passage_id"])
        for r in rows(
            demo_store,
            "SELECT a.turn_id, a.passage_id FROM passage_labels a JOIN passage_labels b "
            "ON b.turn_id = a.turn_id AND b.passage_id = a.passage_id "
            "WHERE a.source = :a AND b.source = :b AND a.grade IS DISTINCT FROM b.grade",
            {"a": compared[0], "b": compared[1]},
        )
    }
    assert set(order) == by_hand and len(order) == len(by_hand) > 0
    first = order[0]
    review.adjudicate(demo_store, *first, 1, by="ada", reason="partly")
    assert review.adjudicated(demo_store) == {first}
    labels_now = review.item_labels(demo_store, *first, compared)
    assert [label.source for label in labels_now] == compared
    assert labels_now[0].value != labels_now[1].value  # a disagreement
    assert review.undo_adjudication(demo_store, "ada") == first
    assert review.adjudicated(demo_store) == frozenset()


def test_a_decision_made_meanwhile_by_another_adjudicator_is_not_replaced_silently(campaign):
    """Two adjudicators (the organizer and ada) show the same disagreement; the organizer decides 2; ada's press
    is refused, naming who decided and when; ada's second press replaces it; both decisions are in the history."""
    import html

    with open_db(campaign) as db:
        review.set_adjudication_settings(db, ["llm:demo-gpt", "second"], False, by="boss")
        turn, passage = review.adjudication_order(db, ["llm:demo-gpt", "second"])[0]
    boss, ada = signed_in("boss", "pages/adjudicate.py"), signed_in("ada", "pages/adjudicate.py")

    def stored():
        with open_db(campaign) as db:
            return rows(
                db,
                "SELECT grade FROM passage_labels WHERE source = 'adjudication' AND turn_id = :t AND passage_id = :p",
                {"t": turn, "p": passage},
            )

    boss.button(key="adj_g2").click().run()
    ada.button(key="adj_g4").click().run()
    said = [html.unescape(e.value) for e in ada.error]
    assert any(
        "NOT SAVED: this item was labelled 2 · Moderately meets by boss at " in s and "press again to replace it" in s
        for s in said
    ), said
    assert stored() == [{"grade": 2}]
    assert any("Adjudicated: 2" in s.value for s in ada.success)  # what is stored is shown
    ada.button(key="adj_g4").click().run()
    assert stored() == [{"grade": 4}]
    with open_db(campaign) as db:
        decisions = [(a["by"], a["old"], a["new"]) for a in history.actions(db, "adjudication")]
    assert decisions[-2:] == [("boss", None, "2"), ("ada", "2", "4")]
