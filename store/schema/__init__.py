"""Schema migrations. Each entry is one SQL script; the file's PRAGMA user_version counts those applied.

Never edit a migration that has shipped: append a new one. The history triggers spell an item with the
registry's item key (:meth:`assess.tasks.ItemKey.sql`), the one codec the store and the services read items
with; ``tests/store/test_migrations.py`` pins every shipped script's text, so a codec that changed a shipped
trigger would fail there.
"""

from assess.tasks import ANNOTATION_KINDS, LABEL_KINDS, Task

_V1 = r"""
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,                 -- '0' (iKAT 2024), '9-1' (iKAT 2023), '1-1' (iKAT 2025)
    number TEXT NOT NULL,
    title TEXT,
    collection TEXT,                     -- 'ikat-2024', 'demo', ...
    year INTEGER
);

CREATE TABLE turns (
    id TEXT PRIMARY KEY,                 -- '0_8', '9-1_3'
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    turn_number INTEGER NOT NULL,
    position INTEGER NOT NULL,           -- order inside the conversation, 0-based
    utterance TEXT,
    resolved_utterance TEXT,
    response TEXT,                       -- the canonical response
    response_provenance TEXT,            -- JSON list of passage ids
    parent_turn_id TEXT REFERENCES turns(id)   -- CAsT 2022 conversation trees
);
CREATE INDEX turns_by_conversation ON turns(conversation_id, position);

CREATE TABLE ptkb_statements (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    statement_id TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (conversation_id, statement_id)
);

CREATE TABLE passages (
    id TEXT PRIMARY KEY,                 -- '<ClueWeb22 doc id>:<passage number>'
    doc_id TEXT,
    text TEXT                            -- NULL: text not available (ClueWeb22 licence)
);

CREATE TABLE runs (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'ranking' CHECK (kind IN ('ranking', 'response')),
    file TEXT,
    imported_at TEXT NOT NULL
);

CREATE TABLE rankings (
    run TEXT NOT NULL REFERENCES runs(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    rank INTEGER NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (run, turn_id, passage_id)
) WITHOUT ROWID;

CREATE TABLE responses (
    run TEXT NOT NULL REFERENCES runs(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    text TEXT NOT NULL,
    PRIMARY KEY (run, turn_id)
);

CREATE TABLE pool (
    turn_id TEXT NOT NULL REFERENCES turns(id),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    method TEXT NOT NULL CHECK (method IN ('depth', 'qrels', 'adaptive', 'manual')),
    detail TEXT,                         -- runs with ranks 'bm25@7 dense@2', 'qrels:nist', ...
    best_rank INTEGER,
    added_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, passage_id)
) WITHOUT ROWID;

CREATE TABLE sources (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('assessor', 'import', 'llm', 'adjudication', 'organizers', 'crowd')),
    model TEXT,
    prompt_version TEXT,
    description TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE passage_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    grade INTEGER CHECK (grade BETWEEN 0 AND 4),   -- NULL: 'cannot judge'
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',           -- blind | shown | import
    via TEXT,                                      -- ui (key or click) | undo | bulk | llm | click | NULL
    updated_at TEXT NOT NULL,
    -- One B-tree only: a source's labels are contiguous (bulk imports append in key order), and
    -- item-by-item lookups always name the source (they start from the few sources of a kind).
    PRIMARY KEY (source, turn_id, passage_id)
) WITHOUT ROWID;

CREATE TABLE ptkb_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    conversation_id TEXT NOT NULL,
    statement_id TEXT NOT NULL,
    relevant INTEGER NOT NULL CHECK (relevant BETWEEN 0 AND 4),
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, statement_id),
    FOREIGN KEY (conversation_id, statement_id) REFERENCES ptkb_statements(conversation_id, statement_id)
) WITHOUT ROWID;
CREATE INDEX ptkb_labels_by_turn ON ptkb_labels(turn_id, statement_id);

CREATE TABLE nuggets (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    key TEXT NOT NULL,                   -- '[3]' in the CONE-RAG files
    text TEXT NOT NULL,
    relevance INTEGER,
    passage_id TEXT REFERENCES passages(id),
    start_char INTEGER,
    end_char INTEGER,
    in_dedup INTEGER CHECK (in_dedup IN (0, 1)),   -- kept in the de-duplicated set? NULL: unknown
    created_at TEXT NOT NULL,
    UNIQUE (source, turn_id, key),
    CHECK ((start_char IS NULL AND end_char IS NULL)
           OR (passage_id IS NOT NULL AND start_char >= 0 AND end_char > start_char))
);

CREATE TABLE ntr_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    nugget_id INTEGER NOT NULL REFERENCES nuggets(id),
    run TEXT NOT NULL REFERENCES runs(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    match INTEGER NOT NULL CHECK (match IN (0, 1)),
    batch TEXT,
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, nugget_id, run)
) WITHOUT ROWID;

CREATE TABLE response_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    run TEXT NOT NULL REFERENCES runs(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    criterion TEXT NOT NULL,             -- relevance, completeness, naturalness, conciseness, groundedness
    value INTEGER NOT NULL CHECK (value BETWEEN -1 AND 4),   -- -1: unable to judge (iKAT 2023)
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, run, turn_id, criterion)
) WITHOUT ROWID;

CREATE TABLE gold_responses (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    text TEXT NOT NULL,
    nuggets_used TEXT,                   -- JSON list of nugget ids or texts
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id)
);

CREATE TABLE assignments (
    assessor TEXT NOT NULL,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    assigned_at TEXT NOT NULL,
    PRIMARY KEY (assessor, turn_id)
) WITHOUT ROWID;

-- Append-only history of every label change, written by triggers so no code path can skip it.
CREATE TABLE label_history (
    id INTEGER PRIMARY KEY,
    label_table TEXT NOT NULL,
    source TEXT NOT NULL,
    item TEXT NOT NULL,                  -- 'turn passage', 'turn statement', 'nugget run', ...
    old_value TEXT,                      -- NULL: no label before
    new_value TEXT,                      -- NULL: label removed (undo)
    mode TEXT,
    via TEXT,
    at TEXT NOT NULL
);

-- Key/value settings of the study (judging mode blind|shown, ...).
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE INDEX label_history_by_source ON label_history(source, at);

CREATE TRIGGER label_history_no_update BEFORE UPDATE ON label_history
BEGIN SELECT RAISE(ABORT, 'label_history is append-only'); END;
CREATE TRIGGER label_history_no_delete BEFORE DELETE ON label_history
BEGIN SELECT RAISE(ABORT, 'label_history is append-only'); END;
"""


