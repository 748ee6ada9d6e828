"""Migration 3: tables for crowd studies (batches, assignments to workers, answers).

A study's regular items are cut into batches, each with one hidden test item; a batch is given to
distinct workers (``crowd_assignments``, one row per worker and batch, never twice) until k of them
completed it and were kept by QC (a discarded assignment stays, with its answers, and frees its
slot); every answer is one row keyed by (assignment, item), so a repeated submission changes nothing. The aggregated
labels of a study are written to ``ntr_labels`` / ``response_labels`` as the source ``crowd:<study>``.
"""

MIGRATION = r"""
CREATE TABLE crowd_studies (
    name TEXT PRIMARY KEY,
    task TEXT NOT NULL CHECK (task IN ('ntr', 'response')),
    source TEXT NOT NULL,                -- where the aggregated labels go: 'crowd:<name>'
    config TEXT NOT NULL,                -- JSON of assess.crowd.rules.StudyConfig
    guideline TEXT NOT NULL,             -- JSON: title, consent, instructions, examples
    secret TEXT NOT NULL,                -- key of the completion codes
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'imported')),
    created_at TEXT NOT NULL
);

CREATE TABLE crowd_items (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    run TEXT NOT NULL REFERENCES runs(name),
    nugget_id INTEGER REFERENCES nuggets(id),      -- NtR items: a run's response x a gold nugget
    criterion TEXT,                                -- response-quality items: one criterion each
    known_answer INTEGER,                          -- test items: the organizer's answer (never sent to workers)
    CHECK ((nugget_id IS NULL) <> (criterion IS NULL))
);
CREATE UNIQUE INDEX crowd_items_natural ON crowd_items(study, turn_id, run, COALESCE(nugget_id, 0),
                                                       COALESCE(criterion, ''));

CREATE TABLE crowd_batches (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE,
    number INTEGER NOT NULL,             -- 1, 2, ... in creation (or file) order
    label TEXT NOT NULL,                 -- the batch id in exports (an imported file's own id)
    UNIQUE (study, number),
    UNIQUE (study, label)
);

CREATE TABLE crowd_batch_items (
    batch_id INTEGER NOT NULL REFERENCES crowd_batches(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,           -- screen order, 0-based
    item_id INTEGER NOT NULL REFERENCES crowd_items(id) ON DELETE CASCADE,
    is_test INTEGER NOT NULL DEFAULT 0 CHECK (is_test IN (0, 1)),
    PRIMARY KEY (batch_id, position),
    UNIQUE (batch_id, item_id)
) WITHOUT ROWID;
CREATE INDEX crowd_batch_items_by_item ON crowd_batch_items(item_id);

CREATE TABLE crowd_workers (
    study TEXT NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE,
    worker TEXT NOT NULL,                -- PROLIFIC_PID, MTurk workerId, or a pilot name
    platform TEXT NOT NULL CHECK (platform IN ('prolific', 'mturk', 'direct', 'import')),
    decision TEXT CHECK (decision IN ('approved', 'rejected')),   -- the organizer's; rejected: labels left out
    first_seen TEXT NOT NULL,
    PRIMARY KEY (study, worker)
) WITHOUT ROWID;

CREATE TABLE crowd_assignments (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    worker TEXT NOT NULL,
    batch_id INTEGER NOT NULL REFERENCES crowd_batches(id) ON DELETE CASCADE,
    session TEXT NOT NULL DEFAULT '',    -- Prolific SESSION_ID / MTurk assignmentId ('' when none)
    hit TEXT,                            -- Prolific STUDY_ID / MTurk hitId
    submit_to TEXT,                      -- MTurk turkSubmitTo (an MTurk host, checked)
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed')),
    started_at TEXT NOT NULL,
    last_seen TEXT NOT NULL,             -- last answer: an idle unfinished assignment frees its slot
    consented_at TEXT,
    completed_at TEXT,
    completion_code TEXT,
    UNIQUE (batch_id, worker),           -- a worker never gets the same batch twice
    FOREIGN KEY (study, worker) REFERENCES crowd_workers(study, worker) ON DELETE CASCADE
);
CREATE UNIQUE INDEX crowd_one_active_batch ON crowd_assignments(study, worker) WHERE status = 'active';
CREATE INDEX crowd_assignments_by_session ON crowd_assignments(study, worker, session);

CREATE TABLE crowd_answers (
    assignment_id INTEGER NOT NULL REFERENCES crowd_assignments(id) ON DELETE CASCADE,
    item_id INTEGER NOT NULL REFERENCES crowd_items(id) ON DELETE CASCADE,
    value INTEGER NOT NULL CHECK (value BETWEEN -1 AND 4),
    seconds REAL CHECK (seconds IS NULL OR seconds >= 0),   -- time on the item's screen
    via TEXT NOT NULL DEFAULT 'page',    -- page | import
    answered_at TEXT NOT NULL,
    PRIMARY KEY (assignment_id, item_id)
) WITHOUT ROWID;

-- A worker's answer is kept as first given: a repeated submission is ignored, never an update.
CREATE TRIGGER crowd_answers_no_update BEFORE UPDATE ON crowd_answers
BEGIN SELECT RAISE(ABORT, 'crowd answers are kept as first given'); END;
"""
