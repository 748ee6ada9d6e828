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
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

from assess.errors import FormatError
from assess.formats import (
    Conversation,
    PassageText,
    Qrel,
    RunRow,
    paused_gc,
    repeated_run_line,
)
from assess.formats.nuggets import entry_line, raw_entries, turn_line
from assess.formats.reading import json_path_line, short
from assess.tasks import LABEL_KINDS, Task
from store import outbox
from store.bulk import insert_rows
from store.db import Store, column, each, is_database_error, now, row, rows, run, run_many, write
from store.history import action_row, record_action
from store.labels import import_new_labels, import_staged_labels
from store.rights import check_writer
from store.screens import bump_topics_version
from store.sources import ensure_source
from store.staging import stage_block, staging

_PASSAGE, _PTKB, _NTR = (LABEL_KINDS[t] for t in (Task.PASSAGE, Task.PTKB, Task.NTR))


def known_turns(db: Store) -> set[str]:
    return set(column(db, "SELECT id FROM turns"))


def check_turns(
    db: Store, file: str, records: Sequence, known: set[str] | None = None, *, locate: Callable | None = None
) -> set[str]:
    """The records' turn ids, all present in the store; else a FormatError for the first record whose turn
    is not, naming its line (``rec.line``, or ``locate(rec)`` for records read without one: a JSON file)."""
    known = known_turns(db) if known is None else known
    turns = set(map(attrgetter("turn_id"), records))
    if not turns <= known:
        rec = next(r for r in records if r.turn_id not in known)
        hint = "import the topics first" if not known else f"e.g. {min(known)}"
        line = rec.line if rec.line is not None or locate is None else locate(rec)
        raise FormatError(file, line, f"a turn id present in the store ({hint})", repr(rec.turn_id))
    return turns


def turn_line_in(file: str) -> Callable:
    """``locate`` for :func:`check_turns` over a ``{turn id: {...}}`` JSON file (error path only)."""
    return lambda rec: turn_line(file, rec.turn_id)


def entry_line_in(file: str, turn_id: str, key: str) -> int | None:
    """The line of entry ``key`` of ``turn_id`` in a ``{turn id: {key: ...}}`` JSON file (error path only)."""
    found = raw_entries(file, turn_id, key)
    return entry_line(file, found[0]) if found else turn_line(file, turn_id)


# ------------------------------------------------------------------------------------- no silent rewrites
# An import that would change the stored text of a nugget, response, gold response or passage is refused
# (naming the file, the line, the item and the labels on it) unless replacing is asked for; then every
# changed text is one organizer action 'replace' in the history (old and new content, the labels on the
# item per task) and the summary counts them. The same text again is no change.

_ITEM_COLUMNS = {"nugget": ("nugget_id",), "response": ("run", "turn_id"), "passage": ("passage_id",)}


def labels_on(db: Store, what: str, items: Iterable) -> dict[Any, dict[str, int]]:
    """Per item, ``{task: count}`` of the labels that refer to it (tasks with none left out). ``what``:
    ``nugget`` (items: nugget ids), ``response`` (items: (run, turn)) or ``passage`` (items: passage ids).
    Every label kind whose item names the item counts, and also crowd answers (``crowd-answers``) on a
    nugget or response, and nugget spans (``nugget-spans``) in a passage."""
    wanted = set(items)
    out: dict[Any, dict[str, int]] = {item: {} for item in wanted}
    if not wanted:
        return out
    columns = _ITEM_COLUMNS[what]
    queries = [
        (str(kind.task), kind.table, columns) for kind in LABEL_KINDS.values() if set(columns) <= set(kind.item_columns)
    ]
    groups = []
    for task, table, cols in queries:
        names = ", ".join(cols)
        groups.append((task, f"SELECT {names}, COUNT(*) AS n FROM {table} GROUP BY {names}", cols))
    if what in ("nugget", "response"):
        names = ", ".join(f"i.{c}" for c in columns)
        groups.append(
            (
                "crowd-answers",
                f"SELECT {names}, COUNT(*) AS n FROM crowd_answers a JOIN crowd_items i ON i.id = a.item_id "
                f"GROUP BY {names}",
                columns,
            )
        )
    else:
        groups.append(
            (
                "nugget-spans",
                "SELECT passage_id, COUNT(*) AS n FROM nuggets WHERE passage_id IS NOT NULL GROUP BY passage_id",
                columns,
            )
        )
    for task, sql, cols in groups:
        for r in each(db, sql):
            item = r[cols[0]] if len(cols) == 1 else tuple(r[c] for c in cols)
            if item in wanted and r["n"]:
                out[item][task] = out[item].get(task, 0) + r["n"]
    return out


