"""Migration 2: tables for LLM pre-judgments and pre-judging jobs."""

MIGRATION = """
-- placeholder: no statements yet
CREATE TABLE IF NOT EXISTS _migration_2 (x INTEGER);
"""