def _item(task: Task) -> str:
    """The SQL of a label table's history item over the row ``X.`` (the registry's item key)."""
    return LABEL_KINDS[task].key.sql("X.")


def annotation_item(name: str) -> str:
    """The SQL of an annotation table's history item over the row ``X.`` (the registry's item key)."""
    key = ANNOTATION_KINDS[name].key
    if key is None:
        raise ValueError(f"the annotation {name!r} has no history")
    return key.sql("X.")


V1_HISTORY_TABLES = {  # label table: (history kind, item expression, value expression); X. is NEW. or OLD.
    "passage_labels": (
        "passage",
        _item(Task.PASSAGE),
        "COALESCE(CAST(X.grade AS TEXT), 'cannot-judge')",
    ),
    "ptkb_labels": ("ptkb", _item(Task.PTKB), "CAST(X.relevant AS TEXT)"),
    "ntr_labels": ("ntr", _item(Task.NTR), "CAST(X.match AS TEXT)"),
    "response_labels": ("response", _item(Task.RESPONSE), "CAST(X.value AS TEXT)"),
}
_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


def _history_triggers(
    table: str,
    kind: str,
    item: str,
    value: str,
    *,
    mode: str = "X.mode",
    via: str = "X.via",
    at: str = "X.updated_at",
    also_changed: str = " OR OLD.note IS NOT NEW.note",
    deleted_via: str = "'undo'",
    insert_when: str = "",
    extra: tuple[str, ...] = (),
) -> dict[str, str]:
    """The insert, update and delete triggers that append a table's changes to ``label_history``.

    ``item`` / ``value`` (and ``mode``, ``via``, ``at``) are SQL over the row written with ``X.``;
    an update is recorded only when the value changed (or ``also_changed`` holds). ``extra``: columns the
    insert and update events copy from the written row into the history's columns of the same names.
    Returns the three CREATE TRIGGER statements by event, so a migration can replace one of them.
    """

    def row(prefix: str, expr: str) -> str:
        return expr.replace("X.", prefix)

    deleted = "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at)"
    columns = deleted[:-1] + "".join(f", {c}" for c in extra) + ")"
    copied = "".join(f", NEW.{c}" for c in extra)
    old_value, new_value = row("OLD.", value), row("NEW.", value)
    changed = f"{old_value} IS NOT {new_value}{also_changed.replace('X.', 'NEW.')}"
    return {
        "insert": f"""
CREATE TRIGGER {table}_history_insert AFTER INSERT ON {table}{insert_when}
BEGIN
    {columns}
    VALUES ('{kind}', NEW.source, {row("NEW.", item)}, NULL, {new_value}, {row("NEW.", mode)}, {row("NEW.", via)},
            {row("NEW.", at)}{copied});
END;
""",
        "update": f"""
CREATE TRIGGER {table}_history_update AFTER UPDATE ON {table}
WHEN {changed}
BEGIN
    {columns}
    VALUES ('{kind}', NEW.source, {row("NEW.", item)}, {old_value}, {new_value}, {row("NEW.", mode)},
            {row("NEW.", via)}, {row("NEW.", at)}{copied});
END;
""",
        "delete": f"""
CREATE TRIGGER {table}_history_delete AFTER DELETE ON {table}
BEGIN
    {deleted}
    VALUES ('{kind}', OLD.source, {row("OLD.", item)}, {old_value}, NULL, {row("OLD.", mode)}, {deleted_via}, {_NOW});
END;
""",
    }


