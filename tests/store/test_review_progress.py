"""Issue 32: the review page's progress figures at campaign scale are aggregates, not a subquery per pooled
pair; on both engines they equal a naive count in Python over a small hand-built store: ``topic_progress``
(pooled pairs and pairs labelled by any assessor, or by one source, per conversation) and ``queue_progress``
(an assessor's judged / total, as ``load_queue(...).progress()`` counts them)."""

from __future__ import annotations

import json

import pytest

from assess.services.loading import load_file
from store import conversations, labels, open_db, overlap, queue, review, samples
from store.db import column, rows, write
from store.sources import ensure_source, sign_in

TOPICS = [
    {
        "number": 201,
        "title": "first",
        "ptkb": {"1": "I run.", "2": "I swim."},
        "turns": [{"turn_id": 1, "utterance": "one?"}, {"turn_id": 2, "utterance": "two?"}],
    },
    {"number": 202, "title": "second", "ptkb": {"1": "I cook."}, "turns": [{"turn_id": 1, "utterance": "three?"}]},
    {"number": 203, "title": "unpooled", "ptkb": {}, "turns": [{"turn_id": 1, "utterance": "four?"}]},
]
QRELS = [
    "201_1 0 p:a 1",
    "201_1 0 p:b 0",
    "201_1 0 p:c 2",
    "201_1 0 p:d 0",
    "201_2 0 p:e 3",
    "202_1 0 p:f 1",
    "202_1 0 p:g 0",
]


@pytest.fixture
def db(store_target, tmp_path):
    topics, qrels = tmp_path / "topics.json", tmp_path / "qrels.txt"
    topics.write_text(json.dumps(TOPICS))
    qrels.write_text("\n".join(QRELS) + "\n")
    database = open_db(store_target)
    load_file(database, "topics", topics)
    load_file(database, "qrels", qrels, source="nist")  # an imported source: pools its pairs, is no assessor
    yield database
    database.close()


def _labels(db) -> None:
    ann, ben = sign_in(db, "ann"), sign_in(db, "ben")
    for turn, passage, grade in [("201_1", "p:a", 2), ("201_1", "p:b", None), ("202_1", "p:f", 0)]:
        queue.save_passage_label(db, ann, turn, passage, grade)
    for turn, passage, grade in [("201_1", "p:a", 3), ("201_2", "p:e", 1)]:  # p:a: a pair two assessors labelled
        queue.save_passage_label(db, ben, turn, passage, grade)
    labels.save(db, "passage", ann, ("202_1", "p:a"), 4, mode="blind", via="key")  # a label on an unpooled pair
    ensure_source(db, "llm:x", "llm")
    labels.save(db, "passage", "llm:x", ("201_1", "p:c"), 2, mode="import", via="llm")  # not an assessor's


def naive_progress(db, source: str | None) -> list[dict]:
    """Per conversation with pooled pairs (import order): every pooled pair, and those with a label of the source
    (of any assessor when None), counted in Python."""
    kinds = {r["name"]: r["kind"] for r in rows(db, "SELECT name, kind FROM sources")}
    chosen = {n for n, k in kinds.items() if (k == "assessor" if source is None else n == source)}
    labelled = {
        (r["turn_id"], r["passage_id"]) for r in rows(db, "SELECT * FROM passage_labels") if r["source"] in chosen
    }
    conversation_of = {r["id"]: r["conversation_id"] for r in rows(db, "SELECT id, conversation_id FROM turns")}
    out = []
    for conversation in column(db, "SELECT id FROM conversations ORDER BY rowid"):
        pooled = [
            (r["turn_id"], r["passage_id"])
            for r in rows(db, "SELECT turn_id, passage_id FROM pool")
            if conversation_of[r["turn_id"]] == conversation
        ]
        if pooled:
            out.append(
                {
                    "conversation": conversation,
                    "pooled": len(pooled),
                    "judged": sum(pair in labelled for pair in pooled),
                }
            )
    return out


