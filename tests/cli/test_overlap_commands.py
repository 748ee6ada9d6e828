"""`overlap`, `audit overlap`, `reshow`, `audit retest` and `audit alt-test` over a plan's assessors, in
process on a copy of the demo: their output, their JSON equal to the services', refusals with exit 2."""

from __future__ import annotations

import json

from assess.services import audit
from store import labels, open_db
from tests.helpers import run_cli, snapshot


def test_a_plan_and_its_ceiling_from_the_command_line(demo_target):
    made = run_cli(
        "overlap", "--name", "pilot", "--assessor", "ann", "--assessor", "ben", "--conversation", "101", "102",
        "--share", "0.2", "--by", "boss", db=demo_target,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stdout == (
        "plan pilot (passage): 12 turns, 217 items; 43 of 217 items judged by 2 assessors\n"
        "  ann: 6 turns of their own, 20 extra items\n"
        "  ben: 6 turns of their own, 23 extra items\n"
    )
    before = snapshot(demo_target)
    again = run_cli(
        "overlap", "--name", "pilot", "--assessor", "ann", "--assessor", "ben", "--conversation", "101",
        "--share", "0.2", db=demo_target,
    )  # fmt: skip
    assert (again.returncode, again.stdout) == (2, "")
    assert "an overlap plan named 'pilot' exists already" in again.stderr
    three = run_cli(
        "overlap", "--name", "p3", "--assessor", "ann", "--assessor", "ben", "--conversation", "101",
        "--share", "0.2", "--copies", "3", db=demo_target,
    )  # fmt: skip
    assert three.returncode == 2 and "3 assessors per item need at least 3 assessors; got 2" in three.stderr
    assert snapshot(demo_target) == before

    empty = run_cli("audit", "overlap", db=demo_target)
    assert empty.stdout == (
        "passage: 43 items planned for overlap, 0 judged by two assessors, 0 by all planned\n"
        "  no human ceiling yet: no two planned assessors have judged 30 shared items\n"
    )
    with open_db(demo_target) as db:
        for name in ("ann", "ben"):  # both give the demo assessors' grades where they have them
            given = labels.values(db, "passage", "demo-ann" if name == "ann" else "demo-ben")
            labels.save_many(db, "passage", name, list(given.items()), mode="blind", via="ui")
        expected = audit.overlap_view(db, threshold=2, bootstrap=1000, seed=0)
    shown = run_cli("audit", "overlap", "--json", db=demo_target)
    assert json.loads(shown.stdout) == expected
    # the two share fewer than 30 planned items: listed, not pooled; with the minimum lowered they are the ceiling
    assert expected["ceiling"] is None and expected["below_minimum"] == [["ann", "ben", expected["judged_by_two"]]]
    assert 0 < expected["judged_by_two"] < 30 == expected["min_shared"]
    lowered = run_cli("audit", "overlap", "--min-shared", "1", "--json", db=demo_target)
    assert json.loads(lowered.stdout)["ceiling"]["n"] == expected["judged_by_two"]
    text = run_cli("audit", "overlap", db=demo_target).stdout
    assert f"  not in the ceiling: ann and ben share {expected['judged_by_two']} item(s), fewer than 30\n" in text

    alt = run_cli(
        "audit", "alt-test", "--human", "ann", "--human", "ben", "--judge", "llm:demo-gpt", "--json", db=demo_target
    )  # fmt: skip
    assert alt.returncode == 0, alt.stderr
    with open_db(demo_target) as db:  # here both copied a demo assessor's every label: they share more
        assert json.loads(alt.stdout) == audit.alt_test_view(db, ["ann", "ben"], "llm:demo-gpt")
        shared = set(labels.values(db, "passage", "ann")) & set(labels.values(db, "passage", "ben"))
        judged = labels.values(db, "passage", "llm:demo-gpt")
        assert json.loads(alt.stdout)["shared_items"] == len(shared & set(judged)) == 109
        assert {"ann", "ben"} <= set(audit.default_humans(db, "passage", "llm:demo-gpt"))  # /audit's default


def test_the_reshow_rule_and_self_agreement_from_the_command_line(demo_target):
    assert run_cli("reshow", db=demo_target).stdout == "passage: no items are re-shown\n"
    set_rule = run_cli("reshow", "--share", "0.05", "--gap", "8", "--seed", "3", "--by", "boss", db=demo_target)
    assert set_rule.stdout == (
        "passage: 0.05 of each assessor's judged items come back after 8-16 further labels (seed 3)\n"
    )
    before = snapshot(demo_target)
    bad = run_cli("reshow", "--share", "1.5", db=demo_target)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "the re-show share is in (0, 1], not 1.5" in bad.stderr
    assert snapshot(demo_target) == before
    report = run_cli("audit", "retest", "--json", db=demo_target)
    assert json.loads(report.stdout)["assessors"] == []
    assert run_cli("audit", "retest", db=demo_target).stdout == (
        "passage: self-agreement over re-shown items (kappa_quadratic, 95% bootstrap interval)\n"
        "assessor  answered  graded  changed  agreement  kappa_quadratic\n"
    )
