"""Migration 8: accounts with roles, and the failed sign-ins that rate-limit password guessing.

No secret is stored in clear: ``password_hash`` is an Argon2id hash (argon2-cffi's PHC string);
sign-in links are never stored, only ``link_version``, which a reset increments so that every link
signed before it stops working. Account changes are recorded in ``label_history`` (label_table
'account', source = who made the change) by ``store.accounts``, never with a hash.
"""

MIGRATION = r"""
CREATE TABLE accounts (
    name TEXT PRIMARY KEY,               -- also the account's label source (kind 'assessor')
    role TEXT NOT NULL CHECK (role = 'assessor' OR role = 'adjudicator' OR role = 'organizer'),
    password_hash TEXT,                  -- Argon2 PHC string; NULL: sign-in by link (or OpenID) only
    link_version INTEGER NOT NULL DEFAULT 0,
    email TEXT UNIQUE,                   -- matched against st.user.email when OpenID Connect is configured
    disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled = 0 OR disabled = 1),
    created_by TEXT,
    created_at TEXT NOT NULL,
    changed_by TEXT,
    changed_at TEXT NOT NULL
);

-- One row per failed sign-in, per scope ('account:NAME' and 'address:IP'); rows older than the window are
-- pruned on the next failure. Shared by every app process that opens the store.
CREATE TABLE sign_in_failures (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX sign_in_failures_by_scope ON sign_in_failures(scope, at);
"""
