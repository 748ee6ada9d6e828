"""Side-by-side battles (schema 15): the verdicts of every source, imported files of them, battle plans and the
pairs of stored responses a battle can be about.

A battle label is keyed by its source, topic (turn id), ``run_a`` (shown on the left), ``run_b`` and
``occurrence`` (:data:`assess.tasks.LABEL_KINDS` ``battle``); its outcome is checked against the registry's
scale by :mod:`store.labels`, which writes it, notes it and undoes it as every other label.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from assess.errors import AssessError, UnknownItem
from assess.tasks import BATTLE_WINNER_NAMES, BATTLE_WINNERS, NOTHING_SHOWN, Task, label_kind
from store import labels, outbox
from store.bulk import insert_rows
from store.db import Store, column, columns, now, row, rows, run, run_many, write
from store.history import record_action
from store.rights import check_writer
from store.settings import store_secret
from store.sources import ensure_source
from store.staging import stage_block, staging

_TASK = Task.BATTLE
BATTLE_COLUMNS = ("turn_id", "run_a", "run_b", "occurrence", "winner", "reshow", "note", "active_ms", "updated_at")


BATTLES_PER_BLOCK = 2_000  # battles staged per block of an import


def import_battles(db: Store, source: str, records: Iterable, *, file: str, by: str | None = None) -> dict[str, int]:
    """Write battles read from ``file`` (:class:`assess.formats.battles.BattleRecord`) as labels of ``source`` (a
    source kind from its name: ``llm:…`` an LLM, else an import), staged :data:`BATTLES_PER_BLOCK` at a time
    without the write lock and made visible in one switch (docs/architecture.md, "Large imports"): a bad record
    raised while reading leaves the store unchanged. A battle stored already is rewritten only when its winner
    differs (the rule of every label import; ``changed`` compares with the store as each block is staged); the
    history records each change. Returns ``{"battles", "new", "changed", "topics", "runs"}``."""
    # The order judged (Elo's order) is (time, key): the file's n-th battle is stamped n ms after the import's
    # time, so an imported file keeps its own order instead of its topic ids' (one time would tie them all).
    start = datetime.fromisoformat(now().replace("Z", "+00:00"))
    stored = labels.values(db, _TASK, source)
    count, changed, topics, runs = 0, 0, set(), set()
    records = iter(records)
    with staging(db, _STAGING, clustered=("staged_battles",)):
        while block := list(itertools.islice(records, BATTLES_PER_BLOCK)):
            staged = []
            for r in block:
                stamp = (start + timedelta(milliseconds=count)).isoformat(timespec="milliseconds")
                key = (r.topic_id, r.run_a, r.run_b, r.occurrence)
                outcome = BATTLE_WINNERS[r.winner]
                changed += (found := stored.get(key)) is not None and found != outcome
                features = getattr(r, "features_a", None) is not None
                staged.append(
                    (
                        *key,
                        outcome,
                        int(r.reshow),
                        r.reason,
                        stamp.replace("+00:00", "Z"),
                        json.dumps(r.features_a, sort_keys=True) if features else None,
                        json.dumps(r.features_b, sort_keys=True) if features else None,
                    )
                )
                topics.add(r.topic_id)
                runs.update((r.run_a, r.run_b))
                count += 1
            with stage_block(db):  # the reader numbers a pair's repeats (occurrence): no key is given twice
                insert_rows(db, f"INSERT INTO staged_battles ({', '.join(_STAGED)})", ("?",) * len(_STAGED), "", staged)
        with write(db, lock_to_commit=True):  # foreign keys checked per row
            ensure_source(db, source)
            check_writer(db, source)
            before = _count(db, source)
            labels.import_staged_labels(db, _TASK, "staged_battles", _STAGED[:8], source, start.isoformat())
            run(  # "WHERE … ORDER BY": SQLite reads an ON CONFLICT after a bare FROM as a join's ON
                db,
                "INSERT INTO battle_features (source, turn_id, run_a, run_b, occurrence, features_a, features_b) "
                "SELECT :source, turn_id, run_a, run_b, occurrence, features_a, features_b FROM staged_battles "
                "WHERE features_a IS NOT NULL ORDER BY turn_id, run_a, run_b, occurrence "
                "ON CONFLICT (source, turn_id, run_a, run_b, occurrence) "
                "DO UPDATE SET features_a = excluded.features_a, features_b = excluded.features_b",
                {"source": source},
            )
            summary = {
                "battles": count,
                "new": _count(db, source) - before,
                "changed": changed,
                "topics": len(topics),
                "runs": len(runs),
            }
            if by is not None:
                record_action(db, by, "import", f"battles {file}", None, summary, via=source)
            outbox.import_finished(db, "battles", file, source=source, **summary)
    return summary


_STAGED = (
    "turn_id",
    "run_a",
    "run_b",
    "occurrence",
    "outcome",
    "reshow",
    "note",
    "updated_at",
    "features_a",
    "features_b",
)
_STAGING = {
    "staged_battles": "turn_id TEXT NOT NULL, run_a TEXT NOT NULL, run_b TEXT NOT NULL, occurrence INTEGER NOT NULL, "
    "outcome INTEGER NOT NULL, reshow INTEGER NOT NULL, note TEXT, updated_at TEXT NOT NULL, features_a TEXT, "
    "features_b TEXT, PRIMARY KEY (turn_id, run_a, run_b, occurrence)"
}


def _count(db: Store, source: str) -> int:
    return row(db, "SELECT COUNT(*) AS n FROM battles WHERE source = :source", {"source": source})["n"]


def battles(db: Store, source: str) -> list[dict[str, Any]]:
    """Every battle of ``source`` in the order judged (time, then key): ``{turn_id, run_a, run_b, occurrence,
    winner, reshow, note, active_ms, updated_at}`` with ``winner`` spelled a / b / tie / both_bad."""
    labels_of = columns(
        db,
        "SELECT turn_id, run_a, run_b, occurrence, outcome, reshow, note, active_ms, updated_at FROM battles "
        "WHERE source = :source ORDER BY updated_at, turn_id, run_a, run_b, occurrence",
        {"source": source},
    )
    names = [*BATTLE_COLUMNS[:4], "outcome", *BATTLE_COLUMNS[5:]]
    out = []
    for values in zip(*(labels_of[c] for c in names)):
        found = dict(zip(BATTLE_COLUMNS, values))
        found["winner"] = BATTLE_WINNER_NAMES[found["winner"]]
        found["reshow"] = bool(found["reshow"])
        out.append(found)
    return out


def battle_features(db: Store, source: str) -> dict[tuple[str, str, str, int], tuple[dict, dict]]:
    """The features a battle file gave the source's battles: ``{(turn, run_a, run_b, occurrence): (a, b)}``."""
    found = columns(
        db,
        "SELECT turn_id, run_a, run_b, occurrence, features_a, features_b FROM battle_features WHERE source = :source",
        {"source": source},
    )
    return {
        (t, a, b, o): (json.loads(fa), json.loads(fb))
        for t, a, b, o, fa, fb in zip(
            *(found[c] for c in ("turn_id", "run_a", "run_b", "occurrence", "features_a", "features_b"))
        )
    }


