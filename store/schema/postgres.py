"""The store's schema on PostgreSQL: one baseline script equal to SQLite's schema after all of
:data:`store.schema.MIGRATIONS`, then the PostgreSQL halves of later migrations.

A fresh PostgreSQL store runs the baseline (version 8) and every later half as one script, recorded as
the latest version; a store made earlier runs the later halves it lacks, one by one. The version is the
highest row of ``assess_schema`` (:func:`store.db.schema_version`), which :func:`store.db.migrate_db`
appends after each script of :func:`migrations_from`. Never edit a script that has shipped: append a new pair.

Differences from SQLite, all deliberate:

- ``id INTEGER PRIMARY KEY`` is an identity column, and columns referring to such ids are BIGINT;
  REAL is DOUBLE PRECISION. ``conversations`` has an explicit ``rowid`` identity column (insertion
  order, as SQLite's implicit rowid), the only rowid queries may use.
- Every TEXT column has the C collation: text is compared and sorted by code point, as SQLite's
  default BINARY collation does, whatever locale the database was created with (ids such as
  '0_10' < '0_2' then come out in the same order on both engines).
- The column ``gfrc_studies.L`` keeps its capital by being quoted: queries name it ``"L"`` (both
  engines accept that spelling).
- Every foreign key is ``DEFERRABLE INITIALLY IMMEDIATE``: checked per statement as on SQLite,
  unless a transaction says ``SET CONSTRAINTS ALL DEFERRED``.
- Triggers are PL/pgSQL functions recording the same label_history rows as SQLite's; JSON values are
  built as the same compact text SQLite's ``json_object`` writes (``{"text":"a","relevance":2}``).
  The guards raise SQLSTATE 23000, which drivers report as an integrity error, as SQLite's
  ``RAISE(ABORT)`` is. TRUNCATE of label_history is refused too. SQLite's ``label_history_no_replace``
  has no counterpart: PostgreSQL has no ``INSERT OR REPLACE``, and an upsert on the history runs
  into the update guard.
"""

from __future__ import annotations

from assess import tasks
from store.schema import (
    HISTORY_TABLES,
    MIGRATIONS,
    V1_HISTORY_TABLES,
    V9_HISTORY_TABLES,
    V14_CITATION_HISTORY,
    V15_HISTORY_TABLES,
    annotation_item,
)
from store.schema.active_time import POSTGRES_TABLES as _ACTIVE_TIME_TABLES
from store.schema.active_time import TIMED_COLUMNS, TIMED_TABLES
from store.schema.battles import POSTGRES_TABLES as _V15_TABLES
from store.schema.citation_cannot_judge import POSTGRES_TABLE as _V14_TABLE
from store.schema.roles import TRIGGER_FUNCTIONS_PINNED
from store.schema.roles import postgres as roles_script

# ------------------------------------------------------------------------------------ history triggers

