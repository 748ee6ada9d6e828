"""Battle blinding with a secret (issue 33, R5): a person's sides and order come from an HMAC under the store's
own secret, so the public facts (person, topic, runs) do not predict them; the draw is stable across reloads,
and verdicts given under the earlier, secret-less draw keep their sides and are not asked again."""

from __future__ import annotations

import hashlib

import pytest

from assess.services import battles
from store import battles as battle_store
from store import open_db
from store.db import rows, write
from store.sources import ensure_source
from tests.helpers import run_cli


def public_prediction(person: str, turn: str, x: str, y: str) -> tuple[str, str]:
    """The draw before the secret: SHA-256 of the person, topic and pair, which anyone could compute."""
    h = int.from_bytes(hashlib.sha256("\x1f".join((person, turn, x, y)).encode()).digest()[:8], "big")
    return (x, y) if h & 1 else (y, x)


@pytest.fixture
def planned(demo_target):
    run_cli("battles", "plan", "--name", "p", "--method", "all", db=demo_target, check=True)
    return demo_target


def test_sides_are_not_predicted_from_public_facts_and_stay_stable(planned):
    with open_db(planned) as db:
        pairs = battle_store.plan_pairs(db, "p")
        first = [q for q in battles.queue(db, "p", "amy") if not q["reshow"]]
    assert len(first) == len(pairs) >= 20
    predicted = {(t, *public_prediction("amy", t, x, y)) for t, x, y in pairs}
    drawn = {(q["turn_id"], q["run_a"], q["run_b"]) for q in first}
    hits = len(predicted & drawn)
    assert hits < len(pairs), "every side was predicted from public facts"
    assert 0.2 < hits / len(pairs) < 0.8  # no better than a coin (20+ pairs: a wide margin)
    with open_db(planned) as again:  # a reload, a new connection: the same draw
        assert battles.queue(again, "p", "amy") == battles.queue(again, "p", "amy")
        assert [q for q in battles.queue(again, "p", "amy") if not q["reshow"]] == first
        assert battles.queue(again, "p", "bob") != battles.queue(again, "p", "amy")  # per person


def test_the_secret_is_the_stores_own_and_kept_in_settings(planned, tmp_path):
    with open_db(planned) as db:
        secret = battle_store.blinding_secret(db)
        assert len(secret) == 32 and battle_store.blinding_secret(db) == secret
        (stored,) = rows(db, "SELECT key FROM settings WHERE key LIKE 'secret:%'")
        assert stored == {"key": "secret:battle-blinding"}
    other = tmp_path / "other.db"
    run_cli("init", db=str(other), check=True)
    with open_db(str(other)) as db:
        assert battle_store.blinding_secret(db) != secret


def test_verdicts_given_under_the_earlier_draw_keep_their_sides(planned):
    with open_db(planned) as db:
        pairs = battle_store.plan_pairs(db, "p")
        new = {(q["turn_id"], frozenset((q["run_a"], q["run_b"]))): q for q in battles.queue(db, "p", "amy")}
        # a battle judged before the upgrade, with the sides the new draw would swap
        turn, x, y = next(
            (t, x, y)
            for t, x, y in pairs
            if (new[t, frozenset((x, y))]["run_a"], new[t, frozenset((x, y))]["run_b"]) == (x, y)
        )
        with write(db):
            ensure_source(db, "amy", "assessor")
        battle_store.save_battle(db, "amy", turn, y, x, "a")
        queue = battles.queue(db, "p", "amy")
        kept = [q for q in queue if q["turn_id"] == turn and {q["run_a"], q["run_b"]} == {x, y} and not q["reshow"]]
        assert [(q["run_a"], q["run_b"]) for q in kept] == [(y, x)]  # the stored sides, not the new draw
        pending, total = battles.pending(db, "p", "amy")
        assert total == len(queue) and len(pending) == total - 1
        assert all(not (q["turn_id"] == turn and (q["run_a"], q["run_b"]) == (y, x)) for q in pending)
        again = [q for q in queue if q["reshow"] and q["turn_id"] == turn and {q["run_a"], q["run_b"]} == {x, y}]
        assert all((q["run_a"], q["run_b"]) == (x, y) for q in again)  # a re-show of it is swapped from the stored
        assert battle_store.judged(db, "amy") == {(turn, y, x): "a"}  # the verdict reads as given