def test_topic_progress_equals_a_naive_count(db):
    assert (
        review.topic_progress(db)
        == naive_progress(db, None)
        == [
            {"conversation": "201", "pooled": 5, "judged": 0},
            {"conversation": "202", "pooled": 2, "judged": 0},
        ]
    )
    _labels(db)
    expected = {
        None: [{"conversation": "201", "pooled": 5, "judged": 3}, {"conversation": "202", "pooled": 2, "judged": 1}],
        "ann": [{"conversation": "201", "pooled": 5, "judged": 2}, {"conversation": "202", "pooled": 2, "judged": 1}],
        "ben": [{"conversation": "201", "pooled": 5, "judged": 2}, {"conversation": "202", "pooled": 2, "judged": 0}],
        "llm:x": [{"conversation": "201", "pooled": 5, "judged": 1}, {"conversation": "202", "pooled": 2, "judged": 0}],
        "nist": [{"conversation": "201", "pooled": 5, "judged": 5}, {"conversation": "202", "pooled": 2, "judged": 2}],
        "nobody": [
            {"conversation": "201", "pooled": 5, "judged": 0},
            {"conversation": "202", "pooled": 2, "judged": 0},
        ],
    }
    for source, figures in expected.items():
        assert review.topic_progress(db, source) == naive_progress(db, source) == figures, source
    for figures in review.topic_progress(db):
        assert all(type(figures[k]) is int for k in ("pooled", "judged"))


def _progress(db, name: str, task: str = "passage", open_mode: bool = True) -> tuple[int, int]:
    figures = queue.load_queue(db, name, task=task, open_mode=open_mode).progress()
    return figures["judged"], figures["total"]


def test_queue_progress_equals_the_loaded_queue(db):
    _labels(db)
    cy = sign_in(db, "cy")
    conversations.assign(db, "ben", ["201_2", "202_1"], by="boss")  # ben: his assigned turns only
    queue.save_ptkb_label(db, "ann", "201_1", "1", 1)
    queue.save_ptkb_label(db, "ann", "202_1", "1", 0)
    cases = {
        ("ann", "passage", True): (3, 7),  # open mode, no assignment: the whole pool (the unpooled label not counted)
        ("ann", "passage", False): (0, 0),  # closed, no assignment: nothing
        ("ben", "passage", True): (1, 3),  # assigned 201_2 and 202_1: p:e judged of p:e, p:f, p:g
        ("cy", "passage", True): (0, 7),
        ("ann", "ptkb", True): (2, 2 * 2 + 1 + 0),  # 201's two statements on two turns, 202's one, 203's none
    }
    for (name, task, open_mode), figures in cases.items():
        assert queue.queue_progress(db, name, task=task, open_mode=open_mode) == figures, (name, task, open_mode)
        assert _progress(db, name, task, open_mode) == figures, (name, task, open_mode)
    # a sample given to cy and an overlap plan's extras: the queue is read and counted as load_queue orders it
    samples.create_sample(
        db,
        "s1",
        task="passage",
        design="uniform",
        population=7,
        items=[samples.SampledItem("201_1", "p:a", 0.5, assessor=cy)],
        by="boss",
    )
    assert queue.queue_progress(db, cy) == _progress(db, cy) == (0, 7)
    queue.save_passage_label(db, cy, "201_1", "p:a", 1)
    assert queue.queue_progress(db, cy) == _progress(db, cy) == (1, 7)
    overlap.create_plan(db, "pilot", ["dan", "eve"], topics=["201", "202"], share=1.0, by="boss")
    for name in ("dan", "eve"):
        queue.save_passage_label(db, name, "201_1", "p:b", 0)
        assert queue.queue_progress(db, name) == _progress(db, name), name
    summary = {r["assessor"]: (r["queue_judged"], r["queue_total"]) for r in review.assessor_summary(db)}
    assert summary == {name: _progress(db, name) for name in ("ann", "ben", "cy", "dan", "eve")}


