"""The Streamlit app through AppTest: rendered values and stored rows after interactions."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from store import settings, sources
from tests.helpers import open_app, rows, run_cli


@pytest.fixture
def app_db(store_target, monkeypatch):
    path = store_target
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def test_first_start_loads_demo_and_home_shows_store_counts(app_db):
    at = start()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Conversations": "2", "Turns": "12", "Passages": "60", "With text": "58", "Pooled pairs": "217"}
    figures = json.loads(run_cli("stats", "--json", db=app_db, check=True).stdout)  # the same as the CLI's
    names = ("conversations", "turns", "passages", "passages_with_text", "pooled_pairs")
    assert list(metrics.values()) == [f"{figures[n]:,}" for n in names]
    sources = at.dataframe[0].value
    assert dict(zip(sources["name"], sources["passage_labels"]))["llm:demo-gpt"] == 214
    assert rows(app_db, "SELECT COUNT(*) FROM conversations") == [(2,)]


def test_judge_page_stores_each_grade_and_moves_on(app_db):
    at = start("pages/judge.py", assessor="amy")
    assert any("Passage `demo-doc-001:0` (1 of 217)" in m.value for m in at.markdown)
    assert "User (now, 101_1): My sister wants me to run a 10k" in shown(at)  # conversation context
    assert any("intensive care nurse" in m.value for m in at.markdown)  # the PTKB beside it
    at.button(key="g3").click().run()
    at.button(key="g0").click().run()
    first_two = rows(app_db, "SELECT turn_id, passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 2")
    assert rows(
        app_db, "SELECT turn_id, passage_id, grade, mode FROM passage_labels WHERE source = 'amy' ORDER BY updated_at"
    ) == [(*first_two[0], 3, "blind"), (*first_two[1], 0, "blind")]
    assert any("(3 of 217)" in m.value for m in at.markdown)
    # a fresh session (reload / another browser) resumes at the first unjudged passage
    again = start("pages/judge.py", assessor="amy")
    assert any("(3 of 217)" in m.value for m in again.markdown)


def test_judge_page_is_blind_by_default(app_db):
    at = start("pages/judge.py", assessor="bea")
    page_text = " ".join(str(e.value) for e in at.main if hasattr(e, "value"))
    assert "llm:demo-gpt" not in page_text
    at.button(key="g2").click().run()
    at.button(key="prev").click().run()  # back on the judged item: still nothing from the LLM
    assert not any("llm:demo-gpt" in c.value for c in at.caption)


def test_cannot_judge_and_text_not_available(app_db):
    at = start("pages/judge.py", assessor="cal")
    at.session_state["judge_key"] = ("101_2", "demo-doc-900:0")
    at.run()
    assert any("Passage text not available" in w.value for w in at.warning)
    at.button(key="cannot").click().run()
    assert rows(app_db, "SELECT grade FROM passage_labels WHERE source = 'cal' AND passage_id = 'demo-doc-900:0'") == [
        (None,)
    ]


def test_undo_button_removes_the_last_label(app_db):
    at = start("pages/judge.py", assessor="dan")
    at.button(key="g4").click().run()
    at.button(key="undo").click().run()
    assert rows(app_db, "SELECT COUNT(*) FROM passage_labels WHERE source = 'dan'") == [(0,)]
    assert any("(1 of 217)" in m.value for m in at.markdown)
    assert rows(app_db, "SELECT old_value, new_value, via FROM label_history WHERE source = 'dan' ORDER BY id") == [
        (None, "4", "ui"),
        ("4", None, "undo"),
    ]


def test_ptkb_page_labels_statements(app_db):
    at = start("pages/ptkb.py", assessor="eve")
    at.button(key="rel").click().run()
    at.button(key="nonrel").click().run()
    assert rows(
        app_db, "SELECT turn_id, statement_id, relevant FROM ptkb_labels WHERE source = 'eve' ORDER BY updated_at"
    ) == [("101_1", "1", 1), ("101_1", "2", 0)]
    assert at.get("progress")[0].proto.text == "Turn 101_1: 2 / 11 statements labelled"
    cursor_line = [m.value for m in at.markdown if "▶" in m.value]
    assert len(cursor_line) == 1 and cursor_line[0].endswith(  # the cursor is on statement 3, in bold
        "<strong>▶ 3&#46;</strong> <strong>I&#39;m 38 and I haven&#39;t exercised regularly since university&#46; — ·</strong></div>"
    )


def test_ptkb_reveal_mode_stays_after_the_first_label_and_moves_on_after_the_second(app_db):
    from store import open_db

    with open_db(app_db) as db:
        settings.set_setting(db, "judging_mode", "reveal")
    at = start("pages/ptkb.py", assessor="eve")

    def on_cursor() -> str:
        [line] = [m.value for m in at.markdown if "▶" in m.value]
        return line.split("<strong>▶ ")[1].split("&#46;")[0]

    assert on_cursor() == "1"
    at.button(key="rel").click().run()  # blind-then-reveal's first label: the statement stays on screen
    assert on_cursor() == "1" and not at.exception
    at.button(key="nonrel").click().run()  # changed after seeing the LLM's label, then on to the next
    assert on_cursor() == "2"
    assert rows(app_db, "SELECT turn_id, statement_id, relevant, mode FROM ptkb_labels WHERE source = 'eve'") == [
        ("101_1", "1", 0, "reveal")
    ]


def test_review_page_lists_assessors_and_adjudicates(app_db):
    at = start("pages/judge.py", assessor="fay")
    for key in ("g4", "g0", "g1"):
        at.button(key=key).click().run()
    at.switch_page("pages/review.py")
    at.run()
    assert not at.exception
    assert not any("grades 0-4" in d.value.columns for d in at.dataframe)  # an open-mode visitor: not listed
    from store import open_db, review
    from store.conversations import assign
    from store.db import column

    with open_db(app_db) as db:  # given every turn, fay is one of the campaign's assessors
        assign(db, "fay", column(db, "SELECT id FROM turns"), by="test")
    at.run()
    summary = next(d.value for d in at.dataframe if "grades 0-4" in d.value.columns)
    row = summary[summary["assessor"] == "fay"].iloc[0]
    assert (row["labels"], list(row["grades 0-4"])) == (3, [1, 1, 0, 0, 1])
    assert (row["judged"], row["assigned"]) == (3, 217)

    with open_db(app_db) as db:
        review.set_adjudication_settings(db, ["fay", "llm:demo-gpt"], False, by="test")
        first = review.adjudication_order(db, ["fay", "llm:demo-gpt"])[0]
    at.switch_page("pages/adjudicate.py").run()  # disagreements are adjudicated on a page of their own
    assert not at.exception
    assert any(f"({1} of " in m.value for m in at.markdown)
    at.button(key="adj_g2").click().run()
    assert not at.exception
    assert rows(
        app_db,
        "SELECT grade, mode FROM passage_labels WHERE source = 'adjudication' AND turn_id = :t AND passage_id = :p",
        {"t": first[0], "p": first[1]},
    ) == [(2, "adjudication")]


def test_data_page_assigns_a_topic(app_db):
    at = start("pages/data.py")
    at.text_input(key="assign_who").input("gus").run()
    at.multiselect(key="assign_convs").select("102").run()
    next(b for b in at.button if b.label == "Assign").click().run()
    assert any("Assigned 6 new turns to gus" in s.value for s in at.success)
    assert rows(app_db, "SELECT COUNT(*) FROM assignments WHERE assessor = 'gus'") == [(6,)]


def test_organizer_pages_need_the_password(app_db, monkeypatch):
    monkeypatch.setenv("ASSESS_ORGANIZER_PASSWORD", "s3cret")
    at = start()
    at.switch_page("pages/review.py").run()  # known (a bookmark finds it), but only its guard is shown
    assert "This page is for organizers: enter the organizer password in the sidebar." in [w.value for w in at.warning]
    assert "Review" not in [t.value for t in at.title]
    at = start()
    at.text_input(key="org_pw").input("s3cret").run()
    at.switch_page("pages/review.py").run()
    assert not at.exception
    assert at.title[0].value == "Review"


def test_scores_page_shows_the_four_kinds_of_plot_on_the_demo(app_db):
    at = start("pages/judge.py", assessor="hal")
    for key in ("g0", "g0", "g1", "g4"):
        at.button(key=key).click().run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception
    at.selectbox(key="ag_a").select("hal").run()
    at.selectbox(key="ag_b").select("llm:demo-gpt").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["n"] == "4"
    labels = rows(
        app_db,
        "SELECT a.grade AS a, b.grade AS b FROM passage_labels a JOIN passage_labels b ON "
        "a.turn_id = b.turn_id AND a.passage_id = b.passage_id AND b.source = 'llm:demo-gpt' "
        "WHERE a.source = 'hal'",
    )
    assert metrics["agreement"] == f"{sum(x == y for x, y in labels) / 4:.3f}"
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(titles) == 2  # confusion, per-topic kappa: only the open tab runs
    assert "Confusion (n = 4)" in titles[0] and "per group" in titles[1]
    for tab, title in (("Run rankings", "Kendall"), ("GFRC2", "GFRC2 user clusters"), ("AEPD", "P vs D per turn")):
        at.session_state["sc_tab"] = tab
        at.run()
        assert not at.exception
        (spec,) = [c.proto.spec for c in at.get("plotly_chart")]
        assert title in spec


@pytest.mark.realdata
def test_scores_page_on_real_nist_and_gpt4_labels(tmp_path, monkeypatch):
    from tests.conftest import shared_file
    from tests.helpers import run_cli

    db = tmp_path / "real.db"
    monkeypatch.setenv("ASSESS_OPEN", "1")  # a store of real data signs in by account unless open mode is asked for
    run_cli(
        "import",
        "topics",
        shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json"),
        db=db,
        check=True,
    )
    run_cli(
        "import",
        "qrels",
        shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec"),
        "--source",
        "nist",
        db=db,
        check=True,
    )
    run_cli(
        "import",
        "qrels",
        shared_file(
            "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
        ),
        "--source",
        "llm:gpt-4",
        db=db,
        check=True,
    )
    monkeypatch.setenv("ASSESS_DB", str(db))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    at = start("pages/scores.py")
    at.selectbox(key="ag_a").select("nist").run()
    at.selectbox(key="ag_b").select("llm:gpt-4").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"n": "8,103", "agreement": "0.438", "kappa": "0.240", "kappa_binary": "0.360"}


def test_reveal_mode_shows_the_llm_label_only_after_ones_own(app_db):
    from store import open_db

    with open_db(app_db) as db:
        settings.set_setting(db, "judging_mode", "reveal")
    at = start("pages/judge.py", assessor="ivy")
    assert not [e for e in at.expander if "llm:demo-gpt" in e.label]  # blind before committing
    first = rows(app_db, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 1")[0][0]
    llm = rows(
        app_db,
        "SELECT grade FROM passage_labels WHERE source = 'llm:demo-gpt' AND turn_id = '101_1' AND passage_id = :p",
        {"p": first},
    )[0][0]
    at.button(key="g1").click().run()  # committed: the page stays and reveals the LLM's label
    assert any(f"Passage `{first}` (1 of 217)" in m.value for m in at.markdown)
    assert [e.label for e in at.expander if "llm:demo-gpt" in e.label] == [f"llm:demo-gpt says {llm}"]
    at.button(key="g2").click().run()  # changed after seeing it: both versions kept, then move on
    assert any("(2 of 217)" in m.value for m in at.markdown)
    assert rows(app_db, "SELECT grade, mode FROM passage_labels WHERE source = 'ivy'") == [(2, "reveal")]
    assert rows(app_db, "SELECT old_value, new_value FROM label_history WHERE source = 'ivy' ORDER BY id") == [
        (None, "1"),
        ("1", "2"),
    ]


def start(page: str | None = None, assessor: str | None = None) -> AppTest:
    return open_app(page, assessor)


def shown(at) -> str:
    """The text the page rendered as markdown: our own tags removed, then the entities decoded."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", " ".join(m.value for m in at.markdown)))