_NOW = """to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


def _json_object(*pairs: tuple[str, str]) -> str:
    """SQL text of a JSON object written exactly as SQLite's json_object: no spaces, keys in order,
    NULL as null (to_json escapes strings the way SQLite does)."""
    parts = []
    for i, (key, expr) in enumerate(pairs):
        opening = "{" if i == 0 else ","
        parts.append(f"""'{opening}"{key}":' || COALESCE(CAST(to_json({expr}) AS TEXT), 'null')""")
    return "(" + " || ".join(parts) + " || '}')"


# The label tables' history (kind, item and value expressions) is the one SQLite's triggers use; the
# annotations' items are spelled by the registry's item keys too (assess.tasks.ANNOTATION_KINDS).
_ANNOTATION = {"mode": "NULL", "also_changed": "", "deleted_via": "'delete'"}
ANNOTATION_TABLES = {
    "nuggets": (
        ("nugget", annotation_item("nugget")),
        {
            "value": _json_object(
                ("text", "X.text"),
                ("relevance", "X.relevance"),
                ("passage_id", "X.passage_id"),
                ("start", "X.start_char"),
                ("end", "X.end_char"),
            ),
            "via": "X.span_method",
            "at": _NOW,
            **_ANNOTATION,
        },
    ),
    "nugget_duplicates": (
        ("nugget-duplicate", annotation_item("nugget-duplicate")),
        {"value": "X.decision", "via": "X.decided_by", "insert_when": "NEW.decision IS NOT NULL", **_ANNOTATION},
    ),
    "gold_responses": (
        ("gold-response", annotation_item("gold-response")),
        {
            "value": _json_object(("text", "X.text"), ("nuggets_used", "X.nuggets_used")),
            "via": "NULL",
            **_ANNOTATION,
        },
    ),
}


def _history_triggers(
    table: str,
    kind: str,
    item: str,
    value: str,
    *,
    mode: str = "X.mode",
    via: str = "X.via",
    at: str = "X.updated_at",
    also_changed: str = " OR OLD.note IS DISTINCT FROM NEW.note",
    deleted_via: str = "'undo'",
    insert_when: str = "",
    extra: tuple[str, ...] = (),
    replace: tuple[str, ...] = (),
) -> str:
    """Functions and triggers appending ``table``'s inserts, changes and deletions to label_history,
    row for row what SQLite's triggers of the same names write. ``extra``: columns the insert and update
    events copy from the written row; ``replace``: only these events' functions, replaced in place (their
    triggers stay)."""

    def at_row(prefix: str, expr: str) -> str:
        return expr.replace("X.", prefix)

    old_value, new_value = at_row("OLD.", value), at_row("NEW.", value)
    events = {
        "insert": (
            f"AFTER INSERT ON {table} FOR EACH ROW WHEN ({_NOT_BULK.format(table=table)}"
            + (f" AND ({insert_when})" if insert_when else "")
            + ")",
            f"'{kind}', NEW.source, {at_row('NEW.', item)}, NULL, {new_value}, {at_row('NEW.', mode)}, "
            f"{at_row('NEW.', via)}, {at_row('NEW.', at)}",
        ),
        "update": (
            f"AFTER UPDATE ON {table} FOR EACH ROW WHEN ({old_value} IS DISTINCT FROM {new_value}{also_changed})",
            f"'{kind}', NEW.source, {at_row('NEW.', item)}, {old_value}, {new_value}, {at_row('NEW.', mode)}, "
            f"{at_row('NEW.', via)}, {at_row('NEW.', at)}",
        ),
        "delete": (
            f"AFTER DELETE ON {table} FOR EACH ROW",
            f"'{kind}', OLD.source, {at_row('OLD.', item)}, {old_value}, NULL, {at_row('OLD.', mode)}, "
            f"{deleted_via}, {_NOW}",
        ),
    }
    out = []
    for event, (when, values) in events.items():
        if replace and event not in replace:
            continue
        name = f"{table}_history_{event}"
        columns = "label_table, source, item, old_value, new_value, mode, via, at"
        if event != "delete":
            columns += "".join(f", {c}" for c in extra)
            values += "".join(f", NEW.{c}" for c in extra)
        if replace:
            out.append(f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO label_history ({columns})
    VALUES ({values});
    RETURN NULL;
END
$$;
""")
            continue
        out.append(f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO label_history ({columns})
    VALUES ({values});
    RETURN NULL;
END
$$;
CREATE TRIGGER {name} {when} EXECUTE FUNCTION {name}();
""")
    return "".join(out)


# A bulk import names its table in this transaction-local setting; the table's insert trigger then
# records nothing for the rows (the import writes one history event itself). Unlike ALTER TABLE ...
# DISABLE TRIGGER it takes no lock, so judging pages keep reading the table during an import.
_BULK_SETTING = "assess.bulk_insert"
_NOT_BULK = "current_setting('" + _BULK_SETTING + "', true) IS DISTINCT FROM '{table}'"


def history_insert_trigger(table: str, enabled: bool) -> str:
    """The statement switching ``table``'s insert-history trigger off or back on for the rest of the
    current transaction (bulk imports; it ends with the transaction and is rolled back with it). ``table`` is
    a label kind's table (the registry, read now: a kind added to it needs no entry here) or an annotation
    table."""
    label_tables = {kind.table for kind in tasks.LABEL_KINDS.values()}
    if table not in label_tables and table not in HISTORY_TABLES and table not in ANNOTATION_TABLES:
        raise ValueError(f"{table} has no history triggers")
    return f"SELECT set_config('{_BULK_SETTING}', '{'' if enabled else table}', true)"


# ------------------------------------------------------------------------------------------ baseline

_FUNCTIONS = r"""
-- The leading integer of a text (after blanks, optional sign, at most 18 digits), else 0: what
-- store.db gives SQLite under the same name, to sort ids such as '9-1' < '10-1' numerically.
CREATE FUNCTION int_prefix(value text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE(CAST(substring(value FROM '^\s*([+-]?[0-9]{1,18})') AS bigint), 0) $$;
CREATE FUNCTION int_prefix(value bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE(value, 0) $$;

CREATE FUNCTION label_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'label_history is append-only' USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE FUNCTION crowd_answers_no_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'crowd answers are kept as first given' USING ERRCODE = 'integrity_constraint_violation';
END
$$;
"""

_FK = "DEFERRABLE INITIALLY IMMEDIATE"

_TABLES = rf"""
CREATE TABLE assess_schema (
    version INTEGER NOT NULL PRIMARY KEY,
    applied_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE conversations (
    id TEXT COLLATE "C" PRIMARY KEY,
    number TEXT COLLATE "C" NOT NULL,
    title TEXT COLLATE "C",
    collection TEXT COLLATE "C",
    year INTEGER,
    rowid BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE   -- insertion order (SQLite's implicit rowid)
);

CREATE TABLE turns (
    id TEXT COLLATE "C" PRIMARY KEY,
    conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations(id) {_FK},
    turn_number INTEGER NOT NULL,
    position INTEGER NOT NULL,
    utterance TEXT COLLATE "C",
    resolved_utterance TEXT COLLATE "C",
    response TEXT COLLATE "C",
    response_provenance TEXT COLLATE "C",
    parent_turn_id TEXT COLLATE "C" REFERENCES turns(id) {_FK}
);
CREATE INDEX turns_by_conversation ON turns(conversation_id, position);

CREATE TABLE ptkb_statements (
    conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations(id) {_FK},
    statement_id TEXT COLLATE "C" NOT NULL,
    text TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (conversation_id, statement_id)
);

CREATE TABLE passages (
    id TEXT COLLATE "C" PRIMARY KEY,
    doc_id TEXT COLLATE "C",
    text TEXT COLLATE "C"
);

CREATE TABLE runs (
    name TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL DEFAULT 'ranking' CHECK (kind IN ('ranking', 'response')),
    file TEXT COLLATE "C",
    imported_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE rankings (
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) ON DELETE CASCADE {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    passage_id TEXT COLLATE "C" NOT NULL REFERENCES passages(id) {_FK},
    rank INTEGER NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run, turn_id, passage_id)
);

CREATE TABLE responses (
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) ON DELETE CASCADE {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    text TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run, turn_id)
);

CREATE TABLE pool (
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    passage_id TEXT COLLATE "C" NOT NULL REFERENCES passages(id) {_FK},
    method TEXT COLLATE "C" NOT NULL CHECK (method = 'depth' OR method = 'qrels' OR method = 'adaptive' OR method = 'manual'),
    detail TEXT COLLATE "C",
    best_rank INTEGER,
    added_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (turn_id, passage_id)
);

CREATE TABLE sources (
    name TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('assessor', 'import', 'llm', 'adjudication', 'organizers', 'crowd')),
    model TEXT COLLATE "C",
    prompt_version TEXT COLLATE "C",
    description TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE passage_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    passage_id TEXT COLLATE "C" NOT NULL REFERENCES passages(id) {_FK},
    grade INTEGER CHECK (grade BETWEEN 0 AND 4),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id, passage_id)
);

CREATE TABLE ptkb_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    conversation_id TEXT COLLATE "C" NOT NULL,
    statement_id TEXT COLLATE "C" NOT NULL,
    relevant INTEGER NOT NULL CHECK (relevant BETWEEN 0 AND 4),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id, statement_id),
    FOREIGN KEY (conversation_id, statement_id) REFERENCES ptkb_statements(conversation_id, statement_id) {_FK}
);
CREATE INDEX ptkb_labels_by_turn ON ptkb_labels(turn_id, statement_id);

