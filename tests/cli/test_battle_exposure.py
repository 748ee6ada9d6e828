"""The organizer is warned when people in battles have seen the same responses with their run names on /ntr,
/citations or /banks (issue 33, R5): `battles plan` says who on stderr, and /battles shows an organizer who of
the plan's judges did."""

from __future__ import annotations

import pytest

from store import open_db
from store.db import rows, write
from store.nuggets import ntr
from store.sources import ensure_source
from tests.helpers import open_app, run_cli


def ntr_label_on_a_plan_turn(target, person: str) -> tuple[str, str]:
    """``person`` matches a nugget against a run's response of turn 101_1 on /ntr: the run's name was shown."""
    with open_db(target) as db:
        (found,) = rows(
            db,
            "SELECT n.id AS nugget, r.run AS run FROM nuggets n JOIN responses r ON r.turn_id = n.turn_id "
            "WHERE n.source = 'gold' AND n.turn_id = '101_1' ORDER BY n.id, r.run LIMIT 1",
        )
        with write(db):
            ensure_source(db, person, "assessor")
        ntr.save_label(db, person, found["nugget"], found["run"], 1)
    return "101_1", found["run"]


def test_plan_warns_about_people_who_saw_run_names(demo_target):
    quiet = run_cli("battles", "plan", "--name", "p0", "--method", "all", db=demo_target, check=True)
    assert "warning" not in quiet.stderr  # nobody has seen a run's name yet (the demo's NtR labels are an LLM's)
    ntr_label_on_a_plan_turn(demo_target, "nia")
    out = run_cli("battles", "plan", "--name", "p", "--method", "all", db=demo_target, check=True)
    assert out.stdout.startswith("plan p: ")
    assert "warning: 1 person(s) who may judge the battles of plan 'p' saw the same responses" in out.stderr
    assert "nia (/ntr)" in out.stderr


@pytest.fixture
def judged(demo_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    run_cli("battles", "plan", "--name", "p", "--method", "all", db=demo_target, check=True)
    return demo_target


def test_battles_page_warns_the_organizer_about_judges_who_saw_run_names(judged):
    from assess.services import battles

    at = open_app("pages/battles.py", "nia")  # the demo is open: everyone is an organizer
    assert not [w for w in at.warning if "run names" in w.value]
    ntr_label_on_a_plan_turn(judged, "nia")
    at = open_app("pages/battles.py", "nia")
    assert not [w for w in at.warning if "run names" in w.value]  # nia has not judged a battle yet
    with open_db(judged) as db:
        battles.save(db, "nia", battles.pending(db, "p", "nia")[0][0], "a")
    at = open_app("pages/battles.py", "nia")
    (warning,) = [w.value for w in at.warning if "run names" in w.value]
    assert "who judge the battles of plan" in warning and "nia (/ntr)" in warning