def _label_words(counts: dict[str, int]) -> str:
    if not counts:
        return "no labels on it"
    return (
        ", ".join(
            f"{n} {task.replace('-', ' ')}" if task in ("crowd-answers", "nugget-spans") else f"{n} {task} labels"
            for task, n in sorted(counts.items())
        )
        + " on it"
    )


def rewrite_refused(file: str, line: int | None, what: str, differs: str, labels: dict[str, int]) -> FormatError:
    return FormatError(
        file,
        line,
        f"the text stored for {what} ({_label_words(labels)}), or --replace to rewrite it",
        differs,
    )


def text_differs(new: str, old: str) -> str:
    return f"another text: {short(new, 40)} where {short(old, 40)} is stored"


class Replacements:
    """Replaced texts recorded block by block (one organizer action 'replace' each), summed for the summary."""

    def __init__(self, *, staged: bool = False) -> None:
        self.count = 0
        self.totals: dict[str, int] = {}
        self.staged = staged  # a staged import (store.responses): the rows wait in staged_history for its switch

    def record(self, db: Store, by: str | None, file: str, changes: Sequence[tuple[str, Any, dict, dict[str, int]]]):
        for seq, (item, old, new, labels) in enumerate(changes, start=self.count):
            if self.staged:
                params = action_row(by, "replace", item, old, {**new, "labels": labels}, via=Path(file).name)
                run(
                    db,
                    "INSERT INTO staged_history (seq, kind, source, item, old, new, via) "
                    "VALUES (:seq, :kind, :source, :item, :old, :new, :via)",
                    {**params, "seq": seq},
                )
            else:
                record_action(db, by, "replace", item, old, {**new, "labels": labels}, via=Path(file).name)
            for task, n in labels.items():
                self.totals[task] = self.totals.get(task, 0) + n
        self.count += len(changes)

    def summary(self, what: str) -> dict:
        out: dict = {"replaced": self.count, "labels_on_replaced": dict(sorted(self.totals.items()))}
        if self.totals:
            counts = ", ".join(f"{task} {n}" for task, n in sorted(self.totals.items()))
            out["warnings"] = [
                f"{self.count} {what} texts replaced; labels given on the old texts now sit on the new ones "
                f"(per task: {counts}); the history keeps the old texts (label_table 'replace')"
            ]
        return out


def record_replaced(
    db: Store, by: str | None, file: str, what: str, changes: Sequence[tuple[str, Any, dict, dict[str, int]]]
) -> dict:
    """Record each replaced text (item, old content, new content, labels on it) as an organizer action
    'replace'; the summary entries ``replaced`` and ``labels_on_replaced`` (per task) and a warning."""
    replacements = Replacements()
    replacements.record(db, by, file, changes)
    return replacements.summary(what)


def rows_in_chunks(db: Store, sql: str, params: dict, values: Iterable[str], size: int = 500) -> Iterator[dict]:
    """The rows of ``sql`` (holding ``{marks}`` where the list of ``values`` goes) for ``values``, asked
    ``size`` at a time."""
    values = sorted(set(values))
    for start in range(0, len(values), size):
        chunk = {f"c{i}": v for i, v in enumerate(values[start : start + size])}
        marks = ", ".join(f":{name}" for name in chunk)
        yield from rows(db, sql.format(marks=marks), {**params, **chunk})


def _dicts(keys: Sequence[str], records: Iterable[Sequence]) -> Iterator[dict]:
    """Records (tuples) as parameter dicts: field i under ``keys[i]``."""
    return map(dict, map(zip, itertools.repeat(keys), records))