def require_battle_source(db: Store, source: str) -> None:
    """Refuse a source without any battle (naming the sources that have some)."""
    if row(db, "SELECT 1 AS found FROM battles WHERE source = :source LIMIT 1", {"source": source}) is None:
        known = [s["name"] for s in battle_sources(db)]
        hint = f"one of {', '.join(known)}" if known else "none has battles yet: import some first"
        raise UnknownItem(f"the source {source!r} has no battles ({hint})")


def battle_sources(db: Store) -> list[dict[str, str]]:
    """The sources with battles, by name: ``{name, kind}``."""
    return rows(
        db,
        "SELECT s.name AS name, s.kind AS kind FROM sources s "
        "WHERE EXISTS (SELECT 1 FROM battles b WHERE b.source = s.name) ORDER BY s.name",
    )


def battle_counts(db: Store) -> dict[str, int]:
    """{source: how many battles it holds}."""
    return {r["source"]: r["n"] for r in rows(db, "SELECT source, COUNT(*) AS n FROM battles GROUP BY source")}


# ------------------------------------------------------------------------------------------- responses


def response_runs(db: Store) -> dict[str, list[str]]:
    """The runs with a stored response per turn (turns in conversation order, runs by name): what plans pair."""
    out: dict[str, list[str]] = {}
    for r in rows(
        db,
        "SELECT r.turn_id AS turn_id, r.run AS run FROM responses r JOIN turns t ON t.id = r.turn_id "
        "JOIN conversations c ON c.id = t.conversation_id ORDER BY c.rowid, t.position, r.run",
    ):
        out.setdefault(r["turn_id"], []).append(r["run"])
    return out


