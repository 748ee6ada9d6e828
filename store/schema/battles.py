"""Migration 15: side-by-side battles (the pairwise label kind) and battle plans.

- ``battles``: one source's verdict on two runs' answers to one topic or turn, ``run_a`` shown on the left and
  ``run_b`` on the right (the order shown is the order of the columns: a re-show in swapped order is its own
  row, keyed by the swapped pair); ``occurrence`` numbers a source's repeated battles of one pair in one order on
  one topic (0 for the first: arenas and simulations repeat battles, and every one counts). ``outcome`` on :data:`assess.tasks.BATTLE_OUTCOME` (1 A better, 2 B better,
  0 tie, -1 both bad); ``note`` holds the optional reason; ``reshow`` is 1 for a battle shown again, in swapped
  order, to measure consistency (an LLM's second order is one too); ``active_ms`` the time the screen was
  active before the verdict (NULL: not measured, as for imported battles). History triggers as every label
  table has (added by ``store.schema``).
  ``turn_id`` and the runs are ids, not foreign keys: battles judged elsewhere (another arena, RAGElo,
  ragnarok) are imported and ranked without their topics or answers in the store; the battle page and the
  LLM battles only ever draw pairs of stored responses.
- ``battle_plans`` / ``battle_pairs``: a named plan of pairs per topic (all pairs, a fixed number of random
  pairs, or an adaptive plan; :mod:`assess.measures.battles`), each pair once, runs in code-point order.
- ``prejudgments`` (rebuilt: SQLite cannot change a CHECK): the task CHECK admits ``battle``.
"""

from store.schema.prejudgments_rebuild import sqlite_rebuild

MIGRATION = r"""
CREATE TABLE battles (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL,               -- a turn id (iKAT '12-1_3') or a topic id (TREC RAG)
    run_a TEXT NOT NULL,                 -- shown on the left
    run_b TEXT NOT NULL,                 -- shown on the right
    occurrence INTEGER NOT NULL DEFAULT 0 CHECK (occurrence >= 0),   -- the source's n-th battle of this pair here
    outcome INTEGER NOT NULL CHECK (outcome BETWEEN -1 AND 2),   -- 1 A, 2 B, 0 tie, -1 both bad
    reshow INTEGER NOT NULL DEFAULT 0 CHECK (reshow = 0 OR reshow = 1),
    active_ms INTEGER CHECK (active_ms >= 0),
    note TEXT,                           -- the reason, when one is given
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, run_a, run_b, occurrence),
    CHECK (run_a <> run_b)
) WITHOUT ROWID;

CREATE TABLE battle_plans (
    name TEXT PRIMARY KEY,
    method TEXT NOT NULL CHECK (method = 'all' OR method = 'random' OR method = 'adaptive'),
    details TEXT,                        -- JSON: seed, pairs per topic, budget, the source an adaptive plan read
    created_by TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE battle_pairs (
    plan TEXT NOT NULL REFERENCES battle_plans(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    run_x TEXT NOT NULL,
    run_y TEXT NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 0),
    PRIMARY KEY (plan, turn_id, run_x, run_y),
    CHECK (run_x < run_y)
) WITHOUT ROWID;

""" + sqlite_rebuild(
    """'passage', 'ptkb', 'ntr', 'response', 'ntr-support', 'importance', 'citation',
                                       'battle', 'nuggets', 'response-nuggets', 'aepd', 'ntn'""",
    "prejudgments_v14",
)

# PostgreSQL: the same tables, the CHECK replaced in place. Written to run twice (a later `init` by the owner runs
# the last migration again to re-grant the app role): tables only if missing, the constraint dropped if there.
POSTGRES_TABLES = r"""
CREATE TABLE IF NOT EXISTS battles (
    source TEXT COLLATE "C" NOT NULL REFERENCES sources(name) DEFERRABLE INITIALLY IMMEDIATE,
    turn_id TEXT COLLATE "C" NOT NULL,
    run_a TEXT COLLATE "C" NOT NULL,
    run_b TEXT COLLATE "C" NOT NULL,
    occurrence INTEGER NOT NULL DEFAULT 0 CHECK (occurrence >= 0),
    outcome INTEGER NOT NULL CHECK (outcome BETWEEN -1 AND 2),
    reshow INTEGER NOT NULL DEFAULT 0 CHECK (reshow = 0 OR reshow = 1),
    active_ms INTEGER CHECK (active_ms >= 0),
    note TEXT COLLATE "C",
    mode TEXT COLLATE "C" NOT NULL DEFAULT 'import',
    via TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id, run_a, run_b, occurrence),
    CHECK (run_a <> run_b)
);

CREATE TABLE IF NOT EXISTS battle_plans (
    name TEXT COLLATE "C" PRIMARY KEY,
    method TEXT COLLATE "C" NOT NULL CHECK (method = 'all' OR method = 'random' OR method = 'adaptive'),
    details TEXT COLLATE "C",
    created_by TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE IF NOT EXISTS battle_pairs (
    plan TEXT COLLATE "C" NOT NULL REFERENCES battle_plans(name) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,
    turn_id TEXT COLLATE "C" NOT NULL,
    run_x TEXT COLLATE "C" NOT NULL,
    run_y TEXT COLLATE "C" NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 0),
    PRIMARY KEY (plan, turn_id, run_x, run_y),
    CHECK (run_x < run_y)
);

ALTER TABLE prejudgments DROP CONSTRAINT IF EXISTS prejudgments_task_check;
ALTER TABLE prejudgments ADD CONSTRAINT prejudgments_task_check CHECK (task IN (
    'passage', 'ptkb', 'ntr', 'response', 'ntr-support', 'importance', 'citation',
    'battle', 'nuggets', 'response-nuggets', 'aepd', 'ntn'));
"""