def _label_triggers(table: str, **options) -> dict[str, str]:
    return _history_triggers(table, *V1_HISTORY_TABLES[table], **options)


# (Schema 1 skipped inserts with via = 'bulk' in the trigger itself; from schema 5 on the bulk importer
# drops and restores the insert trigger inside its own transaction instead.)
for _table in V1_HISTORY_TABLES:
    _V1 += "".join(_label_triggers(_table, insert_when="\nWHEN NEW.via IS NOT 'bulk'").values())

# Schema 5: faster bulk imports.
# - The pool's CHECK on `method` is written as comparisons: SQLite 3.40 evaluates a CHECK with an
#   IN list by building a temporary table for every inserted row, which tripled the cost of pooling.
# - A bulk import is one history event (via 'bulk'); its label rows say via NULL like other imported
#   labels (so later changes of them are never mistaken for bulk rows), and the history index covers
#   (source, label_table), which every reader of the history names.
# - Every insert trigger fires unconditionally (a bulk import drops it within its own transaction).
_V5_HISTORY = """
CREATE TABLE pool_v5 (
    turn_id TEXT NOT NULL REFERENCES turns(id),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    method TEXT NOT NULL CHECK (method = 'depth' OR method = 'qrels' OR method = 'adaptive' OR method = 'manual'),
    detail TEXT,                         -- runs with ranks 'bm25@7 dense@2', 'qrels:nist', ...
    best_rank INTEGER,
    added_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, passage_id)
) WITHOUT ROWID;
INSERT INTO pool_v5 (turn_id, passage_id, method, detail, best_rank, added_at)
    SELECT turn_id, passage_id, method, detail, best_rank, added_at FROM pool;
DROP TABLE pool;
ALTER TABLE pool_v5 RENAME TO pool;
DROP INDEX label_history_by_source;
CREATE INDEX label_history_by_source ON label_history(source, label_table);
UPDATE passage_labels SET via = NULL WHERE via = 'bulk';
""" + "".join(f"DROP TRIGGER {t}_history_insert;\n{_label_triggers(t)['insert']}" for t in V1_HISTORY_TABLES)

# Schema 6: nuggets, duplicate decisions and gold responses are annotations too: their changes join the
# append-only history (values as JSON where a row has several fields), so an edited or deleted nugget
# keeps its old text and span.
_ANNOTATION = {"mode": "NULL", "also_changed": "", "deleted_via": "'delete'"}
_V6_ANNOTATIONS = "".join(
    "".join(triggers.values())
    for triggers in (
        _history_triggers(
            "nuggets",
            "nugget",
            annotation_item("nugget"),
            "json_object('text', X.text, 'relevance', X.relevance, 'passage_id', X.passage_id, "
            "'start', X.start_char, 'end', X.end_char)",
            via="X.span_method",
            at=_NOW,
            **_ANNOTATION,
        ),
        _history_triggers(
            "nugget_duplicates",
            "nugget-duplicate",
            annotation_item("nugget-duplicate"),
            "X.decision",
            via="X.decided_by",
            insert_when="\nWHEN NEW.decision IS NOT NULL",
            **_ANNOTATION,
        ),
        _history_triggers(
            "gold_responses",
            "gold-response",
            annotation_item("gold-response"),
            "json_object('text', X.text, 'nuggets_used', X.nuggets_used)",
            via="NULL",
            **_ANNOTATION,
        ),
    )
)

