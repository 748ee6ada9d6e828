"""Migration 25 (adaptive overlap, machine annotators declared).

``overlap_plans`` gains ``margin`` (NULL: a planned plan, as before; a number: an adaptive one, whose extra
assessors are decided by grades differing by at least it) and ``judge`` (the label source the first human
grade is compared with; NULL: none). ``overlap_decisions`` records why each item of an adaptive plan got
another assessor or went to adjudication: ``step`` 'base' (drawn at the base share when the plan was made),
'judge' (the first human grade and the judge's differ by >= margin), 'humans' (two human grades differ by
>= margin: a third assessor) or 'disputed' (every pair of its humans differs by >= margin once all judged:
routed to adjudication), with the grades that decided it (JSON). Only the base items feed the adaptive
plan's human ceiling: the others were chosen because people disagree.

``sources`` gains ``engine`` (what ran the model: vLLM, an API, ...) and ``model_date`` (the date of the
model or of its run), with ``model`` and ``prompt_version`` the roster of a machine annotator
(``python -m assess sources roster``).
"""

MIGRATION = r"""
ALTER TABLE overlap_plans ADD COLUMN margin REAL CHECK (margin IS NULL OR margin > 0);
ALTER TABLE overlap_plans ADD COLUMN judge TEXT;
ALTER TABLE sources ADD COLUMN engine TEXT;
ALTER TABLE sources ADD COLUMN model_date TEXT;

CREATE TABLE overlap_decisions (
    plan TEXT NOT NULL REFERENCES overlap_plans(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,
    step TEXT NOT NULL CHECK (step IN ('base', 'judge', 'humans', 'disputed')),
    assessor TEXT,                       -- the assessor the step added (NULL: 'disputed')
    grades TEXT NOT NULL,                -- JSON {source: grade} that decided the step
    decided_at TEXT NOT NULL,
    PRIMARY KEY (plan, turn_id, item_id, step)
) WITHOUT ROWID;
-- a label's save asks whether its item is in an adaptive plan of its assessor: one probe of this index
CREATE INDEX overlap_items_by_item ON overlap_items(assessor, turn_id, item_id);
"""

POSTGRES = (
    MIGRATION.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS")
    .replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")
    .replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS")
    .replace(") WITHOUT ROWID;", ");")
    .replace("REAL CHECK", "DOUBLE PRECISION CHECK")
    .replace("TEXT NOT NULL", 'TEXT COLLATE "C" NOT NULL')
    .replace("TEXT,", 'TEXT COLLATE "C",')
    .replace("TEXT;", 'TEXT COLLATE "C";')
    .replace("ON DELETE CASCADE,", "ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,")
    .replace("REFERENCES turns(id),", "REFERENCES turns(id) DEFERRABLE INITIALLY IMMEDIATE,")
)
