"""The store: migrations, history, undo, queues, blind mode, and two processes writing at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from assess.errors import AssessError
from assess.services.loading import load_demo
from store import conversations, history, open_db, queue, settings, sources
from store.db import IntegrityError, rows, run, value
from tests.helpers import ROOT


@pytest.fixture
def demo(demo_target):
    db = open_db(demo_target)
    yield db
    db.close()


def tuples(db, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in rows(db, sql)]


def test_schema_is_versioned_and_pragmas_set(tmp_path):
    db = open_db(tmp_path / "a.db")
    assert db.raw.execute("PRAGMA user_version").fetchone()[0] >= 1
    assert db.raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.raw.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    open_db(tmp_path / "a.db")  # re-opening migrates nothing twice
    assert db.raw.execute("PRAGMA user_version").fetchone()[0] >= 1


def test_a_new_file_held_by_another_writer_is_opened_once_it_is_free(tmp_path):
    """Switching a file to WAL fails at once (no busy handler) while another process holds a write lock
    in rollback mode: opening a store waits for the lock as every other statement does."""
    import sqlite3
    import threading

    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE held(a)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO held VALUES (1)")
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # what SQLite itself does
        sqlite3.connect(path, timeout=5, isolation_level=None).execute("PRAGMA journal_mode = WAL")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    db = open_db(path)
    assert value(db, "PRAGMA journal_mode") == "wal"
    assert rows(db, "SELECT a FROM held") == [{"a": 1}]
    db.close()
    holder.close()


def test_label_changes_go_to_an_append_only_history(demo):
    name = sources.sign_in(demo, "ann")
    turn, passage, _ = queue.queue(demo, name)[0]
    queue.save_passage_label(demo, name, turn, passage, 2)
    queue.save_passage_label(demo, name, turn, passage, 2)  # same grade again: no history row
    queue.save_passage_label(demo, name, turn, passage, 4, note="clear answer")
    changes = tuples(demo, "SELECT old_value, new_value, mode, via FROM label_history WHERE source = 'ann' ORDER BY id")
    assert changes == [(None, "2", "blind", "key"), ("2", "4", "blind", "key")]
    with pytest.raises(IntegrityError, match="append-only"):
        run(demo, "UPDATE label_history SET new_value = '0'")
    with pytest.raises(IntegrityError, match="append-only"):
        run(demo, "DELETE FROM label_history")
    assert tuples(demo, "SELECT old_value, new_value FROM label_history WHERE source = 'ann' ORDER BY id") == [
        (None, "2"),
        ("2", "4"),
    ]


def test_undo_walks_back_one_change_at_a_time(demo):
    name = sources.sign_in(demo, "bo")
    (t1, p1, _), (t2, p2, _) = queue.queue(demo, name)[:2]
    queue.save_passage_label(demo, name, t1, p1, 1)
    queue.save_passage_label(demo, name, t1, p1, 3)
    queue.save_passage_label(demo, name, t2, p2, 0)
    assert queue.undo(demo, name) == (t2, p2)
    assert queue.label_of(demo, name, "passage", t2, p2) is None
    assert queue.undo(demo, name) == (t1, p1)
    assert queue.label_of(demo, name, "passage", t1, p1).value == 1
    assert queue.undo(demo, name) == (t1, p1)
    assert queue.label_of(demo, name, "passage", t1, p1) is None
    assert queue.undo(demo, name) is None


def test_queue_resumes_at_first_unjudged_and_assignments_scope_it(demo):
    name = sources.sign_in(demo, "cy")
    items = queue.queue(demo, name)
    assert len(items) == 217 and items[0][:2] == ("101_1", "demo-doc-001:0")
    for turn, passage, _ in items[:3]:
        queue.save_passage_label(demo, name, turn, passage, 1)
    items = queue.queue(demo, name)
    assert queue.resume_position(items) == 3
    state = queue.load_queue(demo, name)
    assert state.resume() == 3
    assert state.progress()["turns"]["101_1"] == [3, 16]
    assert state.move(items[1][:2], "next_unjudged") == 3
    assert state.move(items[1][:2], "prev") == 0 and state.move(None, None) == 3
    conversations.assign(demo, name, conversations.pooled_turns(demo, ["102"]))
    scoped = queue.queue(demo, name)
    assert {t for t, _, _ in scoped} == {f"102_{i}" for i in range(1, 7)}
    assert queue.queue(demo, "nobody-assigned", open_mode=False) == []


def test_blind_mode_reveals_nothing_before_own_label(demo):
    name = sources.sign_in(demo, "di")
    turn, passage = "101_1", "demo-doc-001:0"
    assert queue.revealed_labels(demo, name, "passage", turn, passage) == []
    settings.set_setting(demo, "judging_mode", "reveal")
    assert queue.revealed_labels(demo, name, "passage", turn, passage) == []
    queue.save_passage_label(demo, name, turn, passage, 3, mode="reveal")
    revealed = queue.revealed_labels(demo, name, "passage", turn, passage)
    assert [r.source for r in revealed] == ["llm:demo-gpt", "llm:demo-llama"]
    assert value(demo, "SELECT mode FROM passage_labels WHERE source = 'di'") == "reveal"


def test_sign_in_refuses_names_of_other_sources(demo):
    with pytest.raises(AssessError, match="organizers label source"):
        sources.sign_in(demo, "organizers")
    with pytest.raises(AssessError, match="without spaces or ':'"):
        sources.sign_in(demo, "llm:demo-gpt")
    with pytest.raises(AssessError):
        sources.sign_in(demo, "two words")


def test_bad_grade_is_refused_and_nothing_written(demo):
    name = sources.sign_in(demo, "ed")
    before = value(demo, "SELECT COUNT(*) AS n FROM label_history")
    with pytest.raises(AssessError):
        queue.save_passage_label(demo, name, "101_1", "demo-doc-001:0", 7)
    with pytest.raises(AssessError):
        queue.save_passage_label(demo, name, "101_1", "not-pooled:0", 2)
    assert value(demo, "SELECT COUNT(*) AS n FROM label_history") == before


WORKER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from store import open_db, queue, sources
    from assess.services.loading import load_file
    db = open_db(sys.argv[1])
    if sys.argv[2] == "import":
        load_file(db, "qrels", sys.argv[3], source="bulk")
    else:
        name = sources.sign_in(db, sys.argv[2])
        for turn, passage, _ in queue.queue(db, name):
            queue.save_passage_label(db, name, turn, passage, hash(passage) % 5)
""")