from store.schema.accounts import MIGRATION as _V8_ACCOUNTS  # noqa: E402  (accounts, roles, failed sign-ins)
from store.schema.active_time import MIGRATION as _ACTIVE_TIME_COLUMNS  # noqa: E402  (active time, guidelines)
from store.schema.active_time import TIMED_COLUMNS, TIMED_TABLES  # noqa: E402
from store.schema.adaptive_overlap import MIGRATION as _ADAPTIVE_OVERLAP  # noqa: E402  (adaptive overlap, roster)
from store.schema.battle_features import MIGRATION as _BATTLE_FEATURES  # noqa: E402  (imported battles' features)
from store.schema.battles import MIGRATION as _V15_TABLES  # noqa: E402  (side-by-side battles, battle plans)
from store.schema.citation_cannot_judge import MIGRATION as _V14_TABLE  # noqa: E402  (citation 'cannot judge')
from store.schema.citation_contradicts import MIGRATION as _CONTRADICTS_TABLE  # noqa: E402  (citation 'contradicts')
from store.schema.crowd import MIGRATION as _V3_CROWD  # noqa: E402  (crowd studies, batches, workers)
from store.schema.crowd_bindings import MIGRATION as _V12_CROWD_BINDINGS  # noqa: E402  (worker ids bound to a browser)
from store.schema.endpoints import MIGRATION as _V16_ENDPOINTS  # noqa: E402  (figures per endpoint of a job)
from store.schema.history_guard import MIGRATION as _V7_HISTORY_GUARD  # noqa: E402  (no INSERT OR REPLACE)
from store.schema.http_api import MIGRATION as _HTTP_API  # noqa: E402  (API tokens, webhooks)
from store.schema.job_leases import MIGRATION as _JOB_LEASES  # noqa: E402  (shared jobs: workers, leased blocks, items)
from store.schema.llm import MIGRATION as _V2_LLM  # noqa: E402  (LLM pre-judgments, jobs)
from store.schema.nugget_banks import MIGRATION as _V_BANK_TABLES  # noqa: E402  (RAGTIME banks, DRAGUN rubrics)
from store.schema.nugget_banks import PREJUDGMENTS as _V_BANK_PREJUDGMENTS  # noqa: E402
from store.schema.nuggets import MIGRATION as _V4_NUGGETS  # noqa: E402  (duplicates, response nuggets, aspects)
from store.schema.overlap import MIGRATION as _V18_OVERLAP  # noqa: E402  (re-shown items, planned overlap)
from store.schema.provider_batches import MIGRATION as _PROVIDER_BATCHES  # noqa: E402  (batch API jobs)
from store.schema.rag_audit import MIGRATION as _V9_TABLES  # noqa: E402  (cited responses, new labels, audit)
from store.schema.response_files import MIGRATION as _V10_RESPONSE_FILES  # noqa: E402  (repeated citations, layouts)
from store.schema.roles import MIGRATION as _V13_ROLES  # noqa: E402  (PostgreSQL: owner and app roles; nothing here)
from store.schema.sessions import MIGRATION as _V11_SESSIONS  # noqa: E402  (sessions, single-use links)
from store.schema.sign_in_pending import MIGRATION as _SIGN_IN_PENDING  # noqa: E402  (attempts in flight)
from store.schema.webhook_events import MIGRATION as _WEBHOOK_EVENTS  # noqa: E402  (webhook outbox)

# Schema 9: the label tables it adds, with history triggers as the others have (insert triggers unconditional,
# as from schema 5 on).
V9_HISTORY_TABLES = {
    "ntr_support_labels": ("ntr-support", _item(Task.NTR_SUPPORT), "CAST(X.support AS TEXT)"),
    "nugget_importance_labels": ("importance", _item(Task.IMPORTANCE), "CAST(X.importance AS TEXT)"),
    "citation_labels": ("citation", _item(Task.CITATION), "CAST(X.support AS TEXT)"),
}
_V9_RAG_AUDIT = _V9_TABLES + "".join(
    "".join(_history_triggers(table, *spec).values()) for table, spec in V9_HISTORY_TABLES.items()
)

