"""The human ceiling over planned overlap (assess.services.audit.overlap_view) and the alternative annotator
test over the plan's assessors, against the agreement module and the labels read here."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assess.errors import AssessError
from assess.measures.agreement import agreement_matrix
from assess.services import audit
from store import labels, open_db, overlap, queue

NAMES = ["ann", "ben", "cy"]
JUDGE = "llm:demo-gpt"


@pytest.fixture(scope="module")
def planned(module_demo_target):
    """Three assessors plan 30% overlap over the demo and judge their whole queues: the LLM's grade, moved by
    one grade now and then (seeded), so they agree often but not always."""
    db = open_db(module_demo_target)
    overlap.create_plan(db, "pilot", NAMES, topics=["101", "102"], share=0.3, copies=2, seed=2, by="boss")
    llm = labels.values(db, "passage", JUDGE)
    rng = random.Random(4)
    for name in NAMES:
        grades = []
        for item in queue.queue_order(db, name).items:
            base = llm.get(item, 1)
            grades.append((item, min(4, max(0, (base or 0) + rng.choice((-1, 0, 0, 0, 1))))))
        labels.save_many(db, "passage", name, grades, mode="blind", via="ui")
    yield db
    db.close()


def test_the_ceiling_equals_the_agreement_module_on_the_planned_labels(planned):
    db = planned
    judges = overlap.planned_judges(db, "passage")
    own = {name: labels.values(db, "passage", name) for name in NAMES}
    chosen = {name: {item: own[name][item] for item, people in judges.items() if name in people} for name in NAMES}
    expected = agreement_matrix(
        chosen,
        scale=[0, 1, 2, 3, 4],
        threshold=2,
        kinds=dict.fromkeys(NAMES, "human"),
        bootstrap=300,
        seed=5,
        min_shared=1,
    )
    view = audit.overlap_view(db, threshold=2, bootstrap=300, seed=5, min_shared=1)  # every pair pooled
    assert view["items"] == len(judges) == 65  # round(0.3 x 217)
    assert view["judged_by_two"] == view["judged_by_all"] == 65
    assert view["ceiling"] == {k: v for k, v in expected["ceiling"].items() if k != "by"}
    assert [(p["a"], p["b"], p["n"], p["kappa_quadratic"]) for p in view["pairs"]] == [
        (p["a"], p["b"], p["n"], p["kappa_quadratic"]) for p in expected["pairs"]
    ]
    assert view["ceiling"]["n"] == 65 and view["value"] == expected["ceiling"]["kappa_quadratic"]
    assert view["ci"] == expected["ceiling"]["ci"]["kappa_quadratic"]
    assert sum(p["n"] for p in view["pairs"]) == 65  # each planned item is one pair of two assessors


def test_the_ceiling_equals_sklearn_and_krippendorff_on_the_same_items(planned):
    """Issue 34: the peers, run here on the planned items' labels read from the store. The ceiling pools every
    pair's (a, b) labels, each planned item judged by two assessors being one unit: scikit-learn's
    cohen_kappa_score (unweighted, linear, quadratic; binarised at 2) on the pooled label vectors, oriented as
    the view names each pair, and the krippendorff package's ordinal alpha (two coders, domain 0..4)."""
    db = planned
    view = audit.overlap_view(db, threshold=2, bootstrap=0, min_shared=1)
    judges = overlap.planned_judges(db, "passage")
    own = {name: labels.values(db, "passage", name) for name in NAMES}
    a_labels, b_labels = [], []
    for pair in view["pairs"]:
        shared = [i for i, people in judges.items() if {pair["a"], pair["b"]} <= set(people)]
        shared = [i for i in shared if i in own[pair["a"]] and i in own[pair["b"]]]
        assert len(shared) == pair["n"]
        a_labels += [own[pair["a"]][i] for i in shared]
        b_labels += [own[pair["b"]][i] for i in shared]
    ceiling = view["ceiling"]
    assert ceiling["n"] == len(a_labels) == 65
    assert ceiling["agreement"] == pytest.approx(np.mean(np.array(a_labels) == np.array(b_labels)), abs=1e-12)
    unweighted = cohen_kappa_score(a_labels, b_labels, labels=range(5))
    assert ceiling["kappa_unweighted"] == pytest.approx(unweighted, abs=1e-12)
    for weights in ("linear", "quadratic"):
        theirs = cohen_kappa_score(a_labels, b_labels, labels=range(5), weights=weights)
        assert ceiling[f"kappa_{weights}"] == pytest.approx(theirs, abs=1e-12)
    binary = cohen_kappa_score([x >= 2 for x in a_labels], [x >= 2 for x in b_labels])
    assert ceiling["kappa_binary"] == pytest.approx(binary, abs=1e-12)
    alpha = krippendorff.alpha(
        reliability_data=[a_labels, b_labels], level_of_measurement="ordinal", value_domain=list(range(5))
    )
    assert ceiling["alpha"] == pytest.approx(alpha, abs=1e-12)
    assert view["value"] == ceiling["kappa_quadratic"]