def _json_line_of(file: str, json_path: tuple) -> int | None:
    """The line of a value in a JSON file, for an error found after parsing (None if unreadable). The
    file is read again one record at a time: only the record holding the value is parsed."""
    return json_path_line(file, json_path)


STAGED_PASSAGES = {"staged_passages": "id TEXT PRIMARY KEY, doc_id TEXT NOT NULL"}
"""The staging table of the passages an import names (by id only), for :func:`stage_passages`."""


TOPICS_PER_BLOCK = 200  # conversations staged per block of a topics import


def import_topics(
    db: Store,
    file: str,
    conversations: Iterable[Conversation],
    *,
    collection: str | None = None,
    labels_source: str = "organizers",
) -> dict:
    """Store conversations, turns and PTKB; record each turn's ``ptkb_provenance`` as PTKB labels.

    For every turn, every statement of its conversation gets a label of source ``organizers``:
    relevant (1) if the topics file lists it in the turn's provenance, else not relevant (0).

    ``conversations`` may be a list or an iterator (:func:`assess.formats.ikat.iter_topics`, which
    reads the file one conversation at a time): they are staged :data:`TOPICS_PER_BLOCK` at a time
    without the write lock (:func:`store.staging.staging`), so memory is bounded by a block whatever the
    file's size, then made visible in one switch. Bad input leaves the store unchanged: a FormatError
    raised while reading (a bad record) or while staging (a conversation of another collection, a parent
    turn that is neither in the file nor stored) comes before the switch; the switch checks the collections
    again (another import may have stored one meanwhile).
    """
    stamp = now()
    counts = dict.fromkeys(("conversations", "turns", "ptkb_statements", "ptkb_labels"), 0)
    with paused_gc(), staging(db, _TOPICS_STAGING, clustered=("staged_ptkb_labels",)):
        existing = {r["id"]: r["collection"] for r in rows(db, "SELECT id, collection FROM conversations")}
        numbered = enumerate(conversations)
        while block := list(itertools.islice(numbered, TOPICS_PER_BLOCK)):
            with stage_block(db):
                _stage_topics(db, file, block, existing, collection, counts)
        with stage_block(db):  # the store's turns and the file's, all staged by now
            _refuse_unknown_parents(db, file)
        with write(db, lock_to_commit=True), _foreign_keys_deferred(db):
            _refuse_other_collections(db, file)
            ensure_source(db, labels_source, "organizers", description="ptkb_provenance of the topics file")
            for sql in _TOPICS_SWITCH:
                run(db, sql)
            import_staged_labels(db, Task.PTKB, "staged_ptkb_labels", _STAGED_PTKB_LABEL, labels_source, stamp)
            bump_topics_version(db)  # judging pages re-read the conversations they cached
            outbox.import_finished(db, "topics", file, **counts)
    return counts


_TOPICS_STAGING = {
    # ``at``: the conversation's index in the file, for the line of an error found later
    "staged_conversations": "id TEXT PRIMARY KEY, number TEXT, title TEXT, collection TEXT, year INTEGER, "
    "at INTEGER NOT NULL",
    "staged_ptkb": "conversation_id TEXT NOT NULL, statement_id TEXT NOT NULL, text TEXT, "
    "PRIMARY KEY (conversation_id, statement_id)",
    "staged_turns": "id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, turn_number INTEGER, position INTEGER, "
    "utterance TEXT, resolved_utterance TEXT, response TEXT, response_provenance TEXT, parent_turn_id TEXT, "
    "at INTEGER NOT NULL, turns_key TEXT NOT NULL",
    "staged_ptkb_labels": "turn_id TEXT NOT NULL, conversation_id TEXT NOT NULL, statement_id TEXT NOT NULL, "
    "relevant INTEGER NOT NULL, PRIMARY KEY (turn_id, statement_id)",
}

