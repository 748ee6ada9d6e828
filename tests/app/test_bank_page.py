"""The /banks page through AppTest: a post-edited question and answer and a match by the signed-in assessor,
checked against the rows stored (origin, who, the history) and what the page shows."""

from __future__ import annotations

import json

from tests.helpers import ROOT, open_app, run_cli

BANKS = ROOT / "assets" / "demo" / "banks"


def rows(target, sql: str) -> list[dict]:
    from store.db import Store
    from store.db import rows as query

    with Store(target) as db:
        return query(db, sql)


def test_post_edits_and_matches_are_stored_as_the_assessor(demo_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    run_cli("import", "rag-answers", str(BANKS / "answers.jsonl"), db=demo_target, check=True)
    run_cli("nuggets", "bank", "import", str(BANKS / "bank.jsonl"), db=demo_target, check=True)

    at = open_app("pages/banks.py", "ann", topic="101_2", run="rt-alpha")
    assert [r for r in at.dataframe[0].value["question"]] == ["Which running loads a repaired knee most?"]
    at.text_input(key="bank_q_text").set_value("Should hills wait after surgery?")
    at.selectbox(key="bank_q_agg").set_value("AND")
    at.text_input(key="bank_q_imp").set_value("2")
    at.button[0].click().run()  # Save question
    assert not at.exception, at.exception
    assert rows(demo_target, "SELECT nugget, question, aggregator, importance, origin, created_by FROM bank_nuggets WHERE topic_id = '101_2' ORDER BY nugget")[1] == {
        "nugget": 2, "question": "Should hills wait after surgery?", "aggregator": "AND", "importance": "2",
        "origin": "post-edit", "created_by": "ann",
    }  # fmt: skip
    at.number_input(key="bank_a_n").set_value(2)
    at.text_input(key="bank_a_text").set_value("until the surgeon agrees")
    at.text_input(key="bank_a_refs").set_value("demo-doc-001:0, demo-doc-003:0")
    at.button[1].click().run()  # Save answer
    assert not at.exception, at.exception
    answer = rows(
        demo_target, "SELECT text, refs, origin, created_by FROM bank_answers WHERE topic_id = '101_2' AND nugget = 2"
    )
    assert answer == [
        {
            "text": "until the surgeon agrees",
            "refs": '["demo-doc-001:0", "demo-doc-003:0"]',
            "origin": "post-edit",
            "created_by": "ann",
        }
    ]

    # the match form: answer 1.1 stated in sentence 1; answer 2.1 not contained
    at.checkbox(key="bm_c_101_2_rt-alpha_1_1").check()
    at.multiselect(key="bm_s_101_2_rt-alpha_1_1").select(1)
    at.button[2].click().run()  # Save matches
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["2 answers judged for rt-alpha on 101_2 (2 changed)."]
    stored = rows(
        demo_target,
        "SELECT source, turn_id, run, nugget, answer, contains, sentences, mode FROM bank_matches ORDER BY nugget",
    )
    assert stored == [
        {
            "source": "ann",
            "turn_id": "101_2",
            "run": "rt-alpha",
            "nugget": 1,
            "answer": 1,
            "contains": 1,
            "sentences": "[1]",
            "mode": "blind",
        },
        {
            "source": "ann",
            "turn_id": "101_2",
            "run": "rt-alpha",
            "nugget": 2,
            "answer": 1,
            "contains": 0,
            "sentences": "[]",
            "mode": "blind",
        },
    ]
    history = rows(
        demo_target,
        "SELECT label_table, source, item, new_value FROM label_history WHERE label_table = 'bank-match' ORDER BY id",
    )
    assert history == [
        {"label_table": "bank-match", "source": "ann", "item": "101_2 rt-alpha 1 1", "new_value": "1"},
        {"label_table": "bank-match", "source": "ann", "item": "101_2 rt-alpha 2 1", "new_value": "0"},
    ]
    exported = json.loads(run_cli("nuggets", "bank", "export", "--topic", "101_2", db=demo_target, check=True).stdout)
    assert exported["nugget_bank"][1]["answers"] == [
        {"answer": "until the surgeon agrees", "references": ["demo-doc-001:0", "demo-doc-003:0"]}
    ]


def test_the_scores_tab_shows_coverage_and_rubric_scores(demo_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    run_cli("import", "rag-answers", str(BANKS / "answers.jsonl"), db=demo_target, check=True)
    run_cli("nuggets", "bank", "import", str(BANKS / "bank.jsonl"), db=demo_target, check=True)
    run_cli(
        "nuggets",
        "bank",
        "import-matches",
        str(BANKS / "matches.jsonl"),
        "--source",
        "demo-matches",
        db=demo_target,
        check=True,
    )
    run_cli("rubrics", "import", str(BANKS / "rubrics"), db=demo_target, check=True)
    run_cli(
        "rubrics",
        "import-judgments",
        str(BANKS / "judgments.csv"),
        "--source",
        "demo-dragun",
        db=demo_target,
        check=True,
    )
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "Banks & rubrics"  # only the open tab runs
    at.run()
    at.toggle(key="bank_weighted").set_value(True).run()
    assert not at.exception, at.exception
    coverage = next(d.value for d in at.dataframe if "coverage" in d.value.columns).to_dict("records")
    # as `nuggets bank score --weighted`: rt-beta meets the question of importance 2, not the one of 1
    assert coverage == [
        {"run": "rt-alpha", "topics": 2, "coverage": 1.0},
        {"run": "rt-beta", "topics": 1, "coverage": 2 / 3},
    ]
    rubric = next(d.value for d in at.dataframe if "contradictory" in d.value.columns).to_dict("records")
    assert rubric[1] == {"run": "rt-beta", "topics": 1, "supportive": 1 / 7, "contradictory": 2 / 7}


def test_a_match_saved_meanwhile_in_another_tab_is_not_replaced_silently(demo_target, monkeypatch):
    """Two tabs of one assessor: the second tab's save wins; the first tab, drawn before it, is refused (nothing
    stored, the message says what is stored, by whom, when), then shows the stored match; saving again replaces it."""
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    run_cli("import", "rag-answers", str(BANKS / "answers.jsonl"), db=demo_target, check=True)
    run_cli("nuggets", "bank", "import", str(BANKS / "bank.jsonl"), db=demo_target, check=True)
    stored = lambda: rows(  # noqa: E731
        demo_target, "SELECT nugget, contains, sentences FROM bank_matches WHERE source = 'ann' ORDER BY nugget"
    )
    history = lambda: rows(  # noqa: E731
        demo_target, "SELECT item, old_value, new_value FROM label_history WHERE label_table = 'bank-match' ORDER BY id"
    )
    old = open_app("pages/banks.py", "ann", topic="101_2", run="rt-alpha")
    other = open_app("pages/banks.py", "ann", topic="101_2", run="rt-alpha")
    other.checkbox(key="bm_c_101_2_rt-alpha_1_1").check()
    other.multiselect(key="bm_s_101_2_rt-alpha_1_1").select(1)
    other.button(key="FormSubmitter:bank_match_101_2_rt-alpha-Save matches").click().run()
    assert not other.exception and [s.value for s in other.success] == [
        "1 answers judged for rt-alpha on 101_2 (1 changed)."
    ]
    saved = [{"nugget": 1, "contains": 1, "sentences": "[1]"}]
    assert stored() == saved and len(history()) == 1

    old.checkbox(key="bm_c_101_2_rt-alpha_1_1").check()
    old.multiselect(key="bm_s_101_2_rt-alpha_1_1").select(2)
    old.button(key="FormSubmitter:bank_match_101_2_rt-alpha-Save matches").click().run()
    assert not old.exception, old.exception
    assert stored() == saved and len(history()) == 1  # the older view wrote nothing
    (message,) = [e.value for e in old.error]
    assert message.startswith("Not saved: this item was labelled 1 · match by ann at ")
    assert "answer 1.1, sentences 1: nothing saved" in message
    # the form is drawn afresh from the store: what is stored is what it shows
    assert old.checkbox(key="bm_c_101_2_rt-alpha_1_1_r1").value is True
    assert old.multiselect(key="bm_s_101_2_rt-alpha_1_1_r1").value == [1]
    old.multiselect(key="bm_s_101_2_rt-alpha_1_1_r1").unselect(1).select(2)
    old.button(key="FormSubmitter:bank_match_101_2_rt-alpha_r1-Save matches").click().run()
    assert not old.exception and [s.value for s in old.success] == [
        "1 answers judged for rt-alpha on 101_2 (1 changed)."
    ]
    assert stored() == [{"nugget": 1, "contains": 1, "sentences": "[2]"}]
    assert [h["item"] for h in history()] == ["101_2 rt-alpha 1 1", "101_2 rt-alpha 1 1"]  # the replacement's row