def check_pair(db: Store, turn_id: str, run_a: str, run_b: str) -> None:
    """Refuse a battle of the page or an LLM unless both runs have a stored response to the turn."""
    if run_a == run_b:
        raise AssessError(f"a battle needs two different runs, not {run_a!r} twice")
    found = set(
        column(
            db,
            "SELECT run FROM responses WHERE turn_id = :turn_id AND (run = :a OR run = :b)",
            {"turn_id": turn_id, "a": run_a, "b": run_b},
        )
    )
    missing = [r for r in (run_a, run_b) if r not in found]
    if missing:
        raise UnknownItem(f"no stored response of run {missing[0]!r} to {turn_id!r}")


def save_battle(
    db: Store,
    source: str,
    turn_id: str,
    run_a: str,
    run_b: str,
    winner: str,
    *,
    reshow: bool = False,
    active_ms: int | None = None,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
    fresh: bool = False,
) -> None:
    """Write one verdict of ``source`` (``run_a`` shown on the left) in its own transaction, after checking that
    both runs answered the turn; ``winner`` a / b / tie / both_bad. ``fresh``: the page drew the battle without a
    verdict (a key press): a verdict stored meanwhile from another tab or device is kept
    (:class:`store.labels.StaleLabel`), not replaced."""
    if winner not in BATTLE_WINNERS:
        raise AssessError(f"a battle's winner is one of {', '.join(BATTLE_WINNERS)}, not {winner!r}")
    if active_ms is not None and (isinstance(active_ms, bool) or not isinstance(active_ms, int) or active_ms < 0):
        raise AssessError(f"active time is a number of milliseconds >= 0, not {active_ms!r}")
    with write(db):
        check_pair(db, turn_id, run_a, run_b)
        try:
            labels.save(
                db,
                _TASK,
                source,
                (turn_id, run_a, run_b, 0),
                BATTLE_WINNERS[winner],
                note=note,
                mode=mode,
                via=via,
                extra={"reshow": int(reshow), "active_ms": active_ms},
                expected=NOTHING_SHOWN if fresh else None,
            )
        except labels.StaleLabel as exc:  # the page draws the next battle: there is nothing to press again
            raise labels.StaleLabel(
                label_kind(_TASK), source, exc.stored, exc.at, then="it stays as judged there (U undoes it)"
            ) from None


def blinding_secret(db: Store) -> bytes:
    """The store's secret that draws each person's battle sides and order (created on first use, never shown)."""

    return store_secret(db, "battle-blinding")


def shown_sides(db: Store, source: str) -> dict[tuple[str, str, str], bool]:
    """The sides the source's stored verdicts were given in: ``{(turn, run_a, run_b): reshow}`` (first
    occurrences; ``run_a`` was on the left). A queue keeps these sides for battles already judged."""
    found = columns(
        db,
        "SELECT turn_id, run_a, run_b, reshow FROM battles WHERE source = :source AND occurrence = 0",
        {"source": source},
    )
    return {(t, a, b): bool(r) for t, a, b, r in zip(found["turn_id"], found["run_a"], found["run_b"], found["reshow"])}


def judged(db: Store, source: str) -> dict[tuple[str, str, str], str]:
    """The source's verdicts as ``{(turn, run_a, run_b): winner}`` (first occurrences): what a page skips."""
    return {
        (t, a, b): BATTLE_WINNER_NAMES[v]
        for (t, a, b, occurrence), v in labels.values(db, _TASK, source).items()
        if occurrence == 0
    }


# ------------------------------------------------------------------------------------------- plans


def create_plan(
    db: Store,
    name: str,
    method: str,
    pairs: Sequence[tuple[str, str, str]],
    *,
    details: Mapping[str, Any] | None = None,
    by: str | None = None,
) -> int:
    """Store the plan ``name`` of (turn, run_x, run_y) pairs in the order given (runs put in code-point order), in
    one transaction with its organizer action; a plan name is used once. Returns the number of pairs."""
    if not pairs:
        raise AssessError(f"the plan {name!r} has no pairs (are responses of two runs or more stored?)")
    with write(db):
        check_writer(db, by, action="import")
        if row(db, "SELECT 1 AS found FROM battle_plans WHERE name = :name", {"name": name}):
            raise AssessError(f"a battle plan named {name!r} exists already: choose another name")
        run(
            db,
            "INSERT INTO battle_plans (name, method, details, created_by, created_at) "
            "VALUES (:name, :method, :details, :by, :at)",
            {
                "name": name,
                "method": method,
                "details": json.dumps(dict(details or {}), sort_keys=True),
                "by": by,
                "at": now(),
            },
        )
        run_many(
            db,
            "INSERT INTO battle_pairs (plan, turn_id, run_x, run_y, position) VALUES (:plan, :t, :x, :y, :p)",
            ({"plan": name, "t": t, "x": min(a, b), "y": max(a, b), "p": n} for n, (t, a, b) in enumerate(pairs)),
        )
        record_action(
            db,
            by,
            "import",
            f"battle plan {name}",
            None,
            {"method": method, "pairs": len(pairs)},
            via="battles",
            writer_checked=True,
        )
    return len(pairs)


