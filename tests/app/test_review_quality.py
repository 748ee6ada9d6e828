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


def _campaign(db_path) -> dict:
    """Two assessor accounts (one with a turn of each conversation), an organizer and an adjudicator with turns of
    their own, an open-mode visitor's labels and the demo's old labels: only the assessors' assigned items count."""
    from store import accounts
    from store.conversations import assign

    with open_db(db_path) as db:
        turns = [r["id"] for r in store_rows(db, "SELECT id FROM turns ORDER BY conversation_id, position")]
        for name, role in (("amy", "assessor"), ("bo", "assessor"), ("boss", "organizer"), ("adj", "adjudicator")):
            accounts.add(db, name, role, None, by="root")
        assign(db, "amy", [turns[0], turns[-1]], by="root")
        assign(db, "boss", [turns[1]], by="root")
        assign(db, "adj", [turns[2]], by="root")
        pool = store_rows(db, "SELECT turn_id, passage_id FROM pool ORDER BY turn_id, passage_id")
        mine = [(r["turn_id"], r["passage_id"]) for r in pool if r["turn_id"] == turns[0]][:3]
        other = [(r["turn_id"], r["passage_id"]) for r in pool if r["turn_id"] not in (turns[0], turns[-1])][:2]
        for name, items in (("amy", mine + other), ("boss", other), ("visitor", mine)):
            who = ensure_source(db, name, "assessor")
            for turn, passage in items:
                queue.save_passage_label(db, who, turn, passage, 3, mode="blind", via="ui", active_ms=2000)
    return {"mine": mine, "other": other, "turns": turns}


def _dashboard(at) -> tuple[dict, dict]:
    frames = [d.value for d in at.dataframe]
    people = next(f for f in frames if "grades 0-4" in f.columns).set_index("assessor")
    topics = next(f for f in frames if list(f.columns) == ["conversation", "progress", "judged", "assigned"])
    return people, topics


def test_dashboard_figures_equal_stats_json_and_count_only_current_assignments(app_db, monkeypatch):
    """The page's figures equal `python -m assess stats --json`'s "review"; organizers, adjudicators and open-mode
    visitors are not listed; a topic's progress counts only the assigned assessor's labels of the assigned items
    (before the campaign: 0, although the demo's assessors labelled most of the pool)."""
    import json

    from tests.helpers import run_cli

    monkeypatch.setenv("ASSESS_OPEN", "1")  # the page as in open sign-in, once the store holds accounts
    at = open_app("pages/review.py")
    assert not at.dataframe or "grades 0-4" not in at.dataframe[0].value.columns
    assert any("No assessor is listed yet" in i.value for i in at.info)
    made = _campaign(app_db)
    at.run()
    assert not at.exception
    cli = json.loads(run_cli("stats", "--json", db=app_db, check=True).stdout)["review"]
    people, topics = _dashboard(at)
    assert list(people.index) == [r["assessor"] for r in cli["assessors"]] == ["amy", "bo"]
    for r in cli["assessors"]:
        shown = people.loc[r["assessor"]]
        assert (shown["judged"], shown["assigned"], shown["labels"]) == (r["judged"], r["assigned"], r["labels"])
        assert list(shown["grades 0-4"]) == r["grades"] and shown["cannot"] == r["cannot_judge"]
        assert shown["active min"] == r["active_minutes"]
    amy = next(r for r in cli["assessors"] if r["assessor"] == "amy")
    with open_db(app_db) as db:
        assigned = store_rows(
            db,
            "SELECT COUNT(*) AS n FROM pool WHERE turn_id IN (:a, :b)",
            {"a": made["turns"][0], "b": made["turns"][-1]},
        )[0]["n"]
    assert (amy["judged"], amy["assigned"], amy["labels"]) == (3, assigned, 5)  # her 2 unassigned labels: not progress
    assert amy["grades"] == [0, 0, 0, 5, 0] and amy["active_minutes"] == round(5 * 2000 / 60000, 1)
    assert list(topics["conversation"]) == [t["conversation"] for t in cli["topics"]]
    assert list(topics["judged"]) == [t["judged"] for t in cli["topics"]] and sum(topics["judged"]) == 3
    assert list(topics["assigned"]) == [t["assigned"] for t in cli["topics"]] and sum(topics["assigned"]) == assigned
    assert cli["timeline"]["assigned"] == assigned and cli["timeline"]["points"][-1]["cumulative"] == 3
    chart = at.get("plotly_chart")[0].proto.spec
    assert json.loads(chart)["data"][0]["y"][-1] == 3
    assert any(f"**3 of {assigned} assigned items judged**" in m.value for m in at.markdown)


def test_review_progress_follows_new_labels_between_reruns(app_db, monkeypatch):
    """The page keeps its dashboard between reruns (ui.review.progress_tables) until an input changes."""
    monkeypatch.setenv("ASSESS_OPEN", "1")
    made = _campaign(app_db)
    at = open_app("pages/review.py")
    people, topics = _dashboard(at)
    assert people.loc["amy", "judged"] == 3
    before = dict(zip(topics["conversation"], topics["judged"]))
    with open_db(app_db) as db:
        last = made["turns"][-1]
        picked = store_rows(db, "SELECT passage_id FROM pool WHERE turn_id = :t ORDER BY passage_id", {"t": last})[:2]
        for r in picked:
            queue.save_passage_label(db, "amy", last, r["passage_id"], 2, mode="blind", via="ui")
        conversation = store_rows(db, "SELECT conversation_id FROM turns WHERE id = :t", {"t": last})[0]
    at.run()
    people, topics = _dashboard(at)
    assert people.loc["amy", "judged"] == 5 and people.loc["amy", "labels"] == 7
    after = dict(zip(topics["conversation"], topics["judged"]))
    assert after == {c: before[c] + (2 if c == conversation["conversation_id"] else 0) for c in before}