CREATE TABLE nuggets (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    key TEXT COLLATE "C" NOT NULL,
    text TEXT COLLATE "C" NOT NULL,
    relevance INTEGER,
    passage_id TEXT COLLATE "C" REFERENCES passages(id) {_FK},
    start_char INTEGER,
    end_char INTEGER,
    in_dedup INTEGER CHECK (in_dedup IN (0, 1)),
    created_at TEXT COLLATE "C" NOT NULL,
    span_method TEXT COLLATE "C" CHECK (span_method IS NULL OR span_method IN ('selected', 'typed', 'exact', 'normalised')),
    UNIQUE (source, turn_id, key),
    CHECK ((start_char IS NULL AND end_char IS NULL)
           OR (passage_id IS NOT NULL AND start_char >= 0 AND end_char > start_char))
);
CREATE INDEX nuggets_by_turn ON nuggets(turn_id, source);

CREATE TABLE ntr_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    nugget_id BIGINT NOT NULL REFERENCES nuggets(id) {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    match INTEGER NOT NULL CHECK (match IN (0, 1)),
    batch TEXT COLLATE "C",
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, nugget_id, run)
);

CREATE TABLE response_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    criterion TEXT COLLATE "C" NOT NULL,
    value INTEGER NOT NULL CHECK (value BETWEEN -1 AND 4),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, run, turn_id, criterion)
);

CREATE TABLE gold_responses (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    text TEXT COLLATE "C" NOT NULL,
    nuggets_used TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id)
);

CREATE TABLE assignments (
    assessor TEXT COLLATE "C" NOT NULL,
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    assigned_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (assessor, turn_id)
);

