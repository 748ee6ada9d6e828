"""Migration 11: sign-in sessions that survive a reload, and sign-in links that work once.

A session row is what a browser's session cookie points to: the cookie holds a random secret, the row only
its SHA-256 (``id``), so a copy of the store signs nobody in. ``name`` is the account (``kind`` 'account')
or, in open mode, the typed assessor name (``kind`` 'open'). A session ends at ``expires_at`` or when
``ended_at`` is set (sign-out, which ends every session of the person; disabling or resetting the account).
The role is never stored here: every script or fragment run reads the account's current role.

``sign_in_links_used`` holds the nonce of every sign-in link opened, until the link would have expired, so
that a link signs in once.
"""

_SQLITE = r"""
CREATE TABLE sign_in_sessions (
    id TEXT PRIMARY KEY,                  -- SHA-256 (hex) of the cookie's secret
    name TEXT NOT NULL,                   -- the account, or the open-mode name
    kind TEXT NOT NULL CHECK (kind = 'account' OR kind = 'open'),
    via TEXT NOT NULL,                    -- password | link | openid | open
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ended_at TEXT,
    ended_by TEXT
);
CREATE INDEX sign_in_sessions_by_name ON sign_in_sessions(name, ended_at);

CREATE TABLE sign_in_links_used (
    nonce TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    used_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
"""

MIGRATION = _SQLITE

POSTGRES = (
    _SQLITE.replace("TEXT PRIMARY KEY", 'TEXT COLLATE "C" PRIMARY KEY')
    .replace("TEXT NOT NULL", 'TEXT COLLATE "C" NOT NULL')
    .replace("TEXT,", 'TEXT COLLATE "C",')
    .replace("ended_by TEXT\n", 'ended_by TEXT COLLATE "C"\n')
)
