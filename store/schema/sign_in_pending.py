"""Migration 22: a sign-in attempt whose password is still being checked is not a failure.

``sign_in_failures.pending`` is 1 for an attempt in flight (counted before its password is checked, so that
concurrent attempts cannot all pass a limit none of them has reached) and 0 for a failure. A failure is
counted only once the check failed (the pending row is replaced by a failure row); a right password deletes
the pending row. So twenty people behind one address (a lab, a proxy) who sign in at the same moment are
not twenty failures of that address. A pending row older than a minute (a process that died while checking)
counts as a failure. Existing rows are failures (0). Only INSERT and DELETE touch the table, as before.
"""

MIGRATION = r"""
ALTER TABLE sign_in_failures ADD COLUMN pending INTEGER NOT NULL DEFAULT 0 CHECK (pending IN (0, 1));
"""

POSTGRES = MIGRATION.replace("ADD COLUMN pending", "ADD COLUMN IF NOT EXISTS pending")
"""The same column on PostgreSQL, written to run twice (as the last migration must be: tests/deploy/test_pg_roles.py)."""