def test_untrusted_conversation_text_renders_as_inert_html(app_db):
    from assess.services.loading import load_demo
    from store import open_db
    from store.db import run

    with open_db(app_db) as db:
        load_demo(db)
        run(
            db,
            "UPDATE turns SET utterance = :u WHERE id = '101_1'",
            {"u": "see www.evil.example :red[alarm] :material/home: **loud** <b>x</b> $x^2$"},
        )
    at = start("pages/judge.py", assessor="jon")
    block = next(m.value for m in at.markdown if "evil" in m.value and "User" in m.value)
    for raw in ("www.evil.example", ":red[", ":material/", "**loud**", "<b>", "$x"):
        assert raw not in block  # every syntax character is an entity inside one raw HTML block
    assert "see www.evil.example :red[alarm] :material/home: **loud** <b>x</b> $x^2$" in shown(at)


def test_a_note_typed_after_grading_is_saved_with_the_label(app_db):
    at = start("pages/judge.py", assessor="kim")
    at.button(key="g3").click().run()
    at.button(key="prev").click().run()
    turn, passage = at.session_state["judge_key"]
    at.text_input(key=f"note_{turn}_{passage}").input("only the first half answers").run()
    assert rows(app_db, "SELECT grade, note FROM passage_labels WHERE source = 'kim'") == [
        (3, "only the first half answers")
    ]
    assert rows(app_db, "SELECT old_value, new_value FROM label_history WHERE source = 'kim' ORDER BY id")[-1] == (
        "3",
        "3",
    )  # the note change is in the history too


