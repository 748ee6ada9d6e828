"""Issue 32: /ntr keeps its queue order (every gold nugget x every response of a turn: 417,000 items at ten times
iKAT 2024) between full runs, and reads it again as soon as what it is made of changes: a new gold nugget, a
response emptied, an assignment."""

from __future__ import annotations

from assess.ui.cursor import ntr_order
from store import open_db
from store.db import run, write
from store.nuggets.gold import add_text_nugget
from store.nuggets.ntr import item_key
from store.nuggets.ntr import ntr_order as read_order


def test_the_ntr_order_is_kept_until_its_inputs_change(demo_target):
    with open_db(demo_target) as db:
        first = ntr_order(db, "ann", "gold")
        assert ntr_order(db, "ann", "gold") is first  # kept: no second read
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
