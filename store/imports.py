"""Writing imported records (from :mod:`assess.formats`) into the store, each import one transaction.

Every function checks its records against the store first (turns, statements, nuggets must
exist) and raises :class:`~assess.errors.FormatError` naming the file and line of the first bad
record; nothing is written then. Re-importing the same file changes nothing (upserts on the
natural keys; the history triggers fire only on real changes).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter, itemgetter

from assess.errors import FormatError
from assess.formats import (
    Conversation,
    NtrRecord,
    NuggetRecord,
    PassageText,
    Qrel,
    ResponseRecord,
    RunRow,
    json_line,
    paused_gc,
    read_text,
    repeated_run_line,
)
from assess.tasks import LABEL_KINDS, Task
from store.db import Store, column, each, is_database_error, now, row, rows, run, run_many, value, write
from store.screens import bump_topics_version

_PASSAGE, _PTKB, _NTR = (LABEL_KINDS[t] for t in (Task.PASSAGE, Task.PTKB, Task.NTR))

SOURCE_KINDS = ("assessor", "import", "llm", "adjudication", "organizers", "crowd")


def source_kind(name: str) -> str:
    """Guess a source's kind from its name: 'llm:…', 'crowd:…', 'adjudication…', 'organizers', else import."""
    if name.startswith("llm:"):
        return "llm"
    if name.startswith("crowd:"):
        return "crowd"
    if name.startswith("adjudication"):
        return "adjudication"
    if name == "organizers":
        return "organizers"
    return "import"


def ensure_source(
    db: Store,
    name: str,
    kind: str | None = None,
    *,
    model: str | None = None,
    prompt_version: str | None = None,
    description: str | None = None,
) -> str:
    """Create the label source ``name`` if it does not exist; return its name."""
    if not name or any(c.isspace() for c in name):
        raise FormatError("--source", None, "a source name without spaces", repr(name))
    kind = kind or source_kind(name)
    if kind == "llm" and model is None:
        model = name.split(":", 1)[1] if ":" in name else None
    existing = row(db, "SELECT kind FROM sources WHERE name = :name", {"name": name})
    if existing and existing["kind"] == "assessor" and kind != "assessor":
        # an assessor signed in under this name: imported or machine labels must never mix with theirs
        raise FormatError(
            "--source",
            None,
            f"a source name that is not an assessor's ({name!r} is the assessor {name}'s own labels)",
            f"an attempt to write {kind} labels into it",
        )
    run(
        db,
        "INSERT INTO sources (name, kind, model, prompt_version, description, created_at) "
        "VALUES (:name, :kind, :model, :prompt_version, :description, :at) ON CONFLICT(name) DO NOTHING",
        {
            "name": name,
            "kind": kind,
            "model": model,
            "prompt_version": prompt_version,
            "description": description,
            "at": now(),
        },
    )
    return name


def _known_turns(db: Store) -> set[str]:
    return set(column(db, "SELECT id FROM turns"))


def _check_turns(db: Store, file: str, records: Sequence, known: set[str] | None = None) -> set[str]:
    """The records' turn ids, all present in the store; else the first record whose turn is not."""
    known = _known_turns(db) if known is None else known
    turns = set(map(attrgetter("turn_id"), records))
    if not turns <= known:
        rec = next(r for r in records if r.turn_id not in known)
        hint = "import the topics first" if not known else f"e.g. {min(known)}"
        raise FormatError(file, rec.line, f"a turn id present in the store ({hint})", repr(rec.turn_id))
    return turns


def _dicts(keys: Sequence[str], records: Iterable[Sequence]) -> Iterator[dict]:
    """Records (tuples) as parameter dicts: field i under ``keys[i]``."""
    return map(dict, map(zip, itertools.repeat(keys), records))


ROWS_PER_INSERT = 50  # records per INSERT statement of the bulk imports
_STATEMENTS_PER_CALL = 100  # statements per run_many call: 5,000 records in memory as parameters


