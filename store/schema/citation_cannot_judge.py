"""Migration 14: "cannot judge" is a stored citation label, as it is a stored passage label.

``citation_labels.support`` may now be NULL: the assessor cannot judge whether the cited passage supports
the sentence (the passage has no text, the sentence cannot be read). It is stored the way
``passage_labels.grade`` stores /judge's "cannot judge": a label row whose value is NULL, with its source,
mode, via and time like any other, and the history writes its value as ``cannot-judge``
(:data:`store.labels.CANNOT_JUDGE`), the spelling the passage history uses. One value column, NULL for
"cannot judge", rather than a second ``cannot_judge`` column: every label reader, undo, the history's
text of a value and the scale's ``missing`` name already mean exactly that by NULL for passage labels, so
the two kinds need no second convention, and no row can say both a support value and "cannot judge".
A NULL is never "no label": an unlabelled citation has no row at all.

SQLite cannot drop a NOT NULL constraint: the table is rebuilt (a new table, the rows copied, the old one
dropped, the new one renamed), its three history triggers dropped first and created again afterwards
with the new value expression (:data:`store.schema.V14_CITATION_HISTORY`), so no copied row writes
history and every later change does, as before. The guard triggers of ``label_history`` are untouched.
PostgreSQL drops the constraint in place and replaces the three trigger functions
(store/schema/postgres.py), keeping migration 13's owner-only bulk switch and pinned search paths.
"""

# The rebuilt table; its triggers are appended by store.schema.
MIGRATION = r"""
DROP TRIGGER citation_labels_history_insert;
DROP TRIGGER citation_labels_history_update;
DROP TRIGGER citation_labels_history_delete;
CREATE TABLE citation_labels_v14 (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    run TEXT NOT NULL REFERENCES runs(name),
    sentence INTEGER NOT NULL CHECK (sentence >= 0),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    support INTEGER CHECK (support BETWEEN -1 AND 2),   -- NULL: 'cannot judge'
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, run, sentence, passage_id)
) WITHOUT ROWID;
INSERT INTO citation_labels_v14 (source, turn_id, run, sentence, passage_id, support, note, mode, via, updated_at)
    SELECT source, turn_id, run, sentence, passage_id, support, note, mode, via, updated_at FROM citation_labels;
DROP TABLE citation_labels;
ALTER TABLE citation_labels_v14 RENAME TO citation_labels;
"""

# PostgreSQL: the constraint dropped in place; the trigger functions are replaced by store.schema.postgres.
POSTGRES_TABLE = "ALTER TABLE citation_labels ALTER COLUMN support DROP NOT NULL;\n"
