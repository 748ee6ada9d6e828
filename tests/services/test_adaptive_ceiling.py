"""The human ceiling of an adaptive overlap plan (assess.services.audit.overlap_view) on both engines: computed
from the base share alone, equal to the agreement module over those items' two planned assessors; the items the
margin added reported apart (pairs counted here); a disputed item's adjudication screen shows its people."""

from __future__ import annotations

import pytest

from assess.measures.agreement import agreement_matrix
from assess.services import audit, judging
from store import labels, open_db, overlap, overlap_adaptive, queue

NAMES = ["ann", "ben", "cy"]
JUDGE = "llm:demo-gpt"


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


def test_the_adaptive_ceiling_reads_the_base_share_and_reports_the_rest_apart(db):
    overlap.create_plan(db, "ad", NAMES, topics=["101"], share=0.3, copies=3, seed=3, margin=2, judge=JUDGE, by="boss")
    gpt = labels.values(db, "passage", JUDGE)
    # everyone answers their queue, three rounds (a copy added in one round is answered in the next): the primary
    # 4 - the judge's grade (far from it where it is not 2), the second 2, a third 4 - the primary's (far from both)
    primary = overlap_adaptive.primaries(db, "ad")
    for _ in range(3):
        third = {
            (r["turn_id"], r["item_id"]): r["assessor"]
            for r in overlap_adaptive.decisions(db, "ad")
            if r["step"] == "humans"
        }
        for name in NAMES:
            for item in queue.queue_order(db, name, open_mode=False).items:
                if labels.get(db, "passage", name, item) is not None:
                    continue
                if primary[item] == name:
                    grade = 4 - (gpt.get(item) or 0)
                elif third.get(item) == name:
                    grade = 4 - labels.values(db, "passage", primary[item])[item]
                else:
                    grade = 2
                queue.save_passage_label(db, name, item[0], item[1], grade)
    view = audit.overlap_view(db, threshold=2, bootstrap=0, min_shared=1, plan="ad")
    base = overlap.planned_judges(db, "passage", "ad")
    steps = {r["step"] for r in overlap_adaptive.decisions(db, "ad")}
    assert {"base", "judge", "humans", "disputed"} <= steps  # the case takes every step
    assert view["items"] == len(base) and all(len(people) == 2 for people in base.values())
    by_hand = {a: {} for a in NAMES}
    for item, people in base.items():
        for a in people:
            by_hand[a][item] = labels.values(db, "passage", a)[item]
    expected = agreement_matrix(
        by_hand, scale=[0, 1, 2, 3, 4], threshold=2, kinds=dict.fromkeys(NAMES, "human"), bootstrap=0, min_shared=1
    )["ceiling"]
    assert (view["ceiling"]["n"], view["ceiling"]["kappa_quadratic"]) == (expected["n"], expected["kappa_quadratic"])
    extras = view["adaptive"]
    decided = overlap_adaptive.decisions(db, "ad")
    assert extras["base_items"] == len(base)
    assert extras["steps"]["judge"]["items"] == sum(r["step"] == "judge" for r in decided)
    assert extras["disputed"] == len(overlap_adaptive.disputed(db)) > 0 and extras["adjudicated"] == 0
    item = overlap_adaptive.disputed(db)[0]
    screen = judging.adjudication_screen(db, *item, [JUDGE], blind=False, passage=lambda pid: None)
    assert {card["shown_as"] for card in screen.labels} == {JUDGE, *overlap_adaptive.item_assessors(db, *item)}