def test_two_processes_writing_at_once_lose_nothing(store_target, tmp_path):
    path = store_target
    db = open_db(path)
    load_demo(db)
    pairs = tuples(db, "SELECT turn_id, passage_id FROM pool")
    qrels = tmp_path / "bulk.qrels"
    qrels.write_text("".join(f"{t} 0 {p} {i % 5}\n" for i, (t, p) in enumerate(pairs)))
    script = WORKER.format(root=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), who, str(qrels)], stderr=subprocess.PIPE, text=True)
        for who in ("w1", "w2", "import")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    counts = dict(tuples(db, "SELECT source, COUNT(*) AS n FROM passage_labels GROUP BY source"))
    assert counts["w1"] == counts["w2"] == counts["bulk"] == len(pairs) == 217
    distinct = value(
        db, "SELECT COUNT(*) AS n FROM (SELECT DISTINCT source, turn_id, passage_id FROM passage_labels) d"
    )
    assert distinct == sum(counts.values())  # no duplicate label
    history = dict(
        tuples(db, "SELECT source, COUNT(*) AS n FROM label_history WHERE label_table = 'passage' GROUP BY source")
    )
    assert history["w1"] == history["w2"] == 217
    # the import is one history event; the insert trigger it dropped (SQLite) or disabled (PostgreSQL)
    # meanwhile is back
    assert tuples(db, "SELECT item, new_value FROM label_history WHERE source = 'bulk'") == [("*", "217")]
    if db.sqlite:
        trigger = "SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'passage_labels_history_insert'"
    else:
        trigger = (
            "SELECT COUNT(*) AS n FROM pg_trigger WHERE tgname = 'passage_labels_history_insert' AND tgenabled = 'O'"
        )
    assert value(db, trigger) == 1
    db.close()


def test_pool_records_every_run_that_brought_a_passage(store_target, tmp_path):
    from assess.services.loading import load_file

    db = open_db(store_target)
    load_file(db, "topics", ROOT / "assets" / "demo" / "topics.json")
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_text("101_1 Q0 p:1 1 9 runA\n101_1 Q0 p:2 2 8 runA\n101_1 Q0 p:3 3 7 runA\n")
    b.write_text("101_1 Q0 p:3 1 5 runB\n101_1 Q0 p:4 2 4 runB\n")
    load_file(db, "run", a, depth=3)
    load_file(db, "run", b, depth=3)
    load_file(db, "run", b, depth=3)  # importing a run again adds nothing twice
    pool = tuples(db, "SELECT passage_id, method, best_rank, detail FROM pool ORDER BY passage_id")
    assert pool == [
        ("p:1", "depth", 1, "runA@1"),
        ("p:2", "depth", 2, "runA@2"),
        ("p:3", "depth", 1, "runA@3 runB@1"),
        ("p:4", "depth", 2, "runB@2"),
    ]


