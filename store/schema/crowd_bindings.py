"""Migration 12: a crowd worker's identity is bound to the browser that first arrived with it.

``crowd_bindings`` holds one row per (study, worker id): the SHA-256 of a random secret that the worker
page made when that worker id first arrived and put in a cookie of that browser. A later arrival with
the same worker id is let in only when its browser shows the secret, so a second browser that knows (or
guesses) someone's worker id can neither continue their batch nor read their completion code. Only the
hash is stored. ``crowd release`` deletes a row, so the worker's next browser binds afresh.
"""

MIGRATION = r"""
CREATE TABLE crowd_bindings (
    study TEXT NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE,
    worker TEXT NOT NULL,                -- PROLIFIC_PID, MTurk workerId, or a pilot name
    secret_hash TEXT NOT NULL,           -- hex SHA-256 of the browser's secret (the secret is never stored)
    created_at TEXT NOT NULL,
    PRIMARY KEY (study, worker)
) WITHOUT ROWID;
"""

POSTGRES = r"""
CREATE TABLE crowd_bindings (
    study TEXT COLLATE "C" NOT NULL REFERENCES crowd_studies(name) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,
    worker TEXT COLLATE "C" NOT NULL,
    secret_hash TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (study, worker)
);
"""
