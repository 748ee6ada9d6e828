"""Migration 4: nugget duplicate groups, gold-response nugget links, response nuggets (GFRC2) and aspects (AEPD)."""

MIGRATION = """
-- placeholder: no statements yet
CREATE TABLE IF NOT EXISTS _migration_4 (x INTEGER);
"""