def test_progress_version_moves_with_every_input_of_the_figures(db):
    seen = [review.progress_version(db)]

    def moved(what: str) -> None:
        now = review.progress_version(db)
        assert now not in seen, what
        seen.append(now)

    assert review.progress_version(db) == seen[0]  # nothing written: the same version
    ann = sign_in(db, "ann")
    moved("a new assessor")
    queue.save_passage_label(db, ann, "201_1", "p:a", 2)
    moved("a passage label")
    queue.save_passage_label(db, ann, "201_1", "p:a", 3)
    moved("a rewritten label")
    queue.undo(db, ann)
    moved("an undo")
    queue.save_ptkb_label(db, ann, "201_1", "1", 1)
    moved("a PTKB label")
    conversations.assign(db, ann, ["201_2"], by="boss")
    moved("an assignment")
    samples.create_sample(
        db, "s1", task="passage", design="uniform", population=7,
        items=[samples.SampledItem("202_1", "p:f", 0.5, assessor=ann)], by="boss",
    )  # fmt: skip
    moved("a sample")
    dan = sign_in(db, "dan")
    moved("another assessor")
    with write(db), labels.import_new_labels(db, "passage", dan, "2026-01-01T00:00:00Z") as bulk:
        bulk.write([("202_1", "p:f", 2)])  # a source's first import: one bulk history event, no row per label
        bulk.record(1)
    moved("a bulk import of an assessor's labels")


def naive_summary(db, name: str) -> dict:
    """One assessor's row of ``assessor_summary`` (progress and seconds aside), counted in Python from raw rows."""
    own = [r for r in rows(db, "SELECT source, turn_id, grade FROM passage_labels") if r["source"] == name]
    ptkb = [r for r in rows(db, "SELECT source FROM ptkb_labels") if r["source"] == name]
    return {
        "passage_labels": len(own),
        "turns": len({r["turn_id"] for r in own}),
        "cannot_judge": sum(r["grade"] is None for r in own),
        **{f"grade_{g}": sum(r["grade"] == g for r in own) for g in range(5)},
        "ptkb_labels": len(ptkb),
    }


def test_assessor_summary_equals_a_naive_count(db):
    _labels(db)
    sign_in(db, "cy")  # an assessor without a label
    times = ["2026-01-01T10:00:00.000Z", "2026-01-01T10:00:04.000Z", "2026-01-01T10:00:10.000Z"]
    for passage, at in zip(["p:c", "p:d", "p:b"], times):
        labels.save(db, "passage", "ben", ("201_1", passage), 1, mode="blind", via="key", at=at)
    labels.save(db, "passage", "ben", ("201_2", "p:e"), 2, mode="blind", via="key", at="2026-01-01T10:20:00.000Z")
    queue.save_ptkb_label(db, "ben", "201_1", "2", 0)
    summary = {r["assessor"]: r for r in review.assessor_summary(db)}
    assert list(summary) == ["ann", "ben", "cy"]
    for name, r in summary.items():
        assert {k: r[k] for k in naive_summary(db, name)} == naive_summary(db, name), name
        speed = review.seconds_per_label(db, name)
        assert (r["median_seconds"], r["mean_seconds"]) == (speed["median"], speed["mean"]), name
    assert summary["ben"]["passage_labels"] == 5 and summary["ben"]["cannot_judge"] == 0
    assert summary["ann"]["cannot_judge"] == 1 and summary["cy"]["passage_labels"] == 0
    # ben's gaps, from the history's rows: his two earlier labels (written now), then back to 2026-01-01
    # (negative: left out), 4 s, 6 s, and 20 min (a pause: left out)
    from datetime import datetime

    history = rows(db, "SELECT source, label_table, via, at FROM label_history ORDER BY id")
    stamps = [
        datetime.fromisoformat(h["at"].replace("Z", "+00:00"))
        for h in history
        if h["source"] == "ben" and h["label_table"] == "passage" and h["via"] not in ("bulk", "undo")
    ]
    gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:])]
    kept = [g for g in gaps if 0 <= g <= 300]
    assert len(gaps) == 5 and len(kept) == 3 and kept[1:] == [4.0, 6.0]
    assert summary["ben"]["median_seconds"] == 4.0 and summary["ben"]["mean_seconds"] == pytest.approx(sum(kept) / 3)
    assert summary["cy"]["median_seconds"] is None and review.seconds_per_label(db, "cy")["n"] == 0


