"""Dropping the embedded demo (issue 32, item 9) on both engines: every row that hangs on a demo turn goes, in
one transaction with its history row; data of one's own beside it stays; a refused drop changes nothing."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from assess.errors import AssessError
from assess.services.loading import demo_in_the_way, demo_seeded, drop_demo, load_file
from store import accounts, conversations, labels, open_db, sources
from store.demo import holdings
from tests.helpers import snapshot


def own_topics(folder) -> str:
    path = folder / "own.json"
    turn = {"turn_id": 1, "utterance": "u", "resolved_utterance": "u", "response": "r", "ptkb_provenance": []}
    path.write_text(json.dumps([{"number": 7, "title": "t", "ptkb": {"1": "s"}, "turns": [turn]}]))
    return str(path)


def turn_ids_left(db) -> set[str]:
    """Every turn id any table still names (the history's text items aside)."""
    from store.db import column

    found = set()
    for name in sa.inspect(db.sa).get_table_names():
        if "turn_id" in {c["name"] for c in sa.inspect(db.sa).get_columns(name)}:
            found |= set(column(db, f'SELECT DISTINCT turn_id FROM "{name}"'))
    return found


def test_drop_demo_leaves_nothing_on_the_demo_and_keeps_ones_own(demo_target, tmp_path):
    with open_db(demo_target) as db:
        load_file(db, "topics", own_topics(tmp_path), demo="keep")
        sources.sign_in(db, "amy")
        labels.save(db, "passage", "amy", ("101_2", "demo-doc-003:0"), 2, mode="blind", via="key")
        conversations.assign(db, "amy", ["101_1", "7_1"], by="boss")
        assert holdings(db) == {"demo": 2, "others": 1} and demo_in_the_way(db, "topics")
        removed = drop_demo(db, by="boss")
        assert removed["conversations"] == 2 and removed["assignments"] == 1 and removed["passage_labels"] == 752
        assert holdings(db) == {"demo": 0, "others": 1} and not demo_in_the_way(db, "topics")
        assert turn_ids_left(db) == {"7_1"}
        from store.db import column, value

        assert set(column(db, "SELECT name FROM sources")) == {"amy", "organizers"}
        seeded = demo_seeded()
        assert set(seeded["runs"]) == {"demo-bm25", "demo-dense", "demo-rerank"} and len(seeded["passages"]) == 60
        assert value(db, "SELECT COUNT(*) AS n FROM passages") == 0
        assert value(db, "SELECT COUNT(*) AS n FROM assignments WHERE turn_id = '7_1'") == 1
        assert value(db, "SELECT COUNT(*) AS n FROM label_history WHERE label_table = 'drop-demo'") == 1
        assert drop_demo(db, by="boss") == {}  # no demo left: nothing to do, no history row
        assert value(db, "SELECT COUNT(*) AS n FROM label_history WHERE label_table = 'drop-demo'") == 1


def test_only_an_organizer_drops_the_demo(demo_target):
    with open_db(demo_target) as db:
        accounts.add(db, "ann", "assessor", None, by="boss")
    before = snapshot(demo_target)
    with open_db(demo_target) as db, pytest.raises(AssessError, match="may not do this"):
        drop_demo(db, by="ann")
    assert snapshot(demo_target) == before
