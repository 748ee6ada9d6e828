"""The SQLite rebuild of the ``prejudgments`` table that widens its task CHECK (SQLite cannot alter a CHECK):
the table renamed aside, created again with the new task list, its rows copied in id order, the old table
dropped and the indexes made again. Migrations 15 (battles) and 17 (nugget banks) each widen the CHECK this
way; the text generated is the text they shipped with (their hashes are pinned in
tests/store/test_migrations.py)."""

from __future__ import annotations

_COLUMNS = """    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name),
    task TEXT NOT NULL CHECK (task IN ({tasks})),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    raw_output TEXT,
    parse_status TEXT NOT NULL CHECK (parse_status IN ('ok', 'repaired', 'unparseable', 'error')),
    parsed TEXT,
    note TEXT,
    error TEXT,
    latency_ms INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    attempts INTEGER,
    cached_from INTEGER REFERENCES prejudgments(id),
    job_id INTEGER REFERENCES prejudge_jobs(id),
    created_at TEXT NOT NULL,
    sample INTEGER NOT NULL DEFAULT 0 CHECK (sample >= 0)
"""


def sqlite_rebuild(tasks: str, aside: str) -> str:
    """The script: ``tasks`` is the CHECK's list as SQL text (quoted names, comma-separated, wrapped as the
    caller's shipped text wraps it), ``aside`` the name the old table is renamed to while its rows are copied."""
    return f"""DROP INDEX prejudgments_once;
DROP INDEX prejudgments_cache;
DROP INDEX prejudgments_by_item;
ALTER TABLE prejudgments RENAME TO {aside};
CREATE TABLE prejudgments (
{_COLUMNS.format(tasks=tasks)});
INSERT INTO prejudgments (id, source, task, turn_id, item_id, model, prompt_version, input_hash, raw_output,
                          parse_status, parsed, note, error, latency_ms, prompt_tokens, completion_tokens, attempts,
                          cached_from, job_id, created_at, sample)
    SELECT id, source, task, turn_id, item_id, model, prompt_version, input_hash, raw_output, parse_status, parsed,
           note, error, latency_ms, prompt_tokens, completion_tokens, attempts, cached_from, job_id, created_at, sample
    FROM {aside} ORDER BY id;
DROP TABLE {aside};
CREATE UNIQUE INDEX prejudgments_once
    ON prejudgments(source, task, turn_id, item_id, model, prompt_version, input_hash, sample)
    WHERE parse_status != 'error';
CREATE INDEX prejudgments_cache ON prejudgments(model, prompt_version, input_hash) WHERE parse_status != 'error';
CREATE INDEX prejudgments_by_item ON prejudgments(task, turn_id, item_id);
"""
