"""Migration: a citation label may say the cited passage *contradicts* the sentence (support -2).

TREC BioGen 2025 asks assessors for supporting and contradicting citations. ``citation_labels.support``
now takes -2 (:data:`assess.tasks.CITATION_CONTRADICTS`: the passage states the opposite of what the
sentence states) beside 2 fully, 1 partially, 0 not supported and -1 irrelevant; NULL stays "cannot judge".
Below -1 so that "supported" remains ``support >= 1``: every citation measure reads a contradicting citation
as not supporting, and ``score citations`` adds its share (docs/measures.md). No row changes.

SQLite cannot change a CHECK: the table is rebuilt as migration 14 rebuilt it, with every column it has by
then (the active time and guideline version included), its three history triggers dropped first and made
again afterwards as they were (migration 14's value expression, :data:`store.schema.V14_CITATION_HISTORY`; the
insert and update triggers copying the active-time columns), so no copied row writes history and every later
change does.
PostgreSQL replaces the column's CHECK in place (the triggers are untouched); its script may run twice.
"""

MIGRATION = r"""
DROP TRIGGER citation_labels_history_insert;
DROP TRIGGER citation_labels_history_update;
DROP TRIGGER citation_labels_history_delete;
CREATE TABLE citation_labels_contradicts (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    run TEXT NOT NULL REFERENCES runs(name),
    sentence INTEGER NOT NULL CHECK (sentence >= 0),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    support INTEGER CHECK (support BETWEEN -2 AND 2),   -- -2 contradicts; NULL: 'cannot judge'
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    active_ms INTEGER CHECK (active_ms IS NULL OR active_ms >= 0),
    guideline_version INTEGER CHECK (guideline_version IS NULL OR guideline_version >= 1),
    PRIMARY KEY (source, turn_id, run, sentence, passage_id)
) WITHOUT ROWID;
INSERT INTO citation_labels_contradicts (source, turn_id, run, sentence, passage_id, support, note, mode, via,
    updated_at, active_ms, guideline_version)
    SELECT source, turn_id, run, sentence, passage_id, support, note, mode, via, updated_at, active_ms,
        guideline_version FROM citation_labels;
DROP TABLE citation_labels;
ALTER TABLE citation_labels_contradicts RENAME TO citation_labels;
"""
"""The rebuilt table; its history triggers are appended by :mod:`store.schema`."""

POSTGRES = r"""
ALTER TABLE citation_labels DROP CONSTRAINT IF EXISTS citation_labels_support_check;
ALTER TABLE citation_labels ADD CONSTRAINT citation_labels_support_check CHECK (support BETWEEN -2 AND 2);
"""
"""PostgreSQL: the CHECK (named by PostgreSQL's rule for a column constraint) replaced in place."""
