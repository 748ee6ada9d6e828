"""The review page's assessor-quality tabs in AppTest: each assessor's active time (with the implausible-speed
flag) and the versioned guidelines (a save is a new version; labels under an older version are listed); and the
audit page's anchoring panel with time and rubber-stamping."""

from __future__ import annotations

import pytest

from store import open_db, queue
from store.db import rows as store_rows
from store.sources import ensure_source
from tests.helpers import open_app, rows


@pytest.fixture
def app_db(store_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", str(store_target))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    open_app()  # the first start loads the demo
    return store_target


def _judge(db_path, name: str, times: list[int]) -> list[tuple[str, str]]:
    with open_db(db_path) as db:
        who = ensure_source(db, name, "assessor")
        pooled = store_rows(db, "SELECT turn_id, passage_id FROM pool ORDER BY turn_id, passage_id")
        items = [(r["turn_id"], r["passage_id"]) for r in pooled[: len(times)]]
        for (turn, passage), ms in zip(items, times):
            queue.save_passage_label(db, who, turn, passage, 1, mode="blind", via="ui", active_ms=ms)
    return items


def test_review_shows_active_time_and_flags_implausible_speed(app_db):
    _judge(app_db, "quick", [600] * 20)
    _judge(app_db, "slow", [4000, 6000])
    at = open_app("pages/review.py")
    speed = next(d.value for d in at.dataframe if "iqr" in d.value.columns)
    task_rows = speed[speed["by"] == "task"].set_index("assessor")
    assert task_rows.loc["quick", "median"] == 600.0 and task_rows.loc["quick", "n"] == 20
    assert task_rows.loc["slow", "median"] == 5000.0 and task_rows.loc["slow", "iqr"] == 1000.0
    assert [w.value for w in at.warning if "fast" in w.value] == [
        "quick (passage): implausibly fast: median 600 ms over 20 labels"
    ]


def test_guidelines_are_versioned_and_older_labels_listed(app_db):
    at = open_app("pages/review.py")
    at.session_state["rv_tab"] = "Guidelines"
    at.run()
    at.selectbox(key="rv_guideline_task").select("passage").run()
    at.text_area(key="rv_g_passage").input("Grade 3 when the passage answers the turn fully.").run()
    at.button(key="rv_guideline_save").click().run()
    assert [s.value for s in at.success] == ["Saved as version 1."]
    items = _judge(app_db, "ann", [1000])
    at.text_area(key="rv_g_passage").input("Grade 3 only when it answers the turn fully and directly.").run()
    at.button(key="rv_guideline_save").click().run()
    assert [s.value for s in at.success] == ["Saved as version 2."]
    assert not at.exception
    versions = next(d.value for d in at.dataframe if "created_by" in d.value.columns)
    assert list(versions["version"]) == [2, 1]
    older = next(d.value for d in at.dataframe if "current_version" in d.value.columns)
    assert [tuple(r) for r in older[["assessor", "item", "guideline_version", "current_version"]].values] == [
        ("ann", " ".join(items[0]), 1, 2)
    ]
    assert rows(app_db, "SELECT task, version FROM guidelines ORDER BY version") == [("passage", 1), ("passage", 2)]


def test_audit_page_shows_rubber_stamping(app_db):
    with open_db(app_db) as db:
        queue.set_judging_mode(db, "shown", by="test")
        llm = store_rows(
            db,
            "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' AND grade "
            "IS NOT NULL ORDER BY turn_id, passage_id LIMIT 6",
        )
        who = ensure_source(db, "stamp", "assessor")
        for r in llm:
            queue.save_passage_label(db, who, r["turn_id"], r["passage_id"], r["grade"], mode="shown", active_ms=250)
    at = open_app("pages/audit.py")
    at.session_state["au_tab"] = "Two sources"
    at.run()
    assert not at.exception
    flags = [w.value for w in at.warning if "rubber-stamping" in w.value]
    assert flags == ["stamp vs llm:demo-gpt: rubber-stamping: 6 accepted, median 250 ms, 0% corrected"]


def test_the_judge_page_shows_the_guideline_in_force_and_its_labels_record_the_version(app_db):
    from store import guidelines

    with open_db(app_db) as db:
        guidelines.add_version(db, "passage", "Old rule.", by=None)
        guidelines.add_version(db, "passage", "Grade <b>only</b> what the turn asks.", by=None)
    at = open_app("pages/judge.py", assessor="gil")
    assert [e.label for e in at.expander if e.label.startswith("Guidelines")] == ["Guidelines (version 2)"]
    assert any("Grade &#60;b&#62;only&#60;&#47;b&#62; what" in m.value for m in at.markdown)  # inert text
    at.button(key="g3").click().run()
    assert rows(app_db, "SELECT grade, guideline_version, active_ms FROM passage_labels WHERE source = 'gil'") == [
        (3, 2, None)  # a click AppTest makes carries no browser time
    ]


def test_review_progress_follows_new_labels_between_reruns(app_db):
    """The page keeps its progress tables between reruns (ui.review.progress_tables) until an input changes."""
    at = open_app("pages/review.py")

    def figures():
        frames = [d.value for d in at.dataframe]
        summary = next(f for f in frames if "queue_total" in f.columns).set_index("assessor")
        topics = next(f for f in frames if list(f.columns) == ["conversation", "pooled", "judged"])
        return summary, dict(zip(topics["conversation"], topics["judged"]))

    summary, before = figures()
    assert "newbie" not in summary.index
    with open_db(app_db) as db:
        unjudged = store_rows(
            db,
            "SELECT p.turn_id, p.passage_id, t.conversation_id FROM pool p JOIN turns t ON t.id = p.turn_id "
            "WHERE NOT EXISTS (SELECT 1 FROM passage_labels l JOIN sources s ON s.name = l.source "
            "WHERE s.kind = 'assessor' AND l.turn_id = p.turn_id AND l.passage_id = p.passage_id) "
            "ORDER BY p.turn_id, p.passage_id",
        )
        picked = [unjudged[0], unjudged[-1], unjudged[-2]]
        who = ensure_source(db, "newbie", "assessor")
        for r in picked:
            queue.save_passage_label(db, who, r["turn_id"], r["passage_id"], 2, mode="blind", via="ui")
    at.run()
    summary, after = figures()
    assert summary.loc["newbie", "queue_judged"] == summary.loc["newbie", "passage_labels"] == 3
    gained = {c: sum(r["conversation_id"] == c for r in picked) for c in before}
    assert sum(gained.values()) == 3
    assert after == {c: before[c] + gained[c] for c in before}