def _insert_rows(
    db: Store, head: str, cells: Sequence[str], tail: str, records: Iterable[Sequence], shared: dict | None = None
) -> None:
    """``head VALUES (cells), (cells), ... tail`` for the records, :data:`ROWS_PER_INSERT` of them per statement.

    ``cells`` gives each column's SQL: an entry ``'?'`` takes the record's next field, any other is
    written as it is (a literal, or a ``:name`` of ``shared``, the parameters every row uses, bound
    once per statement). Records have exactly as many fields as ``cells`` has '?'. Bound per row,
    parameters cost the store layer a few microseconds each call; many rows per statement make a
    50,000-line import about twice as fast, and the rows still go in in the order given. The
    records must not repeat a key when ``tail`` is an ON CONFLICT DO UPDATE (PostgreSQL refuses to
    update a row twice in one statement).
    """
    fields = cells.count("?")
    shared = shared or {}

    def statement(n: int) -> str:
        values = []
        for i in range(n):
            field = iter(range(fields))
            values.append("(" + ", ".join(f":v{i}_{next(field)}" if c == "?" else c for c in cells) + ")")
        return f"{head} VALUES {', '.join(values)}{tail}"

    names = [f"v{i}_{k}" for i in range(ROWS_PER_INSERT) for k in range(fields)]
    full = statement(ROWS_PER_INSERT)
    records = iter(records)
    batch: list[dict] = []
    while group := list(itertools.islice(records, ROWS_PER_INSERT)):
        params = dict(zip(names, itertools.chain.from_iterable(group)))
        params.update(shared)
        if len(group) < ROWS_PER_INSERT:  # the last records: a shorter statement, after the others
            if batch:
                run_many(db, full, batch)
                batch = []
            run(db, statement(len(group)), params)
            break
        batch.append(params)
        if len(batch) >= _STATEMENTS_PER_CALL:
            run_many(db, full, batch)
            batch = []
    if batch:
        run_many(db, full, batch)


def _json_line_of(file: str, json_path: tuple) -> int | None:
    """The line of a value in a JSON file, for an error found after parsing (None if unreadable)."""
    try:
        return json_line(read_text(file), json_path)
    except (OSError, FormatError):
        return None


def import_topics(
    db: Store,
    file: str,
    conversations: Sequence[Conversation],
    *,
    collection: str | None = None,
    labels_source: str = "organizers",
) -> dict:
    """Store conversations, turns and PTKB; record each turn's ``ptkb_provenance`` as PTKB labels.

    For every turn, every statement of its conversation gets a label of source ``organizers``:
    relevant (1) if the topics file lists it in the turn's provenance, else not relevant (0).
    """
    stamp = now()
    existing = {r["id"]: r["collection"] for r in rows(db, "SELECT id, collection FROM conversations")}
    conv_rows, turn_rows, ptkb_rows, label_rows = [], [], [], []
    _check_parents(db, file, conversations)
    for index, conv in enumerate(conversations):
        coll = collection or (f"ikat-{conv.year}" if conv.year else None)
        if conv.id in existing and existing[conv.id] != coll:
            raise FormatError(
                file,
                _json_line_of(file, (index, "number")),
                f"conversation ids not used by "
                f"another collection ({conv.id} already belongs to {existing[conv.id]}; use a "
                f"separate --db)",
                coll,
            )
        conv_rows.append(
            {"id": conv.id, "number": conv.number, "title": conv.title, "collection": coll, "year": conv.year}
        )
        for key, text in conv.ptkb.items():
            ptkb_rows.append({"conversation_id": conv.id, "statement_id": key, "text": text})
        for position, t in enumerate(conv.turns):
            turn_rows.append(
                {
                    "id": t.id,
                    "conversation_id": conv.id,
                    "turn_number": t.turn_number,
                    "position": position,
                    "utterance": t.utterance,
                    "resolved_utterance": t.resolved_utterance,
                    "response": t.response,
                    "response_provenance": json.dumps(list(t.response_provenance)),
                    "parent_turn_id": t.parent_turn_id,
                }
            )
            relevant = set(t.relevant_ptkb)
            for key in conv.ptkb:
                label_rows.append((labels_source, t.id, conv.id, key, int(key in relevant), stamp))
    with write(db):
        run_many(
            db,
            "INSERT INTO conversations (id, number, title, collection, year) "
            "VALUES (:id, :number, :title, :collection, :year) "
            "ON CONFLICT(id) DO UPDATE SET number=excluded.number, title=excluded.title, "
            "collection=excluded.collection, year=excluded.year",
            conv_rows,
        )
        run_many(
            db,
            "INSERT INTO ptkb_statements (conversation_id, statement_id, text) "
            "VALUES (:conversation_id, :statement_id, :text) "
            "ON CONFLICT (conversation_id, statement_id) DO UPDATE SET text=excluded.text",
            ptkb_rows,
        )
        # Parents first would matter only for CAsT trees: the FK check waits for every turn.
        with _foreign_keys_deferred(db):
            run_many(
                db,
                "INSERT INTO turns (id, conversation_id, turn_number, position, utterance, resolved_utterance, "
                "response, response_provenance, parent_turn_id) VALUES (:id, :conversation_id, :turn_number, "
                ":position, :utterance, :resolved_utterance, :response, :response_provenance, :parent_turn_id) "
                "ON CONFLICT(id) DO UPDATE SET conversation_id=excluded.conversation_id, "
                "turn_number=excluded.turn_number, position=excluded.position, utterance=excluded.utterance, "
                "resolved_utterance=excluded.resolved_utterance, response=excluded.response, "
                "response_provenance=excluded.response_provenance, parent_turn_id=excluded.parent_turn_id",
                turn_rows,
            )
        ensure_source(db, labels_source, "organizers", description="ptkb_provenance of the topics file")
        _upsert_ptkb_labels(db, label_rows, mode="import")
        bump_topics_version(db)  # judging pages re-read the conversations they cached
    return {
        "conversations": len(conv_rows),
        "turns": len(turn_rows),
        "ptkb_statements": len(ptkb_rows),
        "ptkb_labels": len(label_rows),
    }


