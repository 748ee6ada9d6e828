"""Issue 32: the NtR queue's order (store.nuggets.ntr.ntr_order) at a campaign's scale. It reads every gold nugget x
every response of a turn; with the nuggets in the outer loop SQLite scanned the whole responses table once per
nugget (5 minutes for 417,000 items on the 10x store of tests/benchmarks/make_campaign.py). The order itself is
checked against the rule, computed here from plain reads."""

from __future__ import annotations

from assess.nuggets.spans import key_order
from store import open_db
from store.db import rows, run, traced, write
from store.nuggets.ntr import item_key, ntr_order


def expected_order(db, source: str) -> list[tuple[str, str]]:
    """Conversation import order, turn position, run, nugget key; only responses with some text."""
    turns = rows(
        db,
        "SELECT t.id AS id FROM turns t JOIN conversations c ON c.id = t.conversation_id ORDER BY c.rowid, t.position",
    )
    nuggets = rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :s", {"s": source})
    answered = rows(db, "SELECT turn_id, run, text FROM responses")
    items = []
    for t in turns:
        for run_name in sorted(r["run"] for r in answered if r["turn_id"] == t["id"] and r["text"].strip()):
            ns = sorted((key_order(n["key"]), n["id"]) for n in nuggets if n["turn_id"] == t["id"])
            items += [(t["id"], item_key(nid, run_name)) for _, nid in ns]
    return items


def test_ntr_order_follows_the_rule_and_reads_each_response_once(demo_target):
    with open_db(demo_target) as db:
        turn, a_run = rows(db, "SELECT turn_id, run FROM responses ORDER BY run, turn_id LIMIT 1")[0].values()
        with write(db):  # an empty response is no item
            run(db, "UPDATE responses SET text = '  ' WHERE run = :r AND turn_id = :t", {"r": a_run, "t": turn})
        seen: list[str] = []
        with traced(seen.append):
            order = ntr_order(db, "ann", "gold")
        assert list(order.items) == expected_order(db, "gold") and len(order.items) > 100
        assert not any(t == turn and item.endswith(f" {a_run}") for t, item in order.items)

        if db.sqlite:
            (sql,) = [s for s in seen if "FROM responses" in s]
            plan = [r[3] for r in db.raw.execute(f"EXPLAIN QUERY PLAN {sql}", {"nugget_source": "gold"}).fetchall()]
            scans = [i for i, step in enumerate(plan) if step.startswith("SCAN")]
            # one full scan, the outer loop; every other table is searched by a key
            assert scans == [0] and plan[0].startswith("SCAN r"), plan
