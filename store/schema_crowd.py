"""Migration 3: tables for crowd studies (batches, assignments to workers, answers)."""

MIGRATION = """
-- placeholder: no statements yet
CREATE TABLE IF NOT EXISTS _migration_3 (x INTEGER);
"""