CREATE TABLE label_history (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    label_table TEXT COLLATE "C" NOT NULL,
    source TEXT COLLATE "C" NOT NULL,
    item TEXT COLLATE "C" NOT NULL,
    old_value TEXT COLLATE "C",
    new_value TEXT COLLATE "C",
    mode TEXT COLLATE "C",
    via TEXT COLLATE "C",
    at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX label_history_by_source ON label_history(source, label_table);
CREATE TRIGGER label_history_no_update BEFORE UPDATE ON label_history
    FOR EACH ROW EXECUTE FUNCTION label_history_append_only();
CREATE TRIGGER label_history_no_delete BEFORE DELETE ON label_history
    FOR EACH ROW EXECUTE FUNCTION label_history_append_only();
CREATE TRIGGER label_history_no_truncate BEFORE TRUNCATE ON label_history
    FOR EACH STATEMENT EXECUTE FUNCTION label_history_append_only();

CREATE TABLE settings (
    key TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);

-- LLM pre-judgments (SQLite migration 2)
CREATE TABLE llm_prompts (
    version TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    task TEXT COLLATE "C" NOT NULL,
    system TEXT COLLATE "C" NOT NULL,
    template TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE prejudge_jobs (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    task TEXT COLLATE "C" NOT NULL,
    model TEXT COLLATE "C" NOT NULL,
    prompt_version TEXT COLLATE "C" NOT NULL,
    base_url TEXT COLLATE "C",
    concurrency INTEGER,
    status TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'done', 'stopped', 'failed', 'interrupted')),
    planned INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    unparseable INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    message TEXT COLLATE "C",
    started_at TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    pid INTEGER,
    host TEXT COLLATE "C",
    heartbeat_at TEXT COLLATE "C",
    stale_after_s DOUBLE PRECISION NOT NULL DEFAULT 60
);
CREATE INDEX prejudge_jobs_running ON prejudge_jobs(source, task) WHERE status = 'running';

CREATE TABLE prejudgments (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    task TEXT COLLATE "C" NOT NULL CHECK (task IN ('passage', 'ptkb', 'ntr', 'nuggets', 'response-nuggets', 'aepd')),
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    item_id TEXT COLLATE "C" NOT NULL,
    model TEXT COLLATE "C" NOT NULL,
    prompt_version TEXT COLLATE "C" NOT NULL,
    input_hash TEXT COLLATE "C" NOT NULL,
    raw_output TEXT COLLATE "C",
    parse_status TEXT COLLATE "C" NOT NULL CHECK (parse_status IN ('ok', 'repaired', 'unparseable', 'error')),
    parsed TEXT COLLATE "C",
    note TEXT COLLATE "C",
    error TEXT COLLATE "C",
    latency_ms INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    attempts INTEGER,
    cached_from BIGINT REFERENCES prejudgments(id) {_FK},
    job_id BIGINT REFERENCES prejudge_jobs(id) {_FK},
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX prejudgments_once ON prejudgments(source, task, turn_id, item_id, model, prompt_version, input_hash)
    WHERE parse_status != 'error';
CREATE INDEX prejudgments_cache ON prejudgments(model, prompt_version, input_hash) WHERE parse_status != 'error';
CREATE INDEX prejudgments_by_item ON prejudgments(task, turn_id, item_id);

-- crowd studies (SQLite migration 3)
CREATE TABLE crowd_studies (
    name TEXT COLLATE "C" PRIMARY KEY,
    task TEXT COLLATE "C" NOT NULL CHECK (task IN ('ntr', 'response')),
    source TEXT COLLATE "C" NOT NULL,
    config TEXT COLLATE "C" NOT NULL,
    guideline TEXT COLLATE "C" NOT NULL,
    secret TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'imported')),
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE crowd_items (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    study TEXT COLLATE "C" NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    nugget_id BIGINT REFERENCES nuggets(id) {_FK},
    criterion TEXT COLLATE "C",
    known_answer INTEGER,
    CHECK ((nugget_id IS NULL) <> (criterion IS NULL))
);
CREATE UNIQUE INDEX crowd_items_natural ON crowd_items(study, turn_id, run, (COALESCE(nugget_id, 0)),
                                                       (COALESCE(criterion, '')));

CREATE TABLE crowd_batches (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    study TEXT COLLATE "C" NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE {_FK},
    number INTEGER NOT NULL,
    label TEXT COLLATE "C" NOT NULL,
    UNIQUE (study, number),
    UNIQUE (study, label)
);

CREATE TABLE crowd_batch_items (
    batch_id BIGINT NOT NULL REFERENCES crowd_batches(id) ON DELETE CASCADE {_FK},
    position INTEGER NOT NULL,
    item_id BIGINT NOT NULL REFERENCES crowd_items(id) ON DELETE CASCADE {_FK},
    is_test INTEGER NOT NULL DEFAULT 0 CHECK (is_test IN (0, 1)),
    PRIMARY KEY (batch_id, position),
    UNIQUE (batch_id, item_id)
);
CREATE INDEX crowd_batch_items_by_item ON crowd_batch_items(item_id);

