"""`overlap --adaptive`, `overlap --advance` and `audit overlap` over an adaptive plan, in process on a copy of
the demo: the steps the margin takes (counted here from the stored labels), the ceiling kept to the base share
with the extras apart, and a bad margin refused with exit 2 before anything is written."""

from __future__ import annotations

import json

import pytest

from store import labels, open_db, overlap
from store.db import rows
from tests.helpers import run_cli, snapshot

PLAN = ["overlap", "--name", "ad", "--assessor", "ann", "--assessor", "ben", "--assessor", "cy"]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--adaptive", "--margin", "0"], "--margin: a grade difference in (0, 4], not 0.0"),
        (["--adaptive", "--margin", "-1"], "--margin: a grade difference in (0, 4], not -1.0"),
        (["--adaptive", "--margin", "nan"], "--margin: a grade difference in (0, 4], not nan"),
        (["--adaptive", "--margin", "4.5"], "--margin: a grade difference in (0, 4], not 4.5"),
        (["--adaptive"], "--adaptive needs --margin M"),
        (["--margin", "1"], "--margin and --judge belong to an adaptive plan: add --adaptive"),
        (["--adaptive", "--margin", "1", "--judge", "nobody"], "--judge 'nobody' has no passage labels"),
    ],
)
def test_a_bad_margin_exits_2_and_writes_nothing(demo_target, options, message):
    before = snapshot(demo_target)
    done = run_cli(*PLAN, "--conversation", "101", "--share", "0.1", *options, db=demo_target)
    assert (done.returncode, done.stdout) == (2, "")
    assert message in done.stderr and "Traceback" not in done.stderr
    assert snapshot(demo_target) == before


def test_an_adaptive_plan_from_the_command_line(demo_target):
    made = run_cli(
        *PLAN, "--conversation", "101", "--share", "0.1", "--adaptive", "--margin", "2", "--judge", "llm:demo-gpt",
        "--json", db=demo_target,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert summary["copies"] == 3  # adaptive: at most as many as three assessors allow
    assert summary["adaptive"] == {
        "margin": 2.0,
        "judge": "llm:demo-gpt",
        "steps": {"judge": 0, "humans": 0, "disputed": 0},
    }
    with open_db(demo_target) as db:
        gpt = labels.values(db, "passage", "llm:demo-gpt")
        judged = overlap.planned_judges(db, "passage", "ad")  # the base share, with its two assessors
        base = set(judged)
        demo = labels.values(db, "passage", "demo-ann")
        given = []
        for r in rows(db, "SELECT assessor, turn_id FROM assignments"):  # each primary: the demo assessor's grades
            mine = [(it, g) for it, g in demo.items() if it[0] == r["turn_id"]]
            labels.save_many(db, "passage", r["assessor"], mine, mode="blind", via="ui")  # bulk: no step taken yet
            given += mine
    apart = {
        it for it, g in given if it not in base and g is not None and gpt.get(it) is not None and abs(g - gpt[it]) >= 2
    }
    assert apart  # the demo's assessor and GPT differ by two grades on some items
    advanced = run_cli("overlap", "--name", "ad", "--advance", "--json", db=demo_target)
    assert advanced.returncode == 0, advanced.stderr
    assert json.loads(advanced.stdout) == {"judge": len(apart), "humans": 0, "disputed": 0}
    again = run_cli("overlap", "--name", "ad", "--advance", db=demo_target)
    assert again.stdout == "plan ad: judge 0, humans 0, disputed 0\n"

    report = json.loads(run_cli("audit", "overlap", "--plan", "ad", "--json", db=demo_target).stdout)
    assert report["items"] == len(base)  # the ceiling's items: the base share only
    assert report["adaptive"]["base_items"] == len(base)
    assert report["adaptive"]["steps"]["judge"]["items"] == len(apart)
    assert report["adaptive"]["steps"]["judge"]["pairs"] == 0  # ben has not judged them yet
    text = run_cli("audit", "overlap", "--plan", "ad", db=demo_target).stdout
    assert (
        f"adaptive: the ceiling reads the {len(base)} base-share items only; apart from it, {len(apart)} items" in text
    )

    planned = run_cli("overlap", "--name", "pilot", "--advance", db=demo_target)
    assert planned.returncode == 2 and "no overlap plan named 'pilot'" in planned.stderr