def test_the_alternative_annotator_test_takes_the_plans_assessors_as_humans(planned):
    db = planned
    humans = audit.default_humans(db, "passage", JUDGE)
    assert set(NAMES) <= set(humans) and JUDGE not in humans
    judged = labels.values(db, "passage", JUDGE)
    shared = [item for item in overlap.planned_judges(db, "passage") if item in judged]
    view = audit.alt_test_view(db, NAMES, JUDGE, min_items=5)
    assert view["shared_items"] == len(shared)  # exactly the planned overlap: no other item has two of them
    assert sorted(r["annotator"] for r in view["annotators"]) == NAMES


def test_pairs_below_the_minimum_of_shared_items_are_listed_not_pooled(planned):
    """Issue 32: the ceiling pools only pairs of humans sharing at least MIN_SHARED (30) items; the others are
    listed with their number of items. The pilot's 65 items make three pairs of about 22: none by default."""
    from assess.measures.agreement import MIN_SHARED

    db = planned
    every = audit.overlap_view(db, threshold=2, bootstrap=0, min_shared=1)
    sizes = {(p["a"], p["b"]): p["n"] for p in every["pairs"]}
    assert len(sizes) == 3 and max(sizes.values()) < MIN_SHARED == 30
    default = audit.overlap_view(db, threshold=2, bootstrap=0)
    assert default["min_shared"] == 30 and default["ceiling"] is None and default["value"] is None
    assert default["below_minimum"] == [[a, b, n] for (a, b), n in sizes.items()]
    assert not any(p["in_ceiling"] for p in default["pairs"])
    cut = sorted(sizes.values())[1]  # the two larger pairs reach it, the smallest does not
    some = audit.overlap_view(db, threshold=2, bootstrap=0, min_shared=cut)
    kept = [pair for pair, n in sizes.items() if n >= cut]
    assert len(kept) == 2 and some["ceiling"]["pairs"] == [list(pair) for pair in kept]
    assert some["ceiling"]["n"] == sum(sizes[pair] for pair in kept)
    assert some["below_minimum"] == [[a, b, n] for (a, b), n in sizes.items() if n < cut]


def test_the_agreement_matrix_states_and_applies_the_minimum(planned):
    """`audit agreement`'s ceiling on the demo's two assessors (109 shared items): pooled at the default 30, listed
    and not pooled at a minimum above 109; the JSON states the minimum."""
    db = planned
    chosen = ["demo-ann", "demo-ben", JUDGE]
    default = audit.agreement_view(db, "passage", chosen, threshold=2, bootstrap=0)
    assert default["ceiling_min_shared"] == 30 and default["ceiling_below_minimum"] == []
    assert default["ceiling"]["pairs"] == [["demo-ann", "demo-ben"]] and default["ceiling"]["n"] == 109
    strict = audit.agreement_view(db, "passage", chosen, threshold=2, bootstrap=0, min_shared=110)
    assert strict["ceiling"] is None and strict["ceiling_below_minimum"] == [["demo-ann", "demo-ben", 109]]
    with pytest.raises(AssessError, match="minimum of shared items is an integer >= 1, found 0"):
        audit.agreement_view(db, "passage", chosen, threshold=2, bootstrap=0, min_shared=0)
