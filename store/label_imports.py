"""Label files staged and made visible in one switch (docs/architecture.md, "Large imports"): PTKB qrels
(``import ptkb-qrels``) and the labels of the nuggetizer imports (the importance of the nuggets of
``import nuggetizer-nuggets``, the NtR support labels of ``import nuggetizer-assignments``).

Each block is checked against the store and written into temporary tables without the write lock
(:func:`store.staging.stage_block`); one write transaction copies them under the import rule
(:func:`store.labels.import_staged_labels`: a label rewritten only when its value differs, the history
triggers recording each change). A refusal before the switch leaves the store unchanged."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from assess.errors import FormatError
from assess.formats import Qrel
from assess.tasks import LABEL_KINDS, Task
from store import outbox
from store.bulk import insert_rows
from store.db import Store, now, rows, run, write
from store.imports import check_turns, refuse_gone_turns
from store.labels import import_staged_labels
from store.rights import check_writer
from store.sources import ensure_source
from store.staging import stage_block, staging

_PTKB, _IMPORTANCE, _SUPPORT = (LABEL_KINDS[t] for t in (Task.PTKB, Task.IMPORTANCE, Task.NTR_SUPPORT))

PTKB_PER_BLOCK = 20_000  # PTKB qrels lines staged per block


def import_ptkb_qrels(db: Store, file: str, qrels: Iterable[Qrel], *, source: str) -> dict:
    """Store PTKB statement labels of ``source``; every statement must belong to the turn's conversation.
    Staged :data:`PTKB_PER_BLOCK` lines at a time; a bad line anywhere (an unknown turn or statement) is refused
    before the switch, the store unchanged."""
    conv_of = {r["id"]: r["conversation_id"] for r in rows(db, "SELECT id, conversation_id FROM turns")}
    statements = {
        (r["conversation_id"], r["statement_id"])
        for r in rows(db, "SELECT conversation_id, statement_id FROM ptkb_statements")
    }
    known, count, relevant, stamp = set(conv_of), 0, 0, now()
    records = iter(qrels)
    with staging(db, _PTKB_STAGING, clustered=_PTKB_STAGING):
        while block := list(itertools.islice(records, PTKB_PER_BLOCK)):
            check_turns(db, file, block, known)
            for q in block:
                if (conv_of[q.turn_id], q.item_id) not in statements:
                    expected = f"a PTKB statement number of conversation {conv_of[q.turn_id]}"
                    raise FormatError(file, q.line, expected, repr(q.item_id))
            with stage_block(db):  # the reader refuses an item given again with another grade: once here
                insert_rows(
                    db,
                    f"INSERT INTO staged_ptkb_qrels (turn_id, conversation_id, statement_id, {_PTKB.value_column})",
                    ("?", "?", "?", "?"),
                    " ON CONFLICT (turn_id, statement_id) DO NOTHING",
                    ((q.turn_id, conv_of[q.turn_id], q.item_id, q.grade) for q in block),
                )
            count += len(block)
            relevant += sum(q.grade > 0 for q in block)
        with write(db, lock_to_commit=True):  # foreign keys checked per row: a statement deleted meanwhile is refused
            refuse_gone_turns(db, file, "staged_ptkb_qrels")
            ensure_source(db, source)
            import_staged_labels(db, Task.PTKB, "staged_ptkb_qrels", _STAGED_PTKB, source, stamp)
            outbox.import_finished(db, "ptkb-qrels", file, source=source, labels=count)
    return {"labels": count, "relevant": relevant, "source": source}


_STAGED_PTKB = ("turn_id", "conversation_id", "statement_id", _PTKB.value_column)
_PTKB_STAGING = {
    "staged_ptkb_qrels": "turn_id TEXT NOT NULL, conversation_id TEXT NOT NULL, statement_id TEXT NOT NULL, "
    f"{_PTKB.value_column} INTEGER NOT NULL, PRIMARY KEY (turn_id, statement_id)"
}


def stage_importance(db: Store, levels: Mapping[tuple[str, str], int]) -> None:
    """Inside a block of :func:`store.rag_imports.import_nuggets` (``importance=True``): the importance of the
    block's nuggets by (turn, key), written as labels of the nugget source by :func:`switch_importance`; a
    nugget given again keeps its last importance, as a second save would."""
    insert_rows(
        db,
        f"INSERT INTO staged_importance (turn_id, key, {_IMPORTANCE.value_column})",
        ("?", "?", "?"),
        f" ON CONFLICT (turn_id, key) DO UPDATE SET {_IMPORTANCE.value_column} = excluded.{_IMPORTANCE.value_column}",
        ((turn, key, level) for (turn, key), level in levels.items()),
    )


def switch_importance(db: Store, source: str, stamp: str) -> None:
    """In the nuggets' switch, after they were copied: the staged importance as labels of ``source`` on them."""
    check_writer(db, source)
    value = _IMPORTANCE.value_column
    run(
        db,
        f"INSERT INTO staged_importance_ids (turn_id, nugget_id, {value}) SELECT s.turn_id, n.id, s.{value} "
        "FROM staged_importance s JOIN nuggets n ON n.source = :source AND n.turn_id = s.turn_id AND n.key = s.key",
        {"source": source},
    )
    import_staged_labels(db, Task.IMPORTANCE, "staged_importance_ids", _STAGED_IMPORTANCE, source, stamp)