# A conversation or turn given twice: the later one wins, as when each was written as it came.
_STAGED_TOPIC_ROWS = (
    "INSERT INTO staged_conversations (id, number, title, collection, year, at) "
    "VALUES (:id, :number, :title, :collection, :year, :at) ON CONFLICT (id) DO UPDATE SET number=excluded.number, "
    "title=excluded.title, collection=excluded.collection, year=excluded.year, at=excluded.at",
    "INSERT INTO staged_ptkb (conversation_id, statement_id, text) VALUES (:conversation_id, :statement_id, :text) "
    "ON CONFLICT (conversation_id, statement_id) DO UPDATE SET text=excluded.text",
    "INSERT INTO staged_turns (id, conversation_id, turn_number, position, utterance, resolved_utterance, response, "
    "response_provenance, parent_turn_id, at, turns_key) VALUES (:id, :conversation_id, :turn_number, :position, "
    ":utterance, :resolved_utterance, :response, :response_provenance, :parent_turn_id, :at, :turns_key) "
    "ON CONFLICT (id) DO UPDATE SET conversation_id=excluded.conversation_id, turn_number=excluded.turn_number, "
    "position=excluded.position, utterance=excluded.utterance, resolved_utterance=excluded.resolved_utterance, "
    "response=excluded.response, response_provenance=excluded.response_provenance, "
    "parent_turn_id=excluded.parent_turn_id, at=excluded.at, turns_key=excluded.turns_key",
    "INSERT INTO staged_ptkb_labels (turn_id, conversation_id, statement_id, relevant) "
    "VALUES (:turn_id, :conversation_id, :statement_id, :relevant) "
    "ON CONFLICT (turn_id, statement_id) DO UPDATE SET conversation_id=excluded.conversation_id, "
    "relevant=excluded.relevant",
)

# The switch ("WHERE true": SQLite reads an ON CONFLICT after a bare SELECT … FROM as a join's ON). Parents
# need not come first: the foreign keys are checked at the commit (deferred).
_TOPICS_SWITCH = (
    "INSERT INTO conversations (id, number, title, collection, year) "
    "SELECT id, number, title, collection, year FROM staged_conversations WHERE true ORDER BY id "
    "ON CONFLICT(id) DO UPDATE SET number=excluded.number, title=excluded.title, "
    "collection=excluded.collection, year=excluded.year",
    "INSERT INTO ptkb_statements (conversation_id, statement_id, text) "
    "SELECT conversation_id, statement_id, text FROM staged_ptkb WHERE true ORDER BY conversation_id, statement_id "
    "ON CONFLICT (conversation_id, statement_id) DO UPDATE SET text=excluded.text",
    "INSERT INTO turns (id, conversation_id, turn_number, position, utterance, resolved_utterance, "
    "response, response_provenance, parent_turn_id) SELECT id, conversation_id, turn_number, position, utterance, "
    "resolved_utterance, response, response_provenance, parent_turn_id FROM staged_turns WHERE true ORDER BY id "
    "ON CONFLICT(id) DO UPDATE SET conversation_id=excluded.conversation_id, "
    "turn_number=excluded.turn_number, position=excluded.position, utterance=excluded.utterance, "
    "resolved_utterance=excluded.resolved_utterance, response=excluded.response, "
    "response_provenance=excluded.response_provenance, parent_turn_id=excluded.parent_turn_id",
)


def _stage_topics(
    db: Store,
    file: str,
    block: Sequence[tuple[int, Conversation]],
    existing: dict[str, str | None],
    collection: str | None,
    counts: dict[str, int],
) -> None:
    """Stage one block of conversations (with their index in the file) for :func:`import_topics`."""
    conv_rows, turn_rows, ptkb_rows, label_rows = [], [], [], []
    for index, conv in block:
        coll = collection or (f"ikat-{conv.year}" if conv.year else None)
        if conv.id in existing and existing[conv.id] != coll:
            raise _other_collection(file, index, conv.id, existing[conv.id], coll)
        conv_rows.append(
            {
                "id": conv.id,
                "number": conv.number,
                "title": conv.title,
                "collection": coll,
                "year": conv.year,
                "at": index,
            }
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
                    "at": index,
                    "turns_key": "responses" if conv.year == 2025 else "turns",
                }
            )
            relevant = set(t.relevant_ptkb)
            for key in conv.ptkb:
                label_rows.append(
                    {"turn_id": t.id, "conversation_id": conv.id, "statement_id": key, "relevant": int(key in relevant)}
                )
    for sql, records in zip(_STAGED_TOPIC_ROWS, (conv_rows, ptkb_rows, turn_rows, label_rows), strict=True):
        run_many(db, sql, records)
    counts["conversations"] += len(conv_rows)
    counts["turns"] += len(turn_rows)
    counts["ptkb_statements"] += len(ptkb_rows)
    counts["ptkb_labels"] += len(label_rows)


