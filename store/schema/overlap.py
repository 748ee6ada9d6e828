"""Migration 18 (re-shows and planned overlap): consistency labels of re-shown items, overlap plans.

``reshows`` holds one row per item of an assessor picked to come back (:class:`assess.queueing.ReshowRule`):
when it was picked (``first_count``: the labels the assessor held before it), when it is due (``due_count``:
once they hold that many; ``min_due``: the least gap, which is what a finished queue waits for) and, once
answered, the second answer (``value``, NULL for "cannot judge") with the primary label as it stood then
(``first_value``, ``first_missing`` 1 when that was "cannot judge"). A consistency label lives only here: it
never replaces the primary label, and qrels, exports and agreement read only the label tables.

``overlap_plans`` records an organizer's plan (share, copies 2 or 3, unit, seed, the stated rule);
``overlap_items`` every judge of each item drawn for overlap: its primary assessor (``extra`` 0: the item is
in their own turns) and the others (``extra`` 1: a copy in their queue, in plan order, ``block`` grouping a
whole turn's items), which their queue spreads among their own items (:func:`assess.queueing.interleave`).
"""

MIGRATION = r"""
CREATE TABLE IF NOT EXISTS reshows (
    task TEXT NOT NULL,
    assessor TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,
    first_count INTEGER NOT NULL CHECK (first_count >= 0),
    min_due INTEGER NOT NULL,
    due_count INTEGER NOT NULL,
    scheduled_at TEXT NOT NULL,
    value INTEGER,                       -- the second answer; NULL: 'cannot judge' (or not answered yet)
    first_value INTEGER,                 -- the primary label when the second answer was given
    first_missing INTEGER CHECK (first_missing IN (0, 1)),
    mode TEXT,
    answered_at TEXT,                    -- NULL: not answered yet
    PRIMARY KEY (task, assessor, turn_id, item_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reshows_due ON reshows(assessor, task, answered_at, due_count);

CREATE TABLE IF NOT EXISTS overlap_plans (
    name TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    unit TEXT NOT NULL CHECK (unit = 'item' OR unit = 'turn'),
    share REAL NOT NULL CHECK (share > 0 AND share <= 1),
    copies INTEGER NOT NULL CHECK (copies = 2 OR copies = 3),
    seed INTEGER NOT NULL,
    assessors TEXT NOT NULL,             -- JSON list, in the plan's order
    chosen INTEGER NOT NULL,
    population INTEGER NOT NULL,
    rule TEXT NOT NULL,
    created_by TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS overlap_items (
    plan TEXT NOT NULL REFERENCES overlap_plans(name) ON DELETE CASCADE,
    assessor TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,
    extra INTEGER NOT NULL CHECK (extra IN (0, 1)),   -- 1: a copy in this assessor's queue; 0: their own item
    block INTEGER NOT NULL CHECK (block >= 0),
    position INTEGER NOT NULL CHECK (position >= 0),
    PRIMARY KEY (plan, assessor, turn_id, item_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS overlap_items_by_assessor ON overlap_items(assessor, extra, plan, position);
"""

POSTGRES = (
    MIGRATION.replace(") WITHOUT ROWID;", ");")
    .replace("TEXT PRIMARY KEY", 'TEXT COLLATE "C" PRIMARY KEY')
    .replace("TEXT NOT NULL", 'TEXT COLLATE "C" NOT NULL')
    .replace("TEXT,", 'TEXT COLLATE "C",')
    .replace("REAL NOT NULL", "DOUBLE PRECISION NOT NULL")
    .replace("ON DELETE CASCADE,", "ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,")
    .replace("REFERENCES sources(name),", "REFERENCES sources(name) DEFERRABLE INITIALLY IMMEDIATE,")
    .replace("REFERENCES turns(id),", "REFERENCES turns(id) DEFERRABLE INITIALLY IMMEDIATE,")
)
