"""Migration (API tokens): personal tokens of the HTTP API (``python -m assess users token NAME``).

Like a session row, a token row holds only the SHA-256 of the secret the person was given (``id``), so a copy
of the store authorises nobody. A token never carries a role: every request reads the account's current role
and state. A token ends at ``expires_at`` or when ``revoked_at`` is set.
"""

MIGRATION = r"""
CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,                  -- SHA-256 (hex) of the token's secret
    name TEXT NOT NULL,                   -- the account
    created_by TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT,
    revoked_by TEXT
);
CREATE INDEX api_tokens_by_name ON api_tokens(name, revoked_at);
"""

POSTGRES = (
    MIGRATION.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")
    .replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS")
    .replace("TEXT PRIMARY KEY", 'TEXT COLLATE "C" PRIMARY KEY')
    .replace("TEXT NOT NULL", 'TEXT COLLATE "C" NOT NULL')
    .replace("TEXT,", 'TEXT COLLATE "C",')
    .replace("revoked_by TEXT\n", 'revoked_by TEXT COLLATE "C"\n')
)
"""The same table on PostgreSQL, written to run twice (as the last migration must be)."""
