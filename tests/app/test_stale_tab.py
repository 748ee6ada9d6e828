"""Two tabs of one assessor (issue 32): a key press in a tab whose item was labelled meanwhile in the other is not
stored silently. The tab says what is stored, by whom and when, and shows it; a second press replaces it, and the
history holds both writes. /judge, /ptkb, /citations and /ntr (both of its scales) through two AppTests each."""

from __future__ import annotations

import html
import re

import pytest

from tests.app.test_rag_pages import cited_responses
from tests.helpers import open_app, rows

REFUSED = re.compile(
    r"NOT SAVED: this item was labelled (?P<value>.+) by (?P<by>\S+) at (?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC "
    r"in another tab or device; press again to replace it"
)


@pytest.fixture
def app_db(demo_target, monkeypatch):
    from store import open_db
    from store import responses as cited

    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with open_db(demo_target) as db:
        cited.add_responses(db, "answers.jsonl", cited_responses())
    return demo_target


def refusal(at) -> re.Match | None:
    """The refusal the tab shows, if any (the message is escaped as every flash is)."""
    for error in at.error:
        found = REFUSED.search(html.unescape(error.value).replace("\u2060", ""))
        if found:
            return found
    return None


def history(target, table: str, source: str) -> list[tuple]:
    return rows(
        target,
        "SELECT old_value, new_value FROM label_history WHERE label_table = :t AND source = :s ORDER BY id",
        {"t": table, "s": source},
    )


def test_judge_a_stale_tab_is_refused_then_replaces_on_a_second_press(app_db):
    tab_a = open_app("pages/judge.py", "amy")
    tab_b = open_app("pages/judge.py", "amy")  # both show the first passage, unjudged
    turn, passage = tab_a.session_state["judge_key"]
    assert tab_b.session_state["judge_key"] == (turn, passage)
    tab_a.button(key="g4").click().run()
    grade = "SELECT grade FROM passage_labels WHERE source = 'amy' AND turn_id = :t AND passage_id = :p"
    assert rows(app_db, grade, {"t": turn, "p": passage}) == [(4,)]
    tab_b.button(key="g0").click().run()  # drawn before A's label: refused, said, and the stored label shown
    said = refusal(tab_b)
    assert said and said["value"] == "4 · Fully meets" and said["by"] == "amy", [e.value for e in tab_b.error]
    assert rows(app_db, grade, {"t": turn, "p": passage}) == [(4,)]  # the store keeps 4
    assert tab_b.session_state["judge_key"] == (turn, passage)  # B stays on the item, now showing 4
    assert any("Your label: 4" in s.value for s in tab_b.success)
    tab_b.button(key="g0").click().run()  # the second press, from the fresh view, replaces it
    assert not refusal(tab_b)
    assert rows(app_db, grade, {"t": turn, "p": passage}) == [(0,)]
    assert history(app_db, "passage", "amy") == [(None, "4"), ("4", "0")]
    assert tab_b.session_state["judge_key"] != (turn, passage)  # and moves on, as any key does
    # tab A still shows the item it labelled 4: its press is refused in turn
    tab_a.button(key="prev").click().run()
    assert tab_a.session_state["judge_key"] == (turn, passage)
    tab_b.button(key="prev").click().run()
    tab_b.button(key="g2").click().run()  # B changes it again (its view is fresh: no refusal)
    assert not refusal(tab_b)
    tab_a.button(key="g3").click().run()
    assert refusal(tab_a)["value"] == "2 · Moderately meets"
    assert rows(app_db, grade, {"t": turn, "p": passage}) == [(2,)]


def test_judge_a_tab_pressing_twice_on_its_own_item_is_no_conflict(app_db):
    """A tab's own writes never refuse its own later presses (undo, then grade again; re-grade after Previous)."""
    at = open_app("pages/judge.py", "ben")
    at.button(key="g3").click().run()
    at.button(key="prev").click().run()
    at.button(key="g1").click().run()
    at.button(key="undo").click().run()  # back to 3 and shown
    at.button(key="g2").click().run()
    assert not at.error
    assert rows(app_db, "SELECT grade FROM passage_labels WHERE source = 'ben'") == [(2,)]


