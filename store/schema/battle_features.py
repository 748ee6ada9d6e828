"""Migration 23: per-side features of battles judged elsewhere (``battles import``'s ``features_a`` / ``features_b``).

``battle_features`` holds, per battle, the JSON objects a battle file gave for its left (``a``) and right (``b``)
answer: ``{"length": 212, "citations": 4, ...}`` (names: :data:`assess.measures.battle_controls.FEATURES`). An
imported battle's answers are usually not in the store, so a controlled ranking reads its features from here;
a battle without a row has its features computed from the stored answers. Deleted with its battle.
"""

MIGRATION = r"""
CREATE TABLE battle_features (
    source TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    features_a TEXT NOT NULL,            -- JSON object: feature name -> number
    features_b TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, run_a, run_b, occurrence),
    FOREIGN KEY (source, turn_id, run_a, run_b, occurrence)
        REFERENCES battles(source, turn_id, run_a, run_b, occurrence) ON DELETE CASCADE
) WITHOUT ROWID;
"""

POSTGRES = r"""
CREATE TABLE IF NOT EXISTS battle_features (
    source TEXT COLLATE "C" NOT NULL,
    turn_id TEXT COLLATE "C" NOT NULL,
    run_a TEXT COLLATE "C" NOT NULL,
    run_b TEXT COLLATE "C" NOT NULL,
    occurrence INTEGER NOT NULL,
    features_a TEXT COLLATE "C" NOT NULL,
    features_b TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source, turn_id, run_a, run_b, occurrence),
    FOREIGN KEY (source, turn_id, run_a, run_b, occurrence)
        REFERENCES battles(source, turn_id, run_a, run_b, occurrence) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE
);
"""
"""The same table on PostgreSQL, written to run twice (as the last migration must be)."""