def store_answers(target) -> dict:
    """What the store's read functions answer after the demo and a few writes of every kind (times left out)."""
    from assess.services import accounts as service
    from store import accounts, compare, exports, labels, review, stats
    from store.nuggets import gold_responses

    out: dict = {}
    with open_db(target) as db:
        load_demo(db)
        service.add_account(db, "amy", "assessor", password="correct-horse-battery", by="boss", email="Amy@Ex.org")
        out["by_email"] = (accounts.by_email(db, "amy@ex.ORG")["name"], accounts.by_email(db, "x@y.org"))
        out["actions"] = [(a["kind"], a["by"], a["item"], a["via"]) for a in history.actions(db, "account", "amy")]
        out["conversations"] = conversations.conversations(db)
        out["pooled_turns"] = (conversations.pooled_turns(db, ["102"]), conversations.pooled_turns(db, []))
        context = conversations.turn_context(db, "101_3")
        out["context"] = (context.title, context.history, context.ptkb)
        out["provenance"] = conversations.response_provenance(db, "101_1")
        name = sources.sign_in(db, "kim")
        queue.set_judging_mode(db, "shown", by="boss")
        for (turn, passage, _), grade in zip(queue.queue(db, name), [0, 1, 2, 3, 4, None]):
            queue.save_passage_label(db, name, turn, passage, grade)
        queue.save_passage_label(db, name, "101_1", "demo-doc-001:0", 4)
        queue.save_ptkb_label(db, name, "101_2", "10", 1)
        out["revealed"] = queue.revealed_labels(db, name, "passage", "101_1", "demo-doc-001:0")
        out["ptkb_queue"] = queue.queue(db, name, task="ptkb")[:12]
        out["turn_items"] = queue.turn_items(db, name, "101_2", task="ptkb")
        out["summary"] = [{k: v for k, v in r.items() if "seconds" not in k} for r in review.assessor_summary(db)]
        out["history"] = [
            {k: v for k, v in change.items() if k != "at"}
            for source in (name, "llm:demo-gpt")
            for change in history.item_history(db, source, "101_1 demo-doc-001:0")
        ]
        out["progress"] = (review.topic_progress(db), review.topic_progress(db, name))
        out["disagreements"] = review.disagreements(db, name, "llm:demo-gpt", limit=3)
        review.adjudicate(db, "101_1", "demo-doc-001:0", 2, by="boss")
        out["adjudicated"] = review.disagreements(db, name, "llm:demo-gpt", limit=3)
        out["stats"] = (stats.stats(db), stats.sources(db), stats.is_empty(db))
        out["pairs"] = [
            compare.label_pairs(db, task, "organizers" if task == "ptkb" else name, "llm:demo-gpt")
            for task in ("passage", "ptkb")
        ]
        out["pairs_ntr"] = compare.label_pairs(db, "ntr", "llm:demo-gpt", "llm:demo-gpt")
        out["exports"] = (
            exports.qrels_text(db, name),
            exports.qrels_text(db, "organizers", "ptkb"),
            list(exports.nuggets(db, "gold")),
            exports.label_sources(db, "ptkb_labels"),
        )
        frame = exports.table_frame(db, "passage_labels", name).drop(columns=["updated_at"])
        out["frame"] = frame.sort_values("passage_id").to_csv(index=False)  # as written out (NaN != NaN)
        out["undo"] = [queue.undo(db, name) for _ in range(3)]
        out["values"] = (
            labels.values(db, "passage", name, turn_id="101_1"),
            labels.sources(db, "passage", turn_id="101_1"),
        )
        nuggets = [r["id"] for r in rows(db, "SELECT id FROM nuggets WHERE turn_id = '101_1' ORDER BY id")]
        gold_responses.save_gold_response(db, name, "101_1", "an answer", nuggets[1::-1])
        answer = gold_responses.gold_response(db, name, "101_1")
        out["gold_response"] = (answer["text"], answer["nuggets_used"] == nuggets[:2])
        out["choices"] = [(c["source"], c["key"]) for c in gold_responses.turn_nugget_choices(db, "101_1", ["gold"])]
        labels.save(db, "ntr", name, ("101_1", nuggets[0], "demo-bm25"), 1, mode="blind", via="key")
        labels.save(db, "ntr", name, ("101_1", nuggets[0], "demo-bm25"), 0, mode="blind", via="key")
        out["ntr_undo"] = (
            labels.undo(db, "ntr", name),
            labels.get(db, "ntr", name, ("101_1", nuggets[0], "demo-bm25")),
        )
    return out


def test_the_store_answers_alike_on_both_engines(tmp_path, pg_url):
    """Every read of the store modules (queues, review, stats, compare, exports, accounts, undo) gives the same
    answer, in the same order, on SQLite and on PostgreSQL."""
    on_sqlite = store_answers(str(tmp_path / "alike.db"))
    on_postgres = store_answers(pg_url)
    assert on_sqlite["stats"][0]["passage_labels"]["kim"]["cannot_judge"] == 1  # the scenario wrote what it says
    for key in on_sqlite:
        assert on_postgres[key] == on_sqlite[key], key
