"""Issue 32: what the organizer pages keep between runs at a campaign's scale, read again as soon as its inputs
change: /ntr's queue order (every gold nugget x every response of a turn: 417,000 items at ten times iKAT 2024)
after a new gold nugget, a response emptied, an assignment; /scores' run rankings (50 runs under two qrels) after
a label of either source or a run import."""

from __future__ import annotations

from assess.services.audit import ranking_view
from assess.ui.cursor import ntr_order
from store import labels, open_db
from store.db import row, run, write
from store.nuggets.gold import add_text_nugget
from store.nuggets.ntr import item_key
from store.nuggets.ntr import ntr_order as read_order
from tests.helpers import open_app, run_cli


def test_the_ntr_order_is_kept_until_its_inputs_change(demo_target):
    with open_db(demo_target) as db:
        first = ntr_order(db, "ann", "gold")
        assert ntr_order(db, "ann", "gold") is first  # kept: no second read
        assert ntr_order(db, "ben", "gold") is first  # the same queue for everyone without assignments
        assert list(first.items) == list(read_order(db, "ann", "gold").items)

        turn, a_run = first.items[0][0], first.items[0][1].split(" ", 1)[1]
        nid = add_text_nugget(db, "gold", turn, "A nugget added after the page read its queue.")
        added = ntr_order(db, "ann", "gold")
        assert (turn, item_key(nid, a_run)) in added.index and len(added.items) > len(first.items)

        with write(db):
            run(db, "UPDATE responses SET text = ' ' WHERE run = :r AND turn_id = :t", {"r": a_run, "t": turn})
        emptied = ntr_order(db, "ann", "gold")
        assert not any(t == turn and i.endswith(f" {a_run}") for t, i in emptied.items)

        with write(db):
            run(db, "INSERT INTO assignments (assessor, turn_id, assigned_at) VALUES ('ann', :t, '2026')", {"t": turn})
        assigned = ntr_order(db, "ann", "gold")
        assert {t for t, _ in assigned.items} == {turn}
        assert list(assigned.items) == list(read_order(db, "ann", "gold").items)
        assert ntr_order(db, "ben", "gold") is emptied  # ben, without assignments, keeps the whole queue


def shown_rankings(at) -> dict:
    (table,) = [d.value for d in at.dataframe if list(d.value.columns) == ["demo-ann", "llm:demo-gpt"]]
    return table.to_dict()


def test_the_run_rankings_are_kept_until_a_label_or_a_run_changes(demo_target, monkeypatch, tmp_path):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "Run rankings"
    at.run()
    before = shown_rankings(at)
    with open_db(demo_target) as db:
        expected = ranking_view(db, "demo-ann", "llm:demo-gpt")["nDCG@3"]
        assert before == {"demo-ann": expected["a"], "llm:demo-gpt": expected["b"]}
        # a top-ranked passage judged relevant by demo-ann: its nDCG@3 changes
        top = row(db, "SELECT turn_id, passage_id FROM rankings WHERE rank = 1 ORDER BY run, turn_id LIMIT 1")
        old = labels.get(db, "passage", "demo-ann", (top["turn_id"], top["passage_id"]))
        grade = 0 if old is not None and old.value else 4
        labels.save(db, "passage", "demo-ann", (top["turn_id"], top["passage_id"]), grade, mode="import", via="test")
        expected = ranking_view(db, "demo-ann", "llm:demo-gpt")["nDCG@3"]
    at.run()
    assert shown_rankings(at) == {"demo-ann": expected["a"], "llm:demo-gpt": expected["b"]} != before

    run_file = tmp_path / "new.run"
    run_file.write_text(f"{top['turn_id']} Q0 {top['passage_id']} 1 9.5 a-new-run\n", encoding="utf-8")
    run_cli("import", "run", str(run_file), db=demo_target, check=True)
    at.run()
    assert "a-new-run" in shown_rankings(at)["demo-ann"]