# Schema 14: a citation label may be 'cannot judge' (support NULL), written to the history as the passage
# history writes it; the rebuilt table gets its triggers again with that value expression.
V14_CITATION_HISTORY = (
    "citation",
    V9_HISTORY_TABLES["citation_labels"][1],
    "COALESCE(CAST(X.support AS TEXT), 'cannot-judge')",
)
_V14_CITATION_CANNOT_JUDGE = _V14_TABLE + "".join(_history_triggers("citation_labels", *V14_CITATION_HISTORY).values())

# Schema 15: side-by-side battles, with history triggers as every label table has.
V15_HISTORY_TABLES = {"battles": ("battle", _item(Task.BATTLE), "CAST(X.outcome AS TEXT)")}
_V15_BATTLES = _V15_TABLES + "".join(
    "".join(_history_triggers(table, *spec).values()) for table, spec in V15_HISTORY_TABLES.items()
)

# Schema 17: nugget banks and rubrics, the bank-match
# label table with history triggers (a change of its sentences alone is recorded too), prejudgments rebuilt
# to admit the 'bank-match' task.
BANK_MATCH_HISTORY = ("bank-match", _item(Task.BANK_MATCH), "CAST(X.contains AS TEXT)")
BANK_MATCH_OPTIONS = {"also_changed": " OR OLD.note IS NOT NEW.note OR OLD.sentences IS NOT NEW.sentences"}
_V17_NUGGET_BANKS = (
    _V_BANK_TABLES
    + _V_BANK_PREJUDGMENTS
    + "".join(_history_triggers("bank_matches", *BANK_MATCH_HISTORY, **BANK_MATCH_OPTIONS).values())
)

HISTORY_TABLES = {
    **V1_HISTORY_TABLES,
    **V9_HISTORY_TABLES,
    "citation_labels": V14_CITATION_HISTORY,
    **V15_HISTORY_TABLES,
    "bank_matches": BANK_MATCH_HISTORY,
}
"""Every label table's history as its triggers now write it: (history kind, item expression, value expression)."""

# Active time and guideline versions (store/schema/active_time.py): the insert and update triggers of the timed
# tables again, copying the two new columns into each history event.
_ACTIVE_TIME = _ACTIVE_TIME_COLUMNS + "".join(
    _history_triggers(table, *HISTORY_TABLES[table], extra=TIMED_COLUMNS)[event]
    for table in TIMED_TABLES
    for event in ("insert", "update")
)

# Citation 'contradicts' (support -2): the table rebuilt for its wider CHECK, its three triggers made again as
# they were (migration 14's value expression; the insert and update ones copying the active-time columns).
_CITATION_CONTRADICTS = _CONTRADICTS_TABLE + "".join(
    _history_triggers("citation_labels", *V14_CITATION_HISTORY, extra=TIMED_COLUMNS).values()
)

MIGRATIONS: list[str] = [
    _V1,
    _V2_LLM,
    _V3_CROWD,
    _V4_NUGGETS,
    _V5_HISTORY,
    _V6_ANNOTATIONS,
    _V7_HISTORY_GUARD,
    _V8_ACCOUNTS,
    _V9_RAG_AUDIT,
    _V10_RESPONSE_FILES,
    _V11_SESSIONS,
    _V12_CROWD_BINDINGS,
    _V13_ROLES,
    _V14_CITATION_CANNOT_JUDGE,
    _V15_BATTLES,
    _V16_ENDPOINTS,
    _V17_NUGGET_BANKS,
    _V18_OVERLAP,
    _ACTIVE_TIME,
    _JOB_LEASES,
    _CITATION_CONTRADICTS,
    _SIGN_IN_PENDING,
    _BATTLE_FEATURES,
    _HTTP_API,  # store/schema/http_api.py (24)
    _ADAPTIVE_OVERLAP,  # store/schema/adaptive_overlap.py (25)
    _WEBHOOK_EVENTS,  # store/schema/webhook_events.py (26)
    _PROVIDER_BATCHES,  # store/schema/provider_batches.py (27)
]