def _check_parents(db: Store, file: str, conversations: Sequence[Conversation]) -> None:
    """Every parent turn (CAsT trees) is a turn of the file or of the store; else the file's line of it."""
    given = {t.id for conv in conversations for t in conv.turns}
    known: set[str] | None = None
    for index, conv in enumerate(conversations):
        for position, t in enumerate(conv.turns):
            if t.parent_turn_id is None or t.parent_turn_id in given:
                continue
            known = _known_turns(db) if known is None else known
            if t.parent_turn_id not in known:
                turns_key = "responses" if conv.year == 2025 else "turns"
                raise FormatError(
                    file,
                    _json_line_of(file, (index, turns_key, position, "parent")),
                    "a parent turn given in the file or already stored",
                    f"turn {t.parent_turn_id!r}, which is neither",
                )


_PTKB_LABEL = ("source", "turn_id", "conversation_id", "statement_id", "value", "updated_at")


def _upsert_ptkb_labels(db: Store, labels, *, mode: str) -> None:
    """``labels``: tuples (source, turn, conversation, statement, value, stamp)."""
    table, col = _PTKB.table, _PTKB.value_column
    run_many(
        db,
        f"INSERT INTO {table} (source, turn_id, conversation_id, statement_id, {col}, mode, updated_at) "
        "VALUES (:source, :turn_id, :conversation_id, :statement_id, :value, :mode, :updated_at) "
        f"ON CONFLICT({', '.join(_PTKB.conflict_columns)}) DO UPDATE SET "
        f"{col}=excluded.{col}, updated_at=excluded.updated_at WHERE {table}.{col} IS DISTINCT FROM excluded.{col}",
        (d | {"mode": mode} for d in _dicts(_PTKB_LABEL, labels)),
    )


def _ensure_passages(db: Store, passage_ids: Iterable[str]) -> None:
    """Create the passages (id only, no text) that the store does not have yet (in id order, which
    keeps the B-tree inserts local; no set of every stored id is built, as a block of a large file
    would then pay for the whole table)."""
    _insert_rows(
        db,
        "INSERT INTO passages (id, doc_id)",
        ("?", "?"),
        " ON CONFLICT(id) DO NOTHING",
        ((p, p.rsplit(":", 1)[0]) for p in sorted(set(passage_ids))),
    )


# A source's first import of a file is one history event: item '*', new_value the number of labels,
# via 'bulk' (the label rows themselves carry via NULL, as every imported label does). Each label's
# imported value stays recoverable: it is the old_value of the item's first
# later history row, or its current value if it never changed (store.review.item_history does this).
BULK_EVENT = (
    "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
    "VALUES (:label_table, :source, '*', NULL, :count, 'import', 'bulk', :at)"
)