def _other_collection(file: str, index: int, conv_id: str, stored: str | None, coll: str | None) -> FormatError:
    return FormatError(
        file,
        _json_line_of(file, (index, "number")),
        f"conversation ids not used by another collection ({conv_id} already belongs to {stored}; use a separate --db)",
        coll,
    )


def _refuse_unknown_parents(db: Store, file: str) -> None:
    """A parent turn that is neither staged nor stored: refused, naming the first such turn of the file."""
    found = row(
        db,
        "SELECT s.parent_turn_id AS parent, s.at AS at, s.position AS position, s.turns_key AS turns_key "
        "FROM staged_turns s WHERE s.parent_turn_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM staged_turns p WHERE p.id = s.parent_turn_id) "
        "AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = s.parent_turn_id) ORDER BY s.at, s.position LIMIT 1",
    )
    if found is not None:
        raise FormatError(
            file,
            _json_line_of(file, (found["at"], found["turns_key"], found["position"], "parent")),
            "a parent turn given in the file or already stored",
            f"turn {found['parent']!r}, which is neither",
        )


def _refuse_other_collections(db: Store, file: str) -> None:
    """In the switch: a conversation stored under another collection since the staging checked it."""
    found = row(
        db,
        "SELECT s.id AS id, s.at AS at, s.collection AS collection, c.collection AS stored "
        "FROM staged_conversations s JOIN conversations c ON c.id = s.id "
        "WHERE c.collection IS DISTINCT FROM s.collection ORDER BY s.at LIMIT 1",
    )
    if found is not None:
        raise _other_collection(file, found["at"], found["id"], found["stored"], found["collection"])


_STAGED_PTKB_LABEL = ("turn_id", "conversation_id", "statement_id", _PTKB.value_column)