def plan_pairs(db: Store, name: str) -> list[tuple[str, str, str]]:
    """The pairs of the plan ``name`` in plan order; an unknown plan is refused naming the plans there are."""
    if row(db, "SELECT 1 AS found FROM battle_plans WHERE name = :name", {"name": name}) is None:
        known = column(db, "SELECT name FROM battle_plans ORDER BY name")
        raise UnknownItem(f"no battle plan {name!r}" + (f" (plans: {', '.join(known)})" if known else ""))
    return [
        (r["turn_id"], r["run_x"], r["run_y"])
        for r in rows(
            db,
            "SELECT turn_id, run_x, run_y FROM battle_pairs WHERE plan = :plan ORDER BY position",
            {"plan": name},
        )
    ]


def plans(db: Store) -> list[dict[str, Any]]:
    """Every battle plan: ``{name, method, details, pairs, created_by, created_at}``, newest last."""
    return rows(
        db,
        "SELECT p.name AS name, p.method AS method, p.details AS details, p.created_by AS created_by, "
        "p.created_at AS created_at, (SELECT COUNT(*) FROM battle_pairs x WHERE x.plan = p.name) AS pairs "
        "FROM battle_plans p ORDER BY p.created_at, p.name",
    )


def undo_battle(db: Store, source: str) -> tuple | None:
    """Take back the source's latest battle verdict not yet undone (:func:`store.labels.undo`); the item or None."""
    return labels.undo(db, _TASK, source)


RUN_NAME_PAGES: Mapping[str, str] = {
    "ntr_labels": "/ntr",
    "ntr_support_labels": "/ntr",
    "citation_labels": "/citations",
    "bank_matches": "/banks",
}
"""The label tables of the pages that show a response with its run's name: who labelled there has seen which
run wrote a response, so the battles' hidden identities are weaker for them."""


def run_name_exposure(db: Store, plan: str) -> dict[str, list[str]]:
    """Assessors who labelled, on a page showing run names, a response of a run of ``plan`` to one of its turns:
    ``{person: [pages]}``, by name."""
    plan_pairs(db, plan)  # an unknown plan is refused
    out: dict[str, set[str]] = {}
    for table, page in RUN_NAME_PAGES.items():
        for name in column(
            db,
            f"SELECT DISTINCT l.source AS source FROM {table} l JOIN sources s ON s.name = l.source "
            "AND s.kind = 'assessor' WHERE EXISTS (SELECT 1 FROM battle_pairs p WHERE p.plan = :plan "
            "AND p.turn_id = l.turn_id AND (p.run_x = l.run OR p.run_y = l.run))",
            {"plan": plan},
        ):
            out.setdefault(name, set()).add(page)
    return {name: sorted(pages) for name, pages in sorted(out.items())}


def battle_judges(db: Store, plan: str) -> list[str]:
    """Who has given verdicts on battles of ``plan`` (assessors' sources), by name."""
    return column(
        db,
        "SELECT DISTINCT b.source AS source FROM battles b JOIN sources s ON s.name = b.source AND s.kind = 'assessor' "
        "WHERE EXISTS (SELECT 1 FROM battle_pairs p WHERE p.plan = :plan AND p.turn_id = b.turn_id "
        "AND ((p.run_x = b.run_a AND p.run_y = b.run_b) OR (p.run_x = b.run_b AND p.run_y = b.run_a))) "
        "ORDER BY b.source",
        {"plan": plan},
    )


def citation_support(db: Store) -> dict[tuple[str, str], list[bool]]:
    """Per (turn, run), one verdict per judged citation: supported when its labels' mean support (any source,
    'cannot judge' left out) is at least 1 (partially supports or better)."""
    out: dict[tuple[str, str], list[bool]] = {}
    for r in rows(
        db,
        "SELECT turn_id, run, AVG(support) AS mean FROM citation_labels WHERE support IS NOT NULL "
        "GROUP BY turn_id, run, sentence, passage_id ORDER BY turn_id, run, sentence, passage_id",
    ):
        out.setdefault((r["turn_id"], r["run"]), []).append(float(r["mean"]) >= 1)
    return out