@contextlib.contextmanager
def _history_trigger_off(db: Store, table: str) -> Iterator[None]:
    """Inside a write transaction: no history row per inserted label for the block. SQLite: drop the
    table's insert-history trigger, then re-create it from its own stored SQL (schema changes are
    transactional, so no other connection ever sees the table without it, and a failure rolls the
    drop back). PostgreSQL: the trigger skips the table named in a transaction-local setting (no
    lock, so readers carry on during the import)."""
    if not db.sqlite:
        from store.schema.postgres import history_insert_trigger

        run(db, history_insert_trigger(table, enabled=False))
        yield
        run(db, history_insert_trigger(table, enabled=True))
        return
    name = f"{table}_history_insert"
    sql = value(db, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = :name", {"name": name})
    run(db, f"DROP TRIGGER {name}")
    yield
    run(db, sql)


@contextlib.contextmanager
def _foreign_keys_deferred(db: Store) -> Iterator[None]:
    """Inside a write transaction: check the foreign keys of the block's rows at its end, not at
    each row (SQLite: at commit, as its pragma lasts to the end of the transaction)."""
    if db.sqlite:
        run(db, "PRAGMA defer_foreign_keys = ON")
        yield
        return
    run(db, "SET CONSTRAINTS ALL DEFERRED")
    yield
    run(db, "SET CONSTRAINTS ALL IMMEDIATE")


def import_passage_qrels(
    db: Store, file: str, qrels: Sequence[Qrel] | Iterable[Sequence[Qrel]], *, source: str, add_to_pool: bool = True
) -> dict:
    """Store passage judgments of ``source`` (grades as given); the judged pairs join the pool.

    ``qrels`` is a list of records or an iterable of lists (blocks, e.g. a
    :class:`~assess.formats.trec.QrelsStream`): the blocks are written one after another inside the
    one transaction, so memory is bounded by a block whatever the file's size; a FormatError raised
    while iterating (a bad line, an item repeated with another grade) rolls everything back.

    Speed matters here (a year's qrels are 20,000–50,000 lines), so the import is shaped around
    SQLite's costs: every reference (turn, passage, source) is checked or created here under the
    write lock, which lets the transaction skip SQLite's per-row foreign-key lookups; constants
    are bound once per statement of many rows, not per row; and a source's first import is one
    event in the history (see :data:`BULK_EVENT`) rather than one history row per label. Later
    imports of the same source upsert row by row, so the history triggers record each real change
    with its old value.
    """
    blocks = [qrels] if isinstance(qrels, Sequence) else qrels
    stamp = now()
    table, grade = _PASSAGE.table, _PASSAGE.value_column
    head = f"INSERT INTO {table} (source, turn_id, passage_id, {grade}, mode, via, updated_at)"
    cells = (":source", "?", "?", "?", "'import'", "NULL", ":stamp")  # turn, passage, grade
    conflict = f" ON CONFLICT({', '.join(_PASSAGE.conflict_columns)}) "
    turns: set[str] = set()
    count = 0
    with paused_gc(), write(db, references_checked=True):
        known = _known_turns(db)
        ensure_source(db, source)
        # First means the source has never had a passage label (none now, none in the history), so a
        # source has at most one bulk event and every label's trail can be rebuilt from it.
        first = value(
            db,
            f"SELECT NOT EXISTS (SELECT 1 FROM {table} WHERE source = :source) AND NOT EXISTS "
            "(SELECT 1 FROM label_history WHERE source = :source AND label_table = :label_table) AS first",
            {"source": source, "label_table": _PASSAGE.task.value},
        )
        if first:
            # a repeat across blocks is the same grade (the reader refuses any other): kept once
            tail = conflict + "DO NOTHING"
        else:  # (a block never repeats an item: no row is updated twice by one statement)
            tail = (
                conflict + f"DO UPDATE SET {grade}=excluded.{grade}, via=excluded.via, "
                f"updated_at=excluded.updated_at WHERE {table}.{grade} IS DISTINCT FROM excluded.{grade}"
            )
        with _history_trigger_off(db, table) if first else contextlib.nullcontext():
            for block in blocks:
                turns |= _check_turns(db, file, block, known)
                _ensure_passages(db, map(itemgetter(1), block))
                # File order (qrels files are grouped by turn): sorting was measured to cost more than it saves.
                _insert_rows(db, head, cells, tail, map(itemgetter(0, 1, 2), block), {"source": source, "stamp": stamp})
                count += len(block)
        count = getattr(qrels, "count", count) or count
        if first and count:
            run(
                db, BULK_EVENT, {"label_table": _PASSAGE.task.value, "source": source, "count": str(count), "at": stamp}
            )
        if add_to_pool:
            run(
                db,
                "INSERT INTO pool (turn_id, passage_id, method, detail, added_at) "
                f"SELECT turn_id, passage_id, 'qrels', :detail, :at FROM {table} WHERE source = :source "
                "ON CONFLICT DO NOTHING",
                {"detail": f"qrels:{source}", "at": stamp, "source": source},
            )
    return {"labels": count, "turns": len(turns), "source": source}


def import_ptkb_qrels(db: Store, file: str, qrels: Sequence[Qrel], *, source: str) -> dict:
    """Store PTKB statement labels of ``source``; every statement must belong to the turn's conversation."""
    conv_of = {r["id"]: r["conversation_id"] for r in rows(db, "SELECT id, conversation_id FROM turns")}
    statements = {
        (r["conversation_id"], r["statement_id"])
        for r in rows(db, "SELECT conversation_id, statement_id FROM ptkb_statements")
    }
    _check_turns(db, file, qrels)
    for q in qrels:
        if (conv_of[q.turn_id], q.item_id) not in statements:
            raise FormatError(
                file, q.line, f"a PTKB statement number of conversation {conv_of[q.turn_id]}", repr(q.item_id)
            )
    stamp = now()
    with write(db):
        ensure_source(db, source)
        _upsert_ptkb_labels(
            db, [(source, q.turn_id, conv_of[q.turn_id], q.item_id, q.grade, stamp) for q in qrels], mode="import"
        )
    return {"labels": len(qrels), "relevant": sum(q.grade > 0 for q in qrels), "source": source}


def import_run(
    db: Store,
    file: str,
    rows: Sequence[RunRow] | Iterable[Sequence[RunRow]],
    *,
    name: str | None = None,
    depth: int = 10,
    pool_filter=None,
) -> dict:
    """Store a TREC run's rankings and add its top ``depth`` passages per turn to the pool (0: no pooling).

    Each pool row records how it entered: method 'depth', the best rank over runs, and in ``detail``
    every run that brought it with its rank (``bm25@7 dense@2``).

    ``pool_filter(turn_id, passage_id, rank) -> bool`` is the hook for adaptive pooling: when given,
    a passage below the always-pooled ranks enters only if it returns True.

    ``rows`` is a list of records or an iterable of lists (blocks, e.g. a
    :class:`~assess.formats.trec.RunStream`), so memory stays bounded whatever the file's size: the
    blocks are appended to a temporary table; once the file has been read, one SQL statement ranks
    every (run, turn) as :func:`~assess.formats.trec.rank_run` does (score desc, then passage id
    desc) into ``rankings``, whose primary key refuses a passage given twice for a turn (the error
    names the line that repeats and the line it repeats); the pool is read from the top ``depth``
    of each ranking, rankings in the order they first appear in the file. What stays in memory is
    one block, SQLite's page cache and sorter (bounded by the cache size; sorts and the temporary
    table spill to temporary files) and one entry per (run, turn). Errors come as if the file had
    been read whole first: a bad line or a repeat, whichever comes first, then an unknown turn.
    """
    blocks = [rows] if isinstance(rows, Sequence) else rows
    stamp = now()
    groups: dict[tuple[str, str], None] = {}  # (run, turn) in the order of their first line
    count = 0
    unknown_turn: FormatError | None = None
    with paused_gc(), _sorts_on_disk(db), write(db, references_checked=True):
        run(db, "DROP TABLE IF EXISTS run_lines")
        run(
            db,
            # ties in score are broken by passage id, compared by code point on both engines (the store's
            # own tables have PostgreSQL's C collation; a temporary table gets it here)
            "CREATE TEMP TABLE run_lines (run {t}, turn_id {t}, passage_id {t}, score DOUBLE PRECISION, line INTEGER)".format(
                t="TEXT" if db.sqlite else 'TEXT COLLATE "C"'
            ),
        )
        known = _known_turns(db)
        # the RunRow fields as they come (a --name is bound once per statement)
        if name:
            staging = "INSERT INTO run_lines (turn_id, passage_id, score, line, run)"
            fields, cells = itemgetter(0, 1, 3, 5), ("?", "?", "?", "?", ":name")  # turn, passage, score, line
        else:
            staging = "INSERT INTO run_lines (turn_id, passage_id, score, run, line)"
            fields, cells = itemgetter(0, 1, 3, 4, 5), ("?", "?", "?", "?", "?")  # turn, passage, score, tag, line
        try:
            for block in blocks:
                if unknown_turn is None:
                    try:
                        _check_turns(db, file, block, known)
                    except FormatError as exc:  # reported once the file has been read: bad lines come first
                        unknown_turn = exc
                if unknown_turn is None:  # else the file is read on only for a bad line or repeat, which come first
                    tags = itertools.repeat(name) if name else map(attrgetter("tag"), block)
                    groups.update(dict.fromkeys(zip(tags, map(attrgetter("turn_id"), block))))
                    _ensure_passages(db, map(attrgetter("passage_id"), block))
                _insert_rows(db, staging, cells, "", map(fields, block), {"name": name} if name else None)
                count += len(block)
        except FormatError:
            _refuse_repeat(db, file)  # a repeat before the bad line goes first
            raise
        if unknown_turn is not None:
            _refuse_repeat(db, file)
            raise unknown_turn
        tags = sorted({tag for tag, _turn in groups})
        for tag in tags:
            run(
                db,
                "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'ranking', :file, :at) "
                "ON CONFLICT(name) DO UPDATE SET file=excluded.file, imported_at=excluded.imported_at",
                {"name": tag, "file": str(file), "at": stamp},
            )
            run(db, "DELETE FROM rankings WHERE run = :run", {"run": tag})
        try:
            with write(db):  # a savepoint: after a refused insert, PostgreSQL's transaction can go on
                run(
                    db,
                    "INSERT INTO rankings (run, turn_id, passage_id, rank, score) "
                    "SELECT run, turn_id, passage_id, ROW_NUMBER() OVER "
                    "(PARTITION BY run, turn_id ORDER BY score DESC, passage_id DESC), score FROM run_lines",
                )
        except Exception as exc:
            if is_database_error(exc):  # the primary key: a passage given twice for a turn
                _refuse_repeat(db, file)
            raise
        run(db, "DROP TABLE run_lines")
        pool_rows = _DepthPool(db, groups, depth, pool_filter, stamp)
        run_many(
            db,
            # detail lists every run that brought the passage, as 'run@rank' (the pool's provenance)
            "INSERT INTO pool (turn_id, passage_id, method, detail, best_rank, added_at) "
            "VALUES (:turn_id, :passage_id, 'depth', :detail, :best_rank, :added_at) "
            "ON CONFLICT(turn_id, passage_id) DO UPDATE SET "
            "best_rank = CASE WHEN excluded.best_rank IS NULL THEN NULL WHEN pool.best_rank IS NULL "
            "OR excluded.best_rank < pool.best_rank THEN excluded.best_rank ELSE pool.best_rank END, "
            "detail = CASE WHEN pool.detail IS NULL THEN excluded.detail "
            "WHEN replace(' ' || pool.detail || ' ', ' ' || excluded.detail || ' ', '') "
            "<> ' ' || pool.detail || ' ' THEN pool.detail "
            "ELSE pool.detail || ' ' || excluded.detail END",
            pool_rows,
        )
    return {"runs": tags, "rankings": count, "pooled": pool_rows.count, "depth": depth}


@contextlib.contextmanager
def _sorts_on_disk(db: Store) -> Iterator[None]:
    """Temporary tables and sorts in temporary files for the block. The store runs with
    ``temp_store = MEMORY``, under which SQLite keeps both wholly in memory (a 200 MB run would
    need gigabytes); with files they keep at most about the page cache's size in memory. SQLite
    cannot change the setting inside a transaction once a temporary table exists, so an import
    nested in an outer transaction (the demo, which is small) leaves it as it is."""
    if db.depth or not db.sqlite:  # PostgreSQL spills large sorts to disk by itself
        yield
        return
    before = value(db, "PRAGMA temp_store")
    run(db, "PRAGMA temp_store = FILE")
    try:
        yield
    finally:
        run(db, f"PRAGMA temp_store = {int(before)}")


def _refuse_repeat(db: Store, file: str) -> None:
    """If the lines read so far (``run_lines``) give a (run, turn, passage) twice: the error
    for the first line that repeats an earlier one. On the error path only (it builds an index)."""
    run(db, "CREATE INDEX run_lines_key ON run_lines (run, turn_id, passage_id, line)")
    repeat = row(
        db,
        "SELECT later.line AS line, later.turn_id AS turn_id, later.passage_id AS passage_id, "
        "later.score AS score, later.run AS run, MIN(earlier.line) AS first "
        "FROM run_lines AS later JOIN run_lines AS earlier ON earlier.run = later.run "
        "AND earlier.turn_id = later.turn_id AND earlier.passage_id = later.passage_id AND earlier.line < later.line "
        "GROUP BY later.line, later.turn_id, later.passage_id, later.score, later.run ORDER BY later.line LIMIT 1",
    )
    if repeat is not None:
        r = RunRow(repeat["turn_id"], repeat["passage_id"], 0, repeat["score"], repeat["run"], repeat["line"])
        raise repeated_run_line(file, r, repeat["first"])


class _DepthPool:
    """The pool rows of the top ``depth`` of each ranking, rankings in the order of ``groups``
    (their first lines in the file) and ranks in order within each, so that ``detail`` lists the
    runs as the file did; ``count`` is the number of rows given once iterated."""

    def __init__(self, db: Store, groups: Iterable[tuple[str, str]], depth: int, pool_filter, stamp: str):
        self.db, self.groups, self.depth, self.pool_filter, self.stamp = db, groups, depth, pool_filter, stamp
        self.count = 0

    def __iter__(self) -> Iterator[dict]:
        if self.depth <= 0:
            return
        keep = self.pool_filter
        for tag, turn in self.groups:
            for r in each(
                self.db,
                "SELECT passage_id, rank FROM rankings WHERE run = :run AND turn_id = :turn AND rank <= :depth "
                "ORDER BY rank",
                {"run": tag, "turn": turn, "depth": self.depth},
            ):
                if keep is None or keep(turn, r["passage_id"], r["rank"]):
                    self.count += 1
                    yield {
                        "turn_id": turn,
                        "passage_id": r["passage_id"],
                        "detail": f"{tag}@{r['rank']}",
                        "best_rank": r["rank"],
                        "added_at": self.stamp,
                    }


def import_passages(db: Store, file: str, passages: Sequence[PassageText] | Iterable[Sequence[PassageText]]) -> dict:
    """Store passage texts (new passages are created; a text given again replaces the old one).

    ``passages`` is a list or an iterable of lists (a :class:`~assess.formats.trec.PassageStream`),
    written block by block inside the one transaction.
    """
    blocks = [passages] if isinstance(passages, Sequence) else passages
    count = 0
    with write(db):
        for block in blocks:
            run_many(
                db,
                "INSERT INTO passages (id, doc_id, text) VALUES (:id, :doc_id, :text) ON CONFLICT(id) DO UPDATE SET "
                "text=excluded.text, doc_id=COALESCE(excluded.doc_id, passages.doc_id)",
                _dicts(("id", "doc_id", "text"), block),
            )
            count += len(block)
    return {"passages": count}


def import_nuggets(db: Store, file: str, nuggets: Sequence[NuggetRecord], *, source: str, dedup: bool = False) -> dict:
    """Store gold nuggets (text only, as the public CONE-RAG files have no offsets).

    ``dedup=True`` reads the file as the de-duplicated subset of ``source``: its keys are marked
    kept (``in_dedup = 1``), the source's other nuggets of those turns dropped (0). Nuggets absent
    from the store are created.
    """
    _check_turns(db, file, nuggets)
    stamp = now()
    with write(db):
        ensure_source(db, source)
        run_many(
            db,
            "INSERT INTO nuggets (source, turn_id, key, text, relevance, in_dedup, created_at) "
            "VALUES (:source, :turn_id, :key, :text, :relevance, :in_dedup, :created_at) "
            "ON CONFLICT(source, turn_id, key) DO UPDATE SET text=excluded.text, relevance=excluded.relevance",
            (
                {
                    "source": source,
                    "turn_id": n.turn_id,
                    "key": n.key,
                    "text": n.text,
                    "relevance": n.relevance,
                    "in_dedup": 1 if dedup else None,
                    "created_at": stamp,
                }
                for n in nuggets
            ),
        )
        if dedup:
            kept = defaultdict(set)
            for n in nuggets:
                kept[n.turn_id].add(n.key)
            stored = rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source", {"source": source})
            run_many(
                db,
                "UPDATE nuggets SET in_dedup = :in_dedup WHERE id = :id",
                [
                    {"in_dedup": int(r["key"] in kept.get(r["turn_id"], ())), "id": r["id"]}
                    for r in stored
                    if r["turn_id"] in kept or not kept
                ],
            )
    return {"nuggets": len(nuggets), "turns": len({n.turn_id for n in nuggets}), "source": source}


def import_responses(
    db: Store, file: str, responses: Sequence[ResponseRecord], *, gold_source: str | None = None
) -> dict:
    """Store system responses per run and turn; with ``gold_source``, store them as gold responses instead."""
    _check_turns(db, file, responses)
    stamp = now()
    with write(db):
        if gold_source:
            ensure_source(db, gold_source)
            run_many(
                db,
                "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) "
                "VALUES (:source, :turn_id, :text, :nuggets_used, :updated_at) "
                "ON CONFLICT (source, turn_id) DO UPDATE SET text=excluded.text, nuggets_used=excluded.nuggets_used, "
                "updated_at=excluded.updated_at",
                (
                    {
                        "source": gold_source,
                        "turn_id": r.turn_id,
                        "text": r.text,
                        "nuggets_used": json.dumps(list(r.nuggets_used or ())),
                        "updated_at": stamp,
                    }
                    for r in responses
                ),
            )
            return {"gold_responses": len(responses), "source": gold_source}
        _response_runs(db, {r.run for r in responses}, file, stamp)
        run_many(
            db,
            "INSERT INTO responses (run, turn_id, text) VALUES (:run, :turn_id, :text) "
            "ON CONFLICT (run, turn_id) DO UPDATE SET text=excluded.text",
            ({"run": r.run, "turn_id": r.turn_id, "text": r.text} for r in responses),
        )
    return {"responses": len(responses), "runs": len({r.run for r in responses})}


def import_ntr_labels(db: Store, file: str, labels: Sequence[NtrRecord], *, source: str, nugget_source: str) -> dict:
    """Store nugget-to-response labels; ``<k>`` names nugget ``[k]`` of ``nugget_source`` for that turn."""
    _check_turns(db, file, labels)
    nugget_ids = {
        (r["turn_id"], r["key"]): r["id"]
        for r in rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source", {"source": nugget_source})
    }
    batch = []
    stamp = now()
    for rec in labels:
        nid = nugget_ids.get((rec.turn_id, rec.nugget_key))
        if nid is None:
            raise FormatError(
                file,
                rec.line,
                f"a nugget {rec.nugget_key} of source {nugget_source!r} in turn "
                f"{rec.turn_id} (import the nuggets first)",
                "no such nugget",
            )
        batch.append(
            {
                "source": source,
                "nugget_id": nid,
                "run": rec.run,
                "turn_id": rec.turn_id,
                "value": rec.match,
                "batch": rec.batch,
                "updated_at": stamp,
            }
        )
    seen = {}
    for rec in labels:  # one value per (nugget, run) within the file
        key = (nugget_ids[(rec.turn_id, rec.nugget_key)], rec.run)
        if key in seen and seen[key][0] != rec.match:
            raise FormatError(
                file,
                rec.line,
                f"one label per nugget and run (line {seen[key][1]} says {seen[key][0]})",
                str(rec.match),
            )
        seen.setdefault(key, (rec.match, rec.line))
    table, match = _NTR.table, _NTR.value_column
    with write(db):
        ensure_source(db, source)
        _response_runs(db, {r.run for r in labels}, file, stamp)
        run_many(
            db,
            f"INSERT INTO {table} (source, nugget_id, run, turn_id, {match}, batch, mode, updated_at) "
            "VALUES (:source, :nugget_id, :run, :turn_id, :value, :batch, 'import', :updated_at) "
            f"ON CONFLICT({', '.join(_NTR.conflict_columns)}) DO UPDATE SET "
            f"{match}=excluded.{match}, batch=excluded.batch, updated_at=excluded.updated_at "
            f"WHERE {table}.{match} IS DISTINCT FROM excluded.{match}",
            batch,
        )
    return {"labels": len(batch), "yes": sum(rec.match for rec in labels), "source": source}


def _response_runs(db: Store, names: Iterable[str], file: str, stamp: str) -> None:
    """Register the response runs a file names (an existing run keeps its first file)."""
    for name in sorted(names):
        run(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'response', :file, :at) "
            "ON CONFLICT(name) DO NOTHING",
            {"name": name, "file": str(file), "at": stamp},
        )
