"""Migration 4: the nugget workbench.

- ``nuggets.span_method``: how a nugget's span was obtained ('selected' in the browser, 'typed' text
  found in the passage, 'exact' / 'normalised' when an imported text was located); NULL = free text.
- ``nugget_duplicates``: one row per unordered pair of nuggets of one set (a < b by id), with the
  suggester's scores both ways and the assessor's decision; confirmed decisions drive ``nuggets.in_dedup``.
- ``gfrc_studies`` / ``response_nuggets``: a GFRC2 study's attribute sets (kinds, groups, targets),
  and relevant-nugget marks over system responses (word range inside one turn's response).
- ``aspects`` / ``aspect_ptkb`` / ``aspect_content``: AEPD aspect lists per turn, the PTKB statements
  each aspect relates to, and the words of each run's response about each aspect.
"""

MIGRATION = r"""
ALTER TABLE nuggets ADD COLUMN span_method TEXT
    CHECK (span_method IS NULL OR span_method IN ('selected', 'typed', 'exact', 'normalised'));
CREATE INDEX nuggets_by_turn ON nuggets(turn_id, source);

CREATE TABLE nugget_duplicates (
    nugget_a INTEGER NOT NULL REFERENCES nuggets(id) ON DELETE CASCADE,
    nugget_b INTEGER NOT NULL REFERENCES nuggets(id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    source TEXT NOT NULL REFERENCES sources(name),      -- the nugget set both belong to
    score_ab REAL,                                      -- suggester's P(a entails b)
    score_ba REAL,                                      -- suggester's P(b entails a)
    suggested_by TEXT,                                  -- 'lexical', 'nli:MODEL', 'manual'
    decision TEXT CHECK (decision IS NULL OR decision IN ('same', 'a_covers_b', 'b_covers_a', 'distinct')),
    decided_by TEXT,                                    -- the assessor who confirmed or rejected
    updated_at TEXT NOT NULL,
    PRIMARY KEY (nugget_a, nugget_b),
    CHECK (nugget_a < nugget_b)
);
CREATE INDEX nugget_duplicates_by_turn ON nugget_duplicates(source, turn_id);

CREATE TABLE gfrc_studies (
    name TEXT PRIMARY KEY,
    attributes TEXT NOT NULL,            -- JSON [{name, kind, groups, target, divergence}]
    max_level INTEGER NOT NULL DEFAULT 2 CHECK (max_level >= 1),
    L INTEGER NOT NULL DEFAULT 1000 CHECK (L >= 1),
    created_at TEXT NOT NULL
);

CREATE TABLE response_nuggets (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL REFERENCES gfrc_studies(name) ON DELETE CASCADE,
    run TEXT NOT NULL REFERENCES runs(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    start_word INTEGER NOT NULL,         -- 1-based, inclusive, inside the run's response to the turn
    end_word INTEGER NOT NULL,
    level INTEGER NOT NULL CHECK (level >= 1),
    groups TEXT NOT NULL,                -- JSON {attribute set: group}
    text TEXT NOT NULL,                  -- the words marked, to check against the response
    updated_at TEXT NOT NULL,
    CHECK (start_word >= 1 AND end_word >= start_word),
    UNIQUE (study, run, turn_id, start_word)
);
CREATE INDEX response_nuggets_by_run ON response_nuggets(study, run, turn_id);

CREATE TABLE aspects (
    id INTEGER PRIMARY KEY,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    position INTEGER NOT NULL,
    text TEXT NOT NULL CHECK (length(trim(text)) > 0),
    updated_at TEXT NOT NULL,
    UNIQUE (turn_id, text)
);

CREATE TABLE aspect_ptkb (
    aspect_id INTEGER NOT NULL REFERENCES aspects(id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    statement_id TEXT NOT NULL,
    PRIMARY KEY (aspect_id, statement_id),
    FOREIGN KEY (conversation_id, statement_id) REFERENCES ptkb_statements(conversation_id, statement_id)
) WITHOUT ROWID;

CREATE TABLE aspect_content (
    aspect_id INTEGER NOT NULL REFERENCES aspects(id) ON DELETE CASCADE,
    run TEXT NOT NULL REFERENCES runs(name),
    text TEXT NOT NULL,                  -- the response's words about the aspect ('' = not covered)
    updated_at TEXT NOT NULL,
    PRIMARY KEY (aspect_id, run)
) WITHOUT ROWID;
"""