def test_queue_progress_many_equals_each_queue_alone(db):
    _labels(db)
    conversations.assign(db, "ben", ["201_2", "202_1"], by="boss")
    cy = sign_in(db, "cy")
    samples.create_sample(
        db, "s1", task="passage", design="uniform", population=7,
        items=[samples.SampledItem("201_1", "p:a", 0.5, assessor=cy)], by="boss",
    )  # fmt: skip
    overlap.create_plan(db, "pilot", ["dan", "eve"], turns=["201_1"], share=1.0, by="boss")
    queue.save_passage_label(db, "dan", "201_1", "p:c", 3)
    names = ["ann", "ben", "cy", "dan", "eve", "nobody"]
    for task in ("passage", "ptkb"):
        for open_mode in (True, False):
            many = queue.queue_progress_many(db, names, task=task, open_mode=open_mode)
            alone = {n: queue.queue_progress(db, n, task=task, open_mode=open_mode) for n in names}
            loaded = {n: _progress(db, n, task, open_mode) for n in names}
            assert many == alone == loaded, (task, open_mode)
    assert queue.queue_progress_many(db, ["ann", "ben"]) == {"ann": (3, 7), "ben": (1, 3)}
    assert queue.queue_progress_many(db, []) == {}


def test_dashboard_counts_only_the_listed_assessors_current_assignments(db):
    """The review dashboard (issue 32) on both engines, against a count by hand: ann (an assessor account) holds
    201_1, ben (a name given 202_1, no account) holds 202_1; boss (an organizer account) holds 201_2 and labels it;
    cy typed a name in open mode. Only ann's labels of 201_1's pooled pairs and ben's of 202_1's count."""
    from store import accounts

    _labels(db)  # ann: 201_1 p:a 2, p:b cannot; 202_1 p:f 0, p:a 4 (unpooled); ben: 201_1 p:a 3, 201_2 p:e 1
    accounts.add(db, "ann", "assessor", None, by="root")
    accounts.add(db, "boss", "organizer", None, by="root")
    conversations.assign(db, "ann", ["201_1"], by="root")
    conversations.assign(db, "ben", ["202_1"], by="root")
    conversations.assign(db, "boss", ["201_2"], by="root")
    queue.save_passage_label(db, sign_in(db, "boss"), "201_2", "p:e", 2)
    queue.save_passage_label(db, sign_in(db, "cy"), "202_1", "p:g", 1)
    labels.save(db, "passage", "ben", ("202_1", "p:g"), 0, mode="blind", via="key", active_ms=1500)
    labels.save(db, "passage", "ann", ("201_1", "p:c"), 3, mode="blind", via="key", active_ms=4500)
    found = review.dashboard(db)
    assert [(r["assessor"], r["judged"], r["assigned"], r["labels"]) for r in found["assessors"]] == [
        ("ann", 3, 4, 5),  # p:a, p:b, p:c of 201_1's four; her 202_1 labels are outside her turns
        ("ben", 1, 2, 3),  # p:g of 202_1's two; his 201_1 and 201_2 labels do not count
    ]
    ann = found["assessors"][0]
    assert (ann["grades"], ann["cannot_judge"]) == ([1, 0, 1, 1, 1], 1)
    assert (ann["active_minutes"], ann["timed_labels"]) == (round(4500 / 60000, 1), 1)
    assert found["topics"] == [
        {"conversation": "201", "assigned": 4, "judged": 3},
        {"conversation": "202", "assigned": 2, "judged": 1},
    ]
    timeline = found["timeline"]
    assert timeline["assigned"] == 6 and timeline["unit"] == "hour"
    assert sum(p["judged"] for p in timeline["points"]) == timeline["points"][-1]["cumulative"] == 4
    before = review.progress_version(db)
    accounts.set_role(db, "ann", "organizer", by="root")  # a changed role changes who is listed
    assert review.progress_version(db) != before
    assert [r["assessor"] for r in review.dashboard(db)["assessors"]] == ["ben"]
