"""Re-shown items on /judge through AppTest: the item comes back blind, its answer is a consistency label."""

from __future__ import annotations

import pytest

from store import open_db, queue, reshows
from tests.helpers import open_app, rows


@pytest.fixture
def app_db(store_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", str(store_target))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return store_target


def test_a_reshown_item_comes_back_blind_and_leaves_the_first_label_alone(app_db):
    at = open_app("pages/judge.py", assessor="amy")  # the first start loads the demo
    with open_db(app_db) as db:
        reshows.set_rule(db, 0.25, gap=2, seed=0, by="boss")
        queue.set_judging_mode(db, "shown", by="boss")  # LLM labels shown before judging: a re-show hides them
    at.run()
    for key in ("g1", "g1", "g2"):
        at.button(key=key).click().run()
    assert any("llm:demo-gpt says" in e.label for e in at.expander)  # a fresh item in 'shown' mode
    at.button(key="g3").click().run()
    picked = rows(app_db, "SELECT turn_id, item_id, first_count, due_count FROM reshows")
    assert [(r[2], r[3]) for r in picked] == [(1, 4)]  # the second new label, due once 4 are held
    turn, passage = picked[0][:2]
    first = rows(
        app_db, f"SELECT grade, updated_at FROM passage_labels WHERE source = 'amy' AND passage_id = '{passage}'"
    )
    assert first[0][0] == 1

    # the 5th screen is the re-shown item, drawn as a fresh one: at the queue's frontier, nothing of before
    assert any(f"Passage `{passage}` (5 of 217)" in m.value for m in at.markdown)
    assert not [s.value for s in at.success]  # no "Your label: ..."
    assert not any("llm:demo" in e.label for e in at.expander)  # nothing revealed, even in 'shown' mode
    assert all(at.button(key=f"g{g}").proto.type != "primary" for g in range(5))
    assert at.text_input[0].value == ""
    assert at.get("progress")[0].proto.text.startswith("Turn 101_1: 3 / ")  # the re-shown item counts as to judge

    # Skip passes over it for now: the 5th passage shows, and the re-show is due again after one more label
    at.button(key="skip").click().run()
    fifth = rows(app_db, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 1 OFFSET 4")
    assert any(f"Passage `{fifth[0][0]}` (5 of 217)" in m.value for m in at.markdown)
    assert rows(app_db, "SELECT due_count, answered_at FROM reshows") == [(5, None)]
    at.button(key="g0").click().run()
    assert any(f"Passage `{passage}` (6 of 217)" in m.value for m in at.markdown)

    at.button(key="g4").click().run()
    assert rows(app_db, "SELECT value, first_value, first_missing, mode FROM reshows") == [(4, 1, 0, "blind")]
    # the first label is untouched (value and time), and the answer is no label of the table
    assert (
        rows(app_db, f"SELECT grade, updated_at FROM passage_labels WHERE source = 'amy' AND passage_id = '{passage}'")
        == first
    )
    assert rows(app_db, "SELECT COUNT(*) FROM passage_labels WHERE source = 'amy'") == [(5,)]
    # and the queue goes on where it was: the 6th passage of the queue
    sixth = rows(app_db, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 1 OFFSET 5")
    assert any(f"Passage `{sixth[0][0]}` (6 of 217)" in m.value for m in at.markdown)
    # the organizer's pages: the rule's control and the self-agreement table
    at.switch_page("pages/review.py")
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "graded twice" in d.value.columns)
    assert table.to_dict("records") == [
        {
            "assessor": "amy",
            "answered": 1,
            "graded twice": 1,
            "changed": 1,
            "agreement": 0.0,
            "kappa_quadratic": 0.0,  # one pair (1, 4): observed = expected disagreement
            "95% interval": "[0.000, 0.000]",
        }
    ]
    assert any("Fewer than 10 items graded twice (amy): too few" in c.value for c in at.caption)
    at.number_input(key="reshow_share").set_value(0.1)
    at.number_input(key="reshow_gap").set_value(5)
    at.button(key="reshow_save").click().run()
    assert any("Re-show rule saved" in s.value for s in at.success)
    with open_db(app_db) as db:
        assert reshows.rule(db) == reshows.ReshowRule(0.1, gap=5, seed=0)
    at.switch_page("pages/audit.py")
    at.run()
    assert not at.exception
    assert any("graded twice" in d.value.columns for d in at.dataframe)


def test_an_organizer_plans_overlap_on_review_and_sees_the_ceiling_on_audit(app_db):
    at = open_app("pages/review.py")
    at.text_input(key="ov_name").set_value("pilot")
    at.multiselect(key="ov_people").set_value(["demo-ann", "demo-ben"])
    at.multiselect(key="ov_topics").set_value(["101", "102"])
    at.number_input(key="ov_share").set_value(0.2)
    at.button(key="ov_create").click().run()
    assert not at.exception
    assert any(
        "Plan pilot: 43 of 217 items judged by 2 assessors; own turns demo-ann 6, demo-ben 6" in s.value
        for s in at.success
    )
    assert rows(app_db, "SELECT name, unit, share, copies, chosen FROM overlap_plans") == [
        ("pilot", "item", 0.2, 2, 43)
    ]
    # the demo assessors have labelled most items already, but fewer than 30 of the planned ones both: the pair
    # is shown and said to be below the ceiling's minimum of shared items, not pooled (issue 32)
    at.switch_page("pages/audit.py")
    at.run()
    assert not at.exception
    ceiling = next(d.value for d in at.dataframe if "alpha 95%" in d.value.columns)
    with open_db(app_db) as db:
        from assess.services.audit import overlap_view

        view = overlap_view(db, threshold=2)
    first = ceiling.iloc[0]
    assert view["ceiling"] is None and (first["a"], first["b"]) == ("demo-ann", "demo-ben") and first["n"] < 30
    assert view["below_minimum"] == [["demo-ann", "demo-ben", first["n"]]]
    assert first["kappa_quadratic"] == round(view["pairs"][0]["kappa_quadratic"], 4)
    assert any(f"Not pooled: `demo-ann` and `demo-ben` ({first['n']} items)" in c.value for c in at.caption)
    before = rows(app_db, "SELECT COUNT(*) FROM overlap_items")
    at.switch_page("pages/review.py")
    at.run()
    at.text_input(key="ov_name").set_value("pilot")
    at.multiselect(key="ov_people").set_value(["demo-ann", "demo-ben"])
    at.multiselect(key="ov_topics").set_value(["101"])
    at.button(key="ov_create").click().run()
    assert [e.value for e in at.error] == [
        "No plan made: an overlap plan named 'pilot' exists already; choose another name"
    ]
    assert rows(app_db, "SELECT COUNT(*) FROM overlap_items") == before


def test_a_reshown_items_note_is_its_own_and_its_answer_moves_on_in_reveal_mode(app_db):
    at = open_app("pages/judge.py", assessor="amy")
    with open_db(app_db) as db:
        reshows.set_rule(db, 0.25, gap=2, seed=0, by="boss")
    at.run()
    for key in ("g1", "g1", "g2", "g3"):  # blind: each grade moves on; the re-show is due after the 4th
        at.button(key=key).click().run()
    with open_db(app_db) as db:
        queue.set_judging_mode(db, "reveal", by="boss")
    at.run()
    turn, passage = rows(app_db, "SELECT turn_id, item_id FROM reshows")[0]
    assert any(f"Passage `{passage}` (5 of 217)" in m.value for m in at.markdown)
    # a note typed on the re-shown item is kept apart and never stored: the first label keeps none
    at.text_input(key=f"note_r_{turn}_{passage}").input("a second look").run()
    at.button(key="g4").click().run()
    assert rows(app_db, "SELECT value, mode FROM reshows") == [(4, "blind")]
    assert rows(
        app_db, f"SELECT grade, note FROM passage_labels WHERE source = 'amy' AND passage_id = '{passage}'"
    ) == [(1, None)]
    # the answer moves on to the cursor's own item (no stay to reveal), whose note field is empty
    fifth = rows(app_db, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 1 OFFSET 4")
    assert any(f"Passage `{fifth[0][0]}` (5 of 217)" in m.value for m in at.markdown)
    assert at.text_input(key=f"note_{turn}_{fifth[0][0]}").value == ""
    assert not any("llm:demo" in e.label for e in at.expander)
    at.button(key="g2").click().run()  # its first label in reveal mode: the page stays and reveals
    assert any(f"Passage `{fifth[0][0]}` (5 of 217)" in m.value for m in at.markdown)
    assert any("llm:demo-gpt says" in e.label for e in at.expander)
    assert rows(app_db, "SELECT COUNT(*), COUNT(note) FROM passage_labels WHERE source = 'amy'") == [(5, 0)]


def test_an_organizer_plans_adaptive_overlap_on_review(app_db):
    at = open_app("pages/review.py")
    at.text_input(key="ov_name").set_value("adapt")
    at.multiselect(key="ov_people").set_value(["demo-ann", "demo-ben"])
    at.multiselect(key="ov_topics").set_value(["101"])
    at.checkbox(key="ov_adaptive").check()
    at.number_input(key="ov_margin").set_value(1.5)
    at.selectbox(key="ov_judge").set_value("demo-ann")  # an assessor of the plan cannot be its judge
    at.button(key="ov_create").click().run()
    assert [e.value for e in at.error][0].startswith("No plan made: ") and "also an assessor" in at.error[0].value
    assert rows(app_db, "SELECT COUNT(*) FROM overlap_plans") == [(0,)]
    at.selectbox(key="ov_judge").set_value(None)
    at.button(key="ov_create").click().run()
    assert not at.exception and not at.error
    assert any(s.value.startswith("Plan adapt: ") for s in at.success)
    assert rows(app_db, "SELECT name, copies, margin, judge FROM overlap_plans") == [("adapt", 2, 1.5, None)]
