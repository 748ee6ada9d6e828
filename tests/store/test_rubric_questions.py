"""Issue 32: ``store.banks.rubric_questions`` (the answered rubric questions, which the track's maximum counts)
reads the answered questions once instead of a subquery per question; on both engines it lists exactly the
questions with a short answer, in topic and question order."""

from __future__ import annotations

import json

from assess.services import banks
from store import banks as store_banks
from store import open_db


def test_only_answered_questions_are_listed_in_order(demo_target, tmp_path):
    folder = tmp_path / "rubrics"
    folder.mkdir()
    question = {"question_text": "?", "importance": "B: Good to Know"}
    answer = {"answer_text": "yes.", "references": []}
    topics = {
        "101_1": [("q-b", [answer, answer]), ("q-a", []), ("q-c", [answer])],
        "101_2": [("q-d", [])],
        "102_1": [("q-e", [answer])],
    }
    for topic, questions in topics.items():
        rubrics = [
            {
                **question,
                "question_id": qid,
                "short_answers": [{**a, "answer_id": f"{qid}-{i}"} for i, a in enumerate(answers)],
            }
            for qid, answers in questions
        ]
        (folder / f"{topic}.json").write_text(json.dumps({"topic_id": topic, "rubrics": rubrics}))
    with open_db(demo_target) as db:
        banks.import_rubric_file(db, folder, by="boss")
        listed = [(q["topic_id"], q["question_id"]) for q in store_banks.rubric_questions(db)]
    assert listed == [("101_1", "q-b"), ("101_1", "q-c"), ("102_1", "q-e")]
