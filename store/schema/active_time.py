"""Migration 19: the active time of each judgment, and versioned guidelines.

- Every label table in :data:`TIMED_TABLES` gains ``active_ms`` (how long the item was on screen and
  active before the key press that wrote the label, measured in the browser: ``assets/ui/active_time.js``;
  NULL when nobody timed it: imports, LLM and crowd labels, labels older than this migration) and
  ``guideline_version`` (the version of the task's guideline in force when the label was written; NULL when
  the task had none, and for imported labels, which were made elsewhere).
- ``label_history`` gains the same two columns, and the insert and update history triggers of those tables
  copy them from the written row, so every event of a label keeps its own time and guideline version (the
  label row holds the latest write's). A deletion (undo) records neither. A write that leaves the value
  and the note as they were is, as before, no history event: its time is the label row's only.
- ``guidelines`` holds every version of each task's guideline text (rubric and instructions), numbered
  1, 2, ... per task and never rewritten: an edit is a new version (:mod:`store.guidelines`).

SQLite adds the columns in place and re-creates the insert and update triggers; PostgreSQL adds them in
place and replaces the two trigger functions (the triggers, with migration 13's guarded bulk switch,
stay), then pins the functions' search path again (store/schema/postgres.py).
"""

from __future__ import annotations

TIMED_TABLES: tuple[str, ...] = (
    "passage_labels",
    "ptkb_labels",
    "ntr_labels",
    "response_labels",
    "ntr_support_labels",
    "nugget_importance_labels",
    "citation_labels",
)
"""The label tables this migration gives ``active_ms`` and ``guideline_version`` (a later label table
names the two columns in its own DDL and joins this list there)."""

TIMED_COLUMNS: tuple[str, ...] = ("active_ms", "guideline_version")
"""The columns the history triggers copy from a written label row into ``label_history``."""


def _columns(text_type: str, again: str = "") -> str:
    """The DDL; ``again`` is PostgreSQL's ``IF NOT EXISTS``: its latest migration may run twice (an owner
    re-running it to grant the app role again), SQLite's never does."""
    out = []
    for table in TIMED_TABLES:
        out.append(
            f"ALTER TABLE {table} ADD COLUMN {again}active_ms INTEGER CHECK (active_ms IS NULL OR active_ms >= 0);\n"
        )
        out.append(
            f"ALTER TABLE {table} ADD COLUMN {again}guideline_version INTEGER "
            "CHECK (guideline_version IS NULL OR guideline_version >= 1);\n"
        )
    out.append(f"ALTER TABLE label_history ADD COLUMN {again}active_ms INTEGER;\n")
    out.append(f"ALTER TABLE label_history ADD COLUMN {again}guideline_version INTEGER;\n")
    out.append(f"""
CREATE TABLE {again}guidelines (
    task {text_type} NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    text {text_type} NOT NULL,
    created_by {text_type},
    created_at {text_type} NOT NULL,
    PRIMARY KEY (task, version)
);
""")
    return "".join(out)


# The columns and the table; store.schema appends the re-created triggers.
MIGRATION = _columns("TEXT") + "".join(
    f"DROP TRIGGER {table}_history_insert;\nDROP TRIGGER {table}_history_update;\n" for table in TIMED_TABLES
)

# PostgreSQL: the same columns and table; store.schema.postgres appends the replaced trigger functions.
POSTGRES_TABLES = _columns('TEXT COLLATE "C"', "IF NOT EXISTS ")