def ensure_passages(db: Store, passage_ids: Iterable[str]) -> None:
    """Create the passages (id only, no text) that the store does not have yet (in id order, which
    keeps the B-tree inserts local; no set of every stored id is built, as a block of a large file
    would then pay for the whole table)."""
    insert_rows(
        db,
        "INSERT INTO passages (id, doc_id)",
        ("?", "?"),
        " ON CONFLICT(id) DO NOTHING",
        ((p, p.rsplit(":", 1)[0]) for p in sorted(set(passage_ids))),
    )


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
    event in the history (see :func:`store.labels.import_new_labels`) rather than one history row
    per label. Later imports of the same source upsert row by row, so the history triggers record
    each real change with its old value.
    """
    blocks = [qrels] if isinstance(qrels, Sequence) else qrels
    stamp = now()
    turns: set[str] = set()
    count = 0
    # staged (store.staging.staging): the blocks go to temporary tables without the write lock, one switch copies them
    with paused_gc(), staging(db, _QRELS_STAGING, clustered=_QRELS_STAGING):
        known = known_turns(db)
        for block in blocks:
            with stage_block(db):
                turns |= check_turns(db, file, block, known)
                stage_passages(db, map(itemgetter(1), block))
                # an item given twice has one grade (the reader refuses another): staged once
                insert_rows(
                    db,
                    "INSERT INTO staged_qrels (turn_id, passage_id, grade)",
                    ("?", "?", "?"),
                    " ON CONFLICT (turn_id, passage_id) DO NOTHING",
                    map(itemgetter(0, 1, 2), block),
                )
            count += len(block)
        count = getattr(qrels, "count", count) or count
        with write(db, references_checked=True, lock_to_commit=True):
            refuse_gone_turns(db, file, "staged_qrels")
            ensure_source(db, source)
            switch_passages(db)
            with import_new_labels(db, Task.PASSAGE, source, stamp) as new:
                new.write_staged("staged_qrels", "turn_id, passage_id, grade")
            new.record(count)
            if add_to_pool:
                run(
                    db,
                    "INSERT INTO pool (turn_id, passage_id, method, detail, added_at) "
                    f"SELECT turn_id, passage_id, 'qrels', :detail, :at FROM {_PASSAGE.table} WHERE source = :source "
                    "ON CONFLICT DO NOTHING",
                    {"detail": f"qrels:{source}", "at": stamp, "source": source},
                )
            outbox.import_finished(db, "qrels", file, source=source, labels=count, turns=len(turns))
    return {"labels": count, "turns": len(turns), "source": source}


_QRELS_STAGING = {
    "staged_qrels": "turn_id TEXT NOT NULL, passage_id TEXT NOT NULL, grade INTEGER NOT NULL, "
    "PRIMARY KEY (turn_id, passage_id)",
    **STAGED_PASSAGES,
}


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
    # staged (store.staging.staging): the lines, their ranks and new passages go to temporary tables block by block
    # without the write lock; one short switch copies them (docs/architecture.md, "Large imports")
    with paused_gc(), staging(db, _run_staging(db), clustered=("staged_rankings", "staged_passages")):
        known = known_turns(db)
        # the RunRow fields as they come (a --name is bound once per statement)
        if name:
            head = "INSERT INTO run_lines (turn_id, passage_id, score, line, run)"
            fields, cells = itemgetter(0, 1, 3, 5), ("?", "?", "?", "?", ":name")  # turn, passage, score, line
        else:
            head = "INSERT INTO run_lines (turn_id, passage_id, score, run, line)"
            fields, cells = itemgetter(0, 1, 3, 4, 5), ("?", "?", "?", "?", "?")  # turn, passage, score, tag, line
        try:
            for block in blocks:
                with stage_block(db):
                    if unknown_turn is None:
                        try:
                            check_turns(db, file, block, known)
                        except FormatError as exc:  # reported once the file has been read: bad lines come first
                            unknown_turn = exc
                    if unknown_turn is None:  # else the file is read on only for a bad line or repeat, which come first
                        tags = itertools.repeat(name) if name else map(attrgetter("tag"), block)
                        groups.update(dict.fromkeys(zip(tags, map(attrgetter("turn_id"), block))))
                        stage_passages(db, map(attrgetter("passage_id"), block))
                    insert_rows(db, head, cells, "", map(fields, block), {"name": name} if name else None)
                count += len(block)
        except FormatError:
            _refuse_repeat(db, file)  # a repeat before the bad line goes first
            raise
        if unknown_turn is not None:
            _refuse_repeat(db, file)
            raise unknown_turn
        tags = sorted({tag for tag, _turn in groups})
        try:  # ranked into a staging table whose key refuses a passage given twice for a turn
            with stage_block(db):
                run(
                    db,
                    "INSERT INTO staged_rankings (run, turn_id, passage_id, rank, score) "
                    "SELECT run, turn_id, passage_id, ROW_NUMBER() OVER "
                    "(PARTITION BY run, turn_id ORDER BY score DESC, passage_id DESC), score FROM run_lines",
                )
        except Exception as exc:
            if is_database_error(exc):
                _refuse_repeat(db, file)
            raise
        with stage_block(db):  # the pool's rows read (and pool_filter asked) before the lock
            pool_rows = list(_DepthPool(db, groups, depth, pool_filter, stamp))
        with write(db, references_checked=True, lock_to_commit=True):
            refuse_gone_turns(db, file, "staged_rankings")
            for tag in tags:
                run(
                    db,
                    "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'ranking', :file, :at) "
                    "ON CONFLICT(name) DO UPDATE SET file=excluded.file, imported_at=excluded.imported_at",
                    {"name": tag, "file": str(file), "at": stamp},
                )
                run(db, "DELETE FROM rankings WHERE run = :run", {"run": tag})
            switch_passages(db)
            run(
                db,
                "INSERT INTO rankings (run, turn_id, passage_id, rank, score) "
                "SELECT run, turn_id, passage_id, rank, score FROM staged_rankings ORDER BY run, turn_id, passage_id",
            )
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
            outbox.import_finished(db, "run", file, runs=list(tags), rankings=count, pooled=len(pool_rows))
    return {"runs": tags, "rankings": count, "pooled": len(pool_rows), "depth": depth}


def _run_staging(db: Store) -> dict[str, str]:
    """The staging tables of a run import. Ties in score are broken by passage id, compared by code point on
    both engines (the store's own tables have PostgreSQL's C collation; a temporary table gets it here)."""
    text = "TEXT" if db.sqlite else 'TEXT COLLATE "C"'
    return {
        "run_lines": f"run {text}, turn_id {text}, passage_id {text}, score DOUBLE PRECISION, line INTEGER",
        "staged_rankings": f"run {text} NOT NULL, turn_id {text} NOT NULL, passage_id {text} NOT NULL, "
        "rank INTEGER NOT NULL, score DOUBLE PRECISION NOT NULL, PRIMARY KEY (run, turn_id, passage_id)",
        **STAGED_PASSAGES,
    }


def stage_passages(db: Store, passage_ids: Iterable[str]) -> None:
    """:func:`ensure_passages` for a staged import: the ids go to ``staged_passages`` (:data:`STAGED_PASSAGES`),
    created in the store by :func:`switch_passages`."""
    insert_rows(
        db,
        "INSERT INTO staged_passages (id, doc_id)",
        ("?", "?"),
        " ON CONFLICT(id) DO NOTHING",
        ((p, p.rsplit(":", 1)[0]) for p in sorted(set(passage_ids))),
    )


def switch_passages(db: Store) -> None:
    """In the switch: the staged passages the store does not have yet, in id order. ("WHERE true": SQLite reads
    an ON CONFLICT after a bare SELECT … FROM as a join's ON.)"""
    run(
        db,
        "INSERT INTO passages (id, doc_id) SELECT id, doc_id FROM staged_passages WHERE true ORDER BY id "
        "ON CONFLICT (id) DO NOTHING",
    )


def refuse_gone_turns(db: Store, file: str, table: str) -> None:
    """In the switch: turns were checked while staging; one deleted since is refused here (SQLite's copy runs
    without its per-row foreign-key checks: write(references_checked=True))."""
    gone = row(
        db,
        f"SELECT s.turn_id AS turn_id FROM {table} s WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = s.turn_id) "
        "LIMIT 1",
    )
    if gone is not None:
        raise FormatError(file, None, "turns of the store", f"turn {gone['turn_id']!r}, deleted during the import")


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
                "SELECT passage_id, rank FROM staged_rankings WHERE run = :run AND turn_id = :turn AND rank <= :depth "
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


def import_passages(
    db: Store,
    file: str,
    passages: Sequence[PassageText] | Iterable[Sequence[PassageText]],
    *,
    replace: bool = False,
    by: str | None = None,
) -> dict:
    """Store passage texts (new passages are created; a passage stored without text gets it).

    A passage stored with another text is refused (a FormatError naming the line, the passage and the
    labels on it; nothing written) unless ``replace``: then the text is replaced and the change recorded
    (see :func:`labels_on`). ``passages`` is a list or an iterable of lists (a
    :class:`~assess.formats.trec.PassageStream`), written block by block inside the one transaction.
    """
    blocks = [passages] if isinstance(passages, Sequence) else passages
    count = 0
    replacements = Replacements(staged=True)
    # staged (store.staging.staging): texts compared and written to temporary tables without the write lock, one switch
    with staging(db, _PASSAGES_STAGING):
        # A store without any passage text (a first import) has nothing to compare: no lookups. The file
        # itself never gives one passage two texts (PassageStream refuses it), so its own blocks never clash.
        texts_stored = row(db, "SELECT 1 AS found FROM passages WHERE text IS NOT NULL LIMIT 1") is not None
        for block in blocks:
            with stage_block(db):
                stored = _stored_texts(db, [p.passage_id for p in block]) if texts_stored else {}
                changed: list[tuple[PassageText, str]] = []
                for p in block:
                    old = stored.get(p.passage_id)
                    if old is not None and old != p.text:
                        if not replace:
                            labels = labels_on(db, "passage", [p.passage_id])[p.passage_id]
                            what = f"passage {short(p.passage_id, 60)}"
                            raise rewrite_refused(file, p.line, what, text_differs(p.text, old), labels)
                        changed.append((p, old))
                insert_rows(  # a text stored already is not written again (an import of the same file writes nothing)
                    db,
                    "INSERT INTO staged_texts (id, doc_id, text)",
                    ("?", "?", "?"),
                    " ON CONFLICT (id) DO NOTHING",
                    (p[:3] for p in block if stored.get(p.passage_id) != p.text),
                )
                if changed:
                    on = labels_on(db, "passage", [p.passage_id for p, _ in changed])
                    changes = [
                        (f"passage {p.passage_id}", {"text": old}, {"text": p.text}, on[p.passage_id])
                        for p, old in changed
                    ]
                    replacements.record(db, by, file, changes)
            count += len(block)
        with write(db, lock_to_commit=True):
            run(
                db,
                "INSERT INTO passages (id, doc_id, text) SELECT id, doc_id, text FROM staged_texts WHERE true "
                "ORDER BY id ON CONFLICT(id) DO UPDATE SET text=excluded.text, "
                "doc_id=COALESCE(excluded.doc_id, passages.doc_id)",
            )
            switch_history(db, by)
            outbox.import_finished(db, "passages", file, passages=count)
    summary: dict = {"passages": count}
    if replace:
        summary.update(replacements.summary("passage"))
    return summary


STAGED_HISTORY = (
    "seq INTEGER NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL, item TEXT NOT NULL, old TEXT, new TEXT, "
    "via TEXT NOT NULL"
)
_PASSAGES_STAGING = {"staged_texts": "id TEXT PRIMARY KEY, doc_id TEXT, text TEXT", "staged_history": STAGED_HISTORY}


def switch_history(db: Store, who: str | None) -> None:
    """In a switch: the staged organizer actions (``staged_history``, :class:`Replacements` with ``staged``), in
    the order recorded; ``who``, named in them, is checked here (rights are checked at the write)."""
    if row(db, "SELECT 1 AS one FROM staged_history LIMIT 1"):
        check_writer(db, who, action="replace")
        run(
            db,
            "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
            "SELECT kind, source, item, old, new, NULL, via, :at FROM staged_history ORDER BY seq",
            {"at": now()},
        )


def record_replacements(
    db: Store, by: str | None, file: str, what: str, changed: Sequence[tuple], *, into: Replacements | None = None
) -> dict:
    """Record responses replaced by a response file (``what``: ``response``): ``changed`` holds (new, old)
    records with ``run``, ``turn_id``, ``text`` and ``cited``. One organizer action 'replace' each (old and
    new text and citations, the labels on the response); returns ``replaced``, ``labels_on_replaced`` and
    a warning when labels sit on them (as the other imports' replacements). With ``into`` (a file written
    block by block) they are added to it instead, whose :meth:`Replacements.summary` says that at the end."""
    on = labels_on(db, "response", [(new.run, new.turn_id) for new, _old in changed])
    changes = [
        (
            f"{what} {new.run} {new.turn_id}",
            {"text": old.text, "citations": list(old.cited)},
            {"text": new.text, "citations": list(new.cited)},
            on[(new.run, new.turn_id)],
        )
        for new, old in changed
    ]
    if into is not None:
        into.record(db, by, file, changes)
        return {}
    return record_replaced(db, by, file, what, changes)


def _stored_texts(db: Store, ids: Sequence[str]) -> dict[str, str]:
    """The stored texts of those of ``ids`` that have one."""
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        params = {f"p{i}": pid for i, pid in enumerate(chunk)}
        marks = ", ".join(f":{name}" for name in params)
        for r in rows(db, f"SELECT id, text FROM passages WHERE text IS NOT NULL AND id IN ({marks})", params):
            out[r["id"]] = r["text"]
    return out