def test_ptkb_a_stale_tab_is_refused_then_replaces_on_a_second_press(app_db):
    tab_a = open_app("pages/ptkb.py", "eve")
    tab_b = open_app("pages/ptkb.py", "eve")
    tab_a.button(key="rel").click().run()
    relevant = "SELECT relevant FROM ptkb_labels WHERE source = 'eve' AND turn_id = '101_1' AND statement_id = '1'"
    tab_b.button(key="nonrel").click().run()
    said = refusal(tab_b)
    assert said and said["value"] == "1 · relevant" and said["by"] == "eve", [e.value for e in tab_b.error]
    assert rows(app_db, relevant) == [(1,)]
    assert tab_b.session_state["ptkb_key"] == ("101_1", "1")
    tab_b.button(key="nonrel").click().run()
    assert not refusal(tab_b) and rows(app_db, relevant) == [(0,)]
    assert history(app_db, "ptkb", "eve") == [(None, "1"), ("1", "0")]


def test_citations_a_stale_tab_is_refused_then_replaces_on_a_second_press(app_db):
    support = (
        "SELECT support FROM citation_labels WHERE source = 'cia' AND run = 'rag-a' AND passage_id = 'demo-doc-001:0'"
    )
    tab_a = open_app("pages/citations.py", "cia")
    tab_b = open_app("pages/citations.py", "cia")
    tab_a.button(key="cite_cannot").click().run()  # cannot judge is a label too
    tab_b.button(key="cite_2").click().run()
    said = refusal(tab_b)
    assert said and said["value"] == "cannot judge" and said["by"] == "cia", [e.value for e in tab_b.error]
    assert rows(app_db, support) == [(None,)]
    tab_b.button(key="cite_2").click().run()
    assert not refusal(tab_b) and rows(app_db, support) == [(2,)]
    assert history(app_db, "citation", "cia") == [(None, "cannot-judge"), ("cannot-judge", "2")]


@pytest.mark.parametrize("graded", [False, True], ids=["yes-no", "graded"])
def test_ntr_a_stale_tab_is_refused_then_replaces_on_a_second_press(app_db, graded):
    table, column = ("ntr_support_labels", "support") if graded else ("ntr_labels", "match")
    first, second = (("ntr_g2", 2), ("ntr_g0", 0)) if graded else (("ntr_yes", 1), ("ntr_no", 0))
    tabs = [open_app("pages/ntr.py", "gus"), open_app("pages/ntr.py", "gus")]
    for tab in tabs:
        if graded:
            tab.toggle(key="_switch_ntr-graded").set_value(True).run()
    tab_a, tab_b = tabs
    tab_a.button(key=first[0]).click().run()
    stored = f"SELECT {column} FROM {table} WHERE source = 'gus'"
    assert rows(app_db, stored) == [(first[1],)]
    tab_b.button(key=second[0]).click().run()
    said = refusal(tab_b)
    assert said and said["by"] == "gus" and said["value"].startswith(str(first[1])), [e.value for e in tab_b.error]
    assert rows(app_db, stored) == [(first[1],)]
    tab_b.button(key=second[0]).click().run()
    assert not refusal(tab_b) and rows(app_db, stored) == [(second[1],)]
    task = "ntr-support" if graded else "ntr"
    assert history(app_db, task, "gus") == [(None, str(first[1])), (str(first[1]), str(second[1]))]


def test_every_keyboard_page_passes_what_it_showed_with_its_writes():
    """Every page that draws an item with ``cursor.shown`` says what it showed of the person's label (``own=``) and
    passes it with its write (``cursor.expected()``), and answers through ``desk.answered(..., value=...)``; the
    crowd page (answers, no labels of a source) draws no cursor. A new keyboard page that forgets fails here."""
    from tests.helpers import ROOT

    pages = [p for p in sorted((ROOT / "pages").glob("*.py")) if "cursor.shown(" in p.read_text(encoding="utf-8")]
    assert {p.stem for p in pages} >= {"judge", "ptkb", "ntr", "citations", "adjudicate"}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        calls = re.findall(r"cursor\.shown\((.*)\)", text)
        assert calls and all("own=" in call for call in calls), page.name
        assert "cursor.expected()" in text, page.name
        assert all("value=value" in call for call in re.findall(r"desk\.answered\((.*)\)", text)), page.name