_STAGED_IMPORTANCE = ("turn_id", "nugget_id", _IMPORTANCE.value_column)
IMPORTANCE_STAGING = {
    "staged_importance": f"turn_id TEXT NOT NULL, key TEXT NOT NULL, {_IMPORTANCE.value_column} INTEGER NOT NULL, "
    "PRIMARY KEY (turn_id, key)",
    "staged_importance_ids": f"turn_id TEXT NOT NULL, nugget_id INTEGER PRIMARY KEY, "
    f"{_IMPORTANCE.value_column} INTEGER NOT NULL",
}
"""The staging tables :func:`stage_importance` and :func:`switch_importance` use, beside a nugget import's."""


SupportBlock = tuple[Mapping[tuple[str, int, str], int], Mapping[tuple[str, int], int]]
"""One checked block of a support label file: {(turn, nugget id, run): support} of the label source and
{(turn, nugget id): importance} added to the nugget source (nuggets that had none)."""


def import_support_labels(
    db: Store, blocks: Iterable[SupportBlock], *, source: str, nugget_source: str, file: str
) -> None:
    """Store ``ntr-support`` labels of ``source`` and the importance labels they add to ``nugget_source``, staged
    a block at a time as ``blocks`` yields them (its reading and checks run between two blocks, outside any
    transaction) and made visible in one switch. An item given again keeps its last support (as a second save
    would); an added importance its first (the blocks check later ones against it). A refusal raised by
    ``blocks`` comes before the switch: nothing is written."""
    stamp = now()
    with staging(db, _SUPPORT_STAGING, clustered=_SUPPORT_STAGING):
        for support, added in blocks:
            with stage_block(db):
                insert_rows(
                    db,
                    f"INSERT INTO staged_support (turn_id, nugget_id, run, {_SUPPORT.value_column})",
                    ("?", "?", "?", "?"),
                    f" ON CONFLICT (nugget_id, run) DO UPDATE SET {_SUPPORT.value_column} = "
                    f"excluded.{_SUPPORT.value_column}",
                    ((turn, nid, name, level) for (turn, nid, name), level in support.items()),
                )
                insert_rows(
                    db,
                    f"INSERT INTO staged_added (turn_id, nugget_id, {_IMPORTANCE.value_column})",
                    ("?", "?", "?"),
                    " ON CONFLICT (nugget_id) DO NOTHING",
                    ((turn, nid, level) for (turn, nid), level in added.items()),
                )
        with write(db, lock_to_commit=True):  # foreign keys checked per row: a nugget or run deleted meanwhile
            ensure_source(db, source)
            check_writer(db, source)
            check_writer(db, nugget_source)
            import_staged_labels(db, Task.NTR_SUPPORT, "staged_support", _STAGED_SUPPORT, source, stamp)
            import_staged_labels(db, Task.IMPORTANCE, "staged_added", _STAGED_IMPORTANCE, nugget_source, stamp)
            outbox.import_finished(db, "nuggetizer-assignments", file, source=source)


_STAGED_SUPPORT = ("turn_id", "nugget_id", "run", _SUPPORT.value_column)
_SUPPORT_STAGING = {
    "staged_support": f"turn_id TEXT NOT NULL, nugget_id INTEGER NOT NULL, run TEXT NOT NULL, {_SUPPORT.value_column} "
    "INTEGER NOT NULL, PRIMARY KEY (nugget_id, run)",
    "staged_added": f"turn_id TEXT NOT NULL, nugget_id INTEGER PRIMARY KEY, {_IMPORTANCE.value_column} INTEGER NOT NULL",
}