CREATE TABLE crowd_workers (
    study TEXT COLLATE "C" NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE {_FK},
    worker TEXT COLLATE "C" NOT NULL,
    platform TEXT COLLATE "C" NOT NULL CHECK (platform IN ('prolific', 'mturk', 'direct', 'import')),
    decision TEXT COLLATE "C" CHECK (decision IN ('approved', 'rejected')),
    first_seen TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (study, worker)
);

CREATE TABLE crowd_assignments (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    study TEXT COLLATE "C" NOT NULL,
    worker TEXT COLLATE "C" NOT NULL,
    batch_id BIGINT NOT NULL REFERENCES crowd_batches(id) ON DELETE CASCADE {_FK},
    session TEXT COLLATE "C" NOT NULL DEFAULT '',
    hit TEXT COLLATE "C",
    submit_to TEXT COLLATE "C",
    status TEXT COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed')),
    started_at TEXT COLLATE "C" NOT NULL,
    last_seen TEXT COLLATE "C" NOT NULL,
    consented_at TEXT COLLATE "C",
    completed_at TEXT COLLATE "C",
    completion_code TEXT COLLATE "C",
    UNIQUE (batch_id, worker),
    FOREIGN KEY (study, worker) REFERENCES crowd_workers(study, worker) ON DELETE CASCADE {_FK}
);
CREATE UNIQUE INDEX crowd_one_active_batch ON crowd_assignments(study, worker) WHERE status = 'active';
CREATE INDEX crowd_assignments_by_session ON crowd_assignments(study, worker, session);

CREATE TABLE crowd_answers (
    assignment_id BIGINT NOT NULL REFERENCES crowd_assignments(id) ON DELETE CASCADE {_FK},
    item_id BIGINT NOT NULL REFERENCES crowd_items(id) ON DELETE CASCADE {_FK},
    value INTEGER NOT NULL CHECK (value BETWEEN -1 AND 4),
    seconds DOUBLE PRECISION CHECK (seconds IS NULL OR seconds >= 0),
    via TEXT COLLATE "C" NOT NULL DEFAULT 'page',
    answered_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (assignment_id, item_id)
);
CREATE TRIGGER crowd_answers_no_update BEFORE UPDATE ON crowd_answers
    FOR EACH ROW EXECUTE FUNCTION crowd_answers_no_update();