def test_undo_finds_labels_whose_ids_hold_spaces(app_db):
    """The history spells an item as its ids joined by spaces; undo must not split it (turn 'a b' with
    passage 'c' and turn 'a' with passage 'b c' spell alike) and must revert exactly the latest label."""
    from assess.services.loading import load_demo
    from store import labels, open_db
    from store.db import run, run_many, write

    db = open_db(app_db)
    load_demo(db)
    with write(db):
        run(db, "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('a b', '101', 90, 90)")
        run(db, "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('a', '101', 91, 91)")
        run_many(db, "INSERT INTO passages (id, doc_id, text) VALUES (:id, 'd', 'x')", [{"id": "c"}, {"id": "b c"}])
    sources.sign_in(db, "uma")
    labels.save(db, "passage", "uma", ("a", "b c"), 1, mode="blind", via="ui")
    labels.save(db, "passage", "uma", ("a b", "c"), 2, mode="blind", via="ui")
    labels.save(db, "passage", "uma", ("a b", "c"), 4, mode="blind", via="ui")
    assert labels.undo(db, "passage", "uma") == ("a b", "c")
    got = rows(app_db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'uma' ORDER BY turn_id")
    assert got == [("a", "b c", 1), ("a b", "c", 2)]
    assert labels.undo(db, "passage", "uma") == ("a b", "c")
    assert labels.undo(db, "passage", "uma") == ("a", "b c")
    assert rows(app_db, "SELECT COUNT(*) FROM passage_labels WHERE source = 'uma'") == [(0,)]
    db.close()


def test_judge_page_renders_hostile_ids_and_titles_inertly(app_db):
    from tests.helpers import HOSTILE_LLM, HOSTILE_PASSAGE, HOSTILE_TITLE, hostile_store

    hostile_store(app_db)
    at = start("pages/judge.py", assessor="vic")
    heading = next(h.value for h in at.subheader if "Title" in h.value)
    for raw in ("![", "](", "<img", "www.evil", "http://", ":red["):
        assert raw not in heading  # every syntax character escaped or broken
    assert any(f"Passage ``{HOSTILE_PASSAGE}`` (1 of 218)" in m.value for m in at.markdown)
    label = next(e.label for e in at.expander if "says 3" in e.label)
    assert "](" not in label and "![" not in label and "http://" not in label
    import html

    assert html.unescape(label).replace("\u2060", "") == f"{HOSTILE_LLM} says 3"
    assert html.unescape(heading).replace("\u2060", "") == HOSTILE_TITLE
