"""Migration 7: the history refuses ``INSERT OR REPLACE`` of an existing row, on every connection.

``label_history`` is append-only: its BEFORE UPDATE and BEFORE DELETE triggers abort. A REPLACE
conflict deletes the old row without firing delete triggers (SQLite fires them only with
``PRAGMA recursive_triggers`` on), so another SQLite client could overwrite a history row with
``INSERT OR REPLACE INTO label_history (id, ...)``. This BEFORE INSERT trigger aborts any insert that
names the id of an existing row, whatever the conflict clause and the connection's pragmas.
"""

MIGRATION = r"""
CREATE TRIGGER label_history_no_replace BEFORE INSERT ON label_history
WHEN NEW.id IS NOT NULL AND EXISTS (SELECT 1 FROM label_history WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'label_history is append-only'); END;
"""