-- the nugget workbench (SQLite migration 4)
CREATE TABLE nugget_duplicates (
    nugget_a BIGINT NOT NULL REFERENCES nuggets(id) ON DELETE CASCADE {_FK},
    nugget_b BIGINT NOT NULL REFERENCES nuggets(id) ON DELETE CASCADE {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    score_ab DOUBLE PRECISION,
    score_ba DOUBLE PRECISION,
    suggested_by TEXT COLLATE "C",
    decision TEXT COLLATE "C" CHECK (decision IS NULL OR decision IN ('same', 'a_covers_b', 'b_covers_a', 'distinct')),
    decided_by TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (nugget_a, nugget_b),
    CHECK (nugget_a < nugget_b)
);
CREATE INDEX nugget_duplicates_by_turn ON nugget_duplicates(source, turn_id);

CREATE TABLE gfrc_studies (
    name TEXT COLLATE "C" PRIMARY KEY,
    attributes TEXT COLLATE "C" NOT NULL,
    max_level INTEGER NOT NULL DEFAULT 2 CHECK (max_level >= 1),
    "L" INTEGER NOT NULL DEFAULT 1000 CHECK ("L" >= 1),
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE response_nuggets (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    study TEXT COLLATE "C" NOT NULL REFERENCES gfrc_studies(name) ON DELETE CASCADE {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    start_word INTEGER NOT NULL,
    end_word INTEGER NOT NULL,
    level INTEGER NOT NULL CHECK (level >= 1),
    groups TEXT COLLATE "C" NOT NULL,
    text TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    CHECK (start_word >= 1 AND end_word >= start_word),
    UNIQUE (study, run, turn_id, start_word)
);
CREATE INDEX response_nuggets_by_run ON response_nuggets(study, run, turn_id);

CREATE TABLE aspects (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    position INTEGER NOT NULL,
    text TEXT COLLATE "C" NOT NULL CHECK (length(trim(text)) > 0),
    updated_at TEXT COLLATE "C" NOT NULL,
    UNIQUE (turn_id, text)
);

CREATE TABLE aspect_ptkb (
    aspect_id BIGINT NOT NULL REFERENCES aspects(id) ON DELETE CASCADE {_FK},
    conversation_id TEXT COLLATE "C" NOT NULL,
    statement_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (aspect_id, statement_id),
    FOREIGN KEY (conversation_id, statement_id) REFERENCES ptkb_statements(conversation_id, statement_id) {_FK}
);

CREATE TABLE aspect_content (
    aspect_id BIGINT NOT NULL REFERENCES aspects(id) ON DELETE CASCADE {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    text TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (aspect_id, run)
);

-- accounts (SQLite migration 8)
CREATE TABLE accounts (
    name TEXT COLLATE "C" PRIMARY KEY,
    role TEXT COLLATE "C" NOT NULL CHECK (role = 'assessor' OR role = 'adjudicator' OR role = 'organizer'),
    password_hash TEXT COLLATE "C",
    link_version INTEGER NOT NULL DEFAULT 0,
    email TEXT COLLATE "C" UNIQUE,
    disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled = 0 OR disabled = 1),
    created_by TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    changed_by TEXT COLLATE "C",
    changed_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE sign_in_failures (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    scope TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX sign_in_failures_by_scope ON sign_in_failures(scope, at);
"""

BASELINE_VERSION = 8  # the SQLite schema version the baseline equals

_BASELINE = (
    _FUNCTIONS
    + _TABLES
    + "".join(_history_triggers(t, *spec) for t, spec in V1_HISTORY_TABLES.items())
    + "".join(_history_triggers(t, kind, item, **opts) for t, ((kind, item), opts) in ANNOTATION_TABLES.items())
)

# ------------------------------------------------------------------------------------------ later

# Migration 9 (store/schema/rag_audit.py): cited responses, graded NtR, importance and citation labels,
# samples of answers and budgeted human samples. PostgreSQL changes the prejudgments CHECK and key in place.
_V9 = rf"""
ALTER TABLE responses ADD COLUMN imported_from TEXT COLLATE "C";

CREATE TABLE response_sentences (
    run TEXT COLLATE "C" NOT NULL,
    turn_id TEXT COLLATE "C" NOT NULL,
    sentence INTEGER NOT NULL CHECK (sentence >= 1),
    text TEXT COLLATE "C" NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    PRIMARY KEY (run, turn_id, sentence),
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id) ON DELETE CASCADE {_FK},
    CHECK (start_char >= 0 AND end_char > start_char)
);

CREATE TABLE response_citations (
    run TEXT COLLATE "C" NOT NULL,
    turn_id TEXT COLLATE "C" NOT NULL,
    sentence INTEGER NOT NULL CHECK (sentence >= 0),
    position INTEGER NOT NULL CHECK (position >= 0),
    passage_id TEXT COLLATE "C" NOT NULL REFERENCES passages(id) {_FK},
    PRIMARY KEY (run, turn_id, sentence, position),
    UNIQUE (run, turn_id, sentence, passage_id),
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id) ON DELETE CASCADE {_FK}
);
CREATE INDEX response_citations_by_passage ON response_citations(passage_id);

CREATE FUNCTION responses_text_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM response_citations WHERE run = NEW.run AND turn_id = NEW.turn_id;
    DELETE FROM response_sentences WHERE run = NEW.run AND turn_id = NEW.turn_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER responses_text_changed AFTER UPDATE OF text ON responses
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION responses_text_changed();

CREATE TABLE ntr_support_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    nugget_id BIGINT NOT NULL REFERENCES nuggets(id) {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    support INTEGER NOT NULL CHECK (support BETWEEN 0 AND 2),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, nugget_id, run)
);

CREATE TABLE nugget_importance_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    nugget_id BIGINT NOT NULL REFERENCES nuggets(id) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    importance INTEGER NOT NULL CHECK (importance = 0 OR importance = 1),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, nugget_id)
);

CREATE TABLE citation_labels (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    run TEXT COLLATE "C" NOT NULL REFERENCES runs(name) {_FK},
    sentence INTEGER NOT NULL CHECK (sentence >= 0),
    passage_id TEXT COLLATE "C" NOT NULL REFERENCES passages(id) {_FK},
    support INTEGER NOT NULL CHECK (support BETWEEN -1 AND 2),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id, run, sentence, passage_id)
);

ALTER TABLE prejudgments DROP CONSTRAINT prejudgments_task_check;
ALTER TABLE prejudgments ADD CONSTRAINT prejudgments_task_check CHECK (task IN (
    'passage', 'ptkb', 'ntr', 'response', 'ntr-support', 'importance', 'citation',
    'nuggets', 'response-nuggets', 'aepd', 'ntn'));
ALTER TABLE prejudgments ADD COLUMN sample INTEGER NOT NULL DEFAULT 0 CHECK (sample >= 0);
DROP INDEX prejudgments_once;
CREATE UNIQUE INDEX prejudgments_once
    ON prejudgments(source, task, turn_id, item_id, model, prompt_version, input_hash, sample)
    WHERE parse_status != 'error';

CREATE TABLE samples (
    name TEXT COLLATE "C" PRIMARY KEY,
    task TEXT COLLATE "C" NOT NULL,
    design TEXT COLLATE "C" NOT NULL,
    population INTEGER NOT NULL CHECK (population >= 0),
    budget INTEGER NOT NULL CHECK (budget >= 0),
    details TEXT COLLATE "C",
    created_by TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE sample_items (
    sample TEXT COLLATE "C" NOT NULL REFERENCES samples(name) ON DELETE CASCADE {_FK},
    turn_id TEXT COLLATE "C" NOT NULL REFERENCES turns(id) {_FK},
    item_id TEXT COLLATE "C" NOT NULL,
    stratum TEXT COLLATE "C",
    inclusion DOUBLE PRECISION NOT NULL CHECK (inclusion > 0 AND inclusion <= 1),
    assessor TEXT COLLATE "C",
    position INTEGER NOT NULL CHECK (position >= 0),
    PRIMARY KEY (sample, turn_id, item_id)
);
CREATE INDEX sample_items_by_assessor ON sample_items(assessor, sample, position);
""" + "".join(_history_triggers(t, *spec) for t, spec in V9_HISTORY_TABLES.items())

# Migration 10 (store/schema/response_files.py): a passage cited twice by one sentence is two rows; the
# layout a response was read from and that layout's other fields. PostgreSQL drops the constraint in place.
_V10 = """
ALTER TABLE response_citations DROP CONSTRAINT response_citations_run_turn_id_sentence_passage_id_key;
ALTER TABLE responses ADD COLUMN layout TEXT COLLATE "C";
ALTER TABLE responses ADD COLUMN file_fields TEXT COLLATE "C";
"""

# Migration 12 (store/schema/crowd_bindings.py): a crowd worker id bound to the browser that first came with it.
from store.schema.crowd_bindings import POSTGRES as _V12  # noqa: E402

# Migration 11 (store/schema/sessions.py): sign-in sessions and single-use sign-in links.
from store.schema.sessions import POSTGRES as _V11  # noqa: E402

# Migration 13 (store/schema/roles.py): the bulk switch honoured only for the tables' owner, and every trigger
# function's search path pinned, so an app role that does not own the store cannot bypass the history.
_V13 = roles_script(
    dict.fromkeys({**V1_HISTORY_TABLES, **V9_HISTORY_TABLES}, "")  # the tables with a history at schema 13
    | {table: options.get("insert_when", "") for table, (_, options) in ANNOTATION_TABLES.items()}
)

# Migration 14 (store/schema/citation_cannot_judge.py): 'cannot judge' citation labels (support NULL). The
# column loses NOT NULL in place; the three history triggers and functions are made again with the value
# expression that writes NULL as 'cannot-judge', then migration 13's guarded insert trigger and pinned
# search paths are applied to them as to every other table.
_V14 = (
    _V14_TABLE
    + "".join(
        f"DROP TRIGGER citation_labels_history_{event} ON citation_labels;\n"
        f"DROP FUNCTION citation_labels_history_{event}();\n"
        for event in ("insert", "update", "delete")
    )
    + _history_triggers("citation_labels", *V14_CITATION_HISTORY)
    + roles_script({"citation_labels": ""})
)

# Migration 15 (store/schema/battles.py): battles and battle plans; the prejudgments CHECK widened in place. The
# battles' history triggers (dropped first if there: the script runs twice) get migration 13's guarded bulk switch
# and pinned search paths.
_V15 = (
    _V15_TABLES
    + "".join(
        f"DROP TRIGGER IF EXISTS {table}_history_{event} ON {table};\n"
        f"DROP FUNCTION IF EXISTS {table}_history_{event}();\n"
        for table in V15_HISTORY_TABLES
        for event in ("insert", "update", "delete")
    )
    + "".join(_history_triggers(t, *spec) for t, spec in V15_HISTORY_TABLES.items())
    + roles_script(dict.fromkeys(V15_HISTORY_TABLES, ""))
)

# Migration 16 (store/schema/endpoints.py): the figures of each endpoint a pre-judging job used.
# Migration 17 (store/schema/nugget_banks.py): RAGTIME nugget banks, matches, DRAGUN rubrics and judgments; the
# bank-match label table's history triggers (guarded and pinned as migration 13 made every other one); the
# prejudgments CHECK admitting 'bank-match' (and 'battle'). Written to run twice (the last migration may be re-run
# by init).
from store.schema import BANK_MATCH_HISTORY, BANK_MATCH_OPTIONS  # noqa: E402
from store.schema.endpoints import POSTGRES as _V16_ENDPOINTS  # noqa: E402
from store.schema.nugget_banks import POSTGRES as _V_BANK_TABLES  # noqa: E402
from store.schema.nugget_banks import POSTGRES_PREJUDGMENTS as _V_BANK_PREJUDGMENTS  # noqa: E402

_V17_NUGGET_BANKS = (
    _V_BANK_TABLES
    + _V_BANK_PREJUDGMENTS
    + "".join(
        f"DROP TRIGGER IF EXISTS bank_matches_history_{event} ON bank_matches;\n"
        f"DROP FUNCTION IF EXISTS bank_matches_history_{event}();\n"
        for event in ("insert", "update", "delete")
    )
    + _history_triggers(
        "bank_matches",
        *BANK_MATCH_HISTORY,
        also_changed=BANK_MATCH_OPTIONS["also_changed"].replace(" IS NOT ", " IS DISTINCT FROM "),
    )
    + roles_script({"bank_matches": ""})
)

# Migration 18 (store/schema/overlap.py): consistency labels of re-shown items, overlap plans.
# Migration 20 (store/schema/job_leases.py): shared jobs, their workers, leased blocks and queued items.
from store.schema.job_leases import POSTGRES as _JOB_LEASES  # noqa: E402
from store.schema.overlap import POSTGRES as _V18  # noqa: E402

# Active time and guideline versions (store/schema/active_time.py): the columns and the guidelines table, then the
# insert and update functions of the timed tables replaced in place (their triggers, with migration 13's guarded
# bulk switch, stay) and every trigger function's search path pinned again (a replaced function loses it).
_ACTIVE_TIME = (
    _ACTIVE_TIME_TABLES
    + "".join(
        _history_triggers(table, *HISTORY_TABLES[table], extra=TIMED_COLUMNS, replace=("insert", "update"))
        for table in TIMED_TABLES
    )
    + TRIGGER_FUNCTIONS_PINNED
)

# Migration 23 (store/schema/battle_features.py): per-side features of imported battles.
# Citation 'contradicts' (store/schema/citation_contradicts.py): the support CHECK widened to -2 in place.
# Migration 24 (store/schema/http_api.py): personal tokens of the API, hashed; webhooks and their delivery log.
# Migration 25 (store/schema/adaptive_overlap.py): adaptive overlap's decisions, machine annotators' roster.
from store.schema.adaptive_overlap import POSTGRES as _ADAPTIVE_OVERLAP  # noqa: E402
from store.schema.battle_features import POSTGRES as _BATTLE_FEATURES  # noqa: E402
from store.schema.citation_contradicts import POSTGRES as _CITATION_CONTRADICTS  # noqa: E402
from store.schema.http_api import POSTGRES as _HTTP_API  # noqa: E402

# Migration 25 (store/schema/provider_batches.py): a shared job's batches at a provider's batch API.
from store.schema.provider_batches import POSTGRES as _PROVIDER_BATCHES  # noqa: E402

# Migration 22 (store/schema/sign_in_pending.py): sign-in attempts in flight are not failures.
from store.schema.sign_in_pending import POSTGRES as _SIGN_IN_PENDING  # noqa: E402
from store.schema.webhook_events import POSTGRES as _WEBHOOK_EVENTS  # noqa: E402

# The PostgreSQL halves of the migrations after the baseline: (version, script), in order.
LATER: list[tuple[int, str]] = [
    (9, _V9),
    (10, _V10),
    (11, _V11),
    (12, _V12),
    (13, _V13),
    (14, _V14),
    (15, _V15),
    (16, _V16_ENDPOINTS),
    (17, _V17_NUGGET_BANKS),
    (18, _V18),
    (19, _ACTIVE_TIME),  # store/schema/active_time.py
    (20, _JOB_LEASES),
    (21, _CITATION_CONTRADICTS),
    (22, _SIGN_IN_PENDING),
    (23, _BATTLE_FEATURES),
    (24, _HTTP_API),
    (25, _ADAPTIVE_OVERLAP),
    (26, _WEBHOOK_EVENTS),
    (27, _PROVIDER_BATCHES),
]


def migrations_from(current: int) -> list[tuple[int, str]]:
    """The (version, script) pairs a PostgreSQL store at schema ``current`` still needs."""

    last = LATER[-1][0] if LATER else BASELINE_VERSION
    if last != len(MIGRATIONS):
        raise RuntimeError(
            f"the PostgreSQL schema stops at version {last} but SQLite's is at {len(MIGRATIONS)}: "
            "store/schema/postgres.py lacks a migration"
        )
    if current == 0:  # a fresh store: the baseline and every later half as one step, recorded as the latest
        return [(last, _BASELINE + "".join(script for _, script in LATER))]
    if current < BASELINE_VERSION:
        raise RuntimeError(f"a PostgreSQL store at schema version {current} cannot exist (the baseline is 8)")
    return [(version, script) for version, script in LATER if version > current]
