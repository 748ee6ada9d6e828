"""Migration 2: tables for LLM pre-judgments, the prompts they used, and pre-judging jobs.

``prejudgments`` keeps every call's outcome (raw output, parse status, latency, tokens) for a label
source; a call is cached by (model, prompt version, input hash): a row whose status is not
'error' is never made twice for the same source and item, and another source asking the same
model the same prompt on the same input copies it (``cached_from``) instead of calling again.
Failed calls ('error') are kept too and retried by the next run.

A job records the process running it (``pid``, ``host``) and a ``heartbeat_at`` refreshed as results
arrive and every few seconds; a 'running' job whose process is gone (same host) or whose heartbeat
is older than ``stale_after_s`` was killed and is marked 'interrupted' (see
:func:`store.jobs.reap_stale_jobs`). One live job per (source, task) at a time.
"""

MIGRATION = r"""
CREATE TABLE llm_prompts (
    version TEXT PRIMARY KEY,            -- 'passage-relevance@1a2b3c4d' (name @ hash of the text)
    name TEXT NOT NULL,
    task TEXT NOT NULL,
    system TEXT NOT NULL,
    template TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE prejudge_jobs (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name),
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    base_url TEXT,
    concurrency INTEGER,
    status TEXT NOT NULL CHECK (status IN ('running', 'done', 'stopped', 'failed', 'interrupted')),
    planned INTEGER NOT NULL DEFAULT 0,  -- items this run set out to judge (calls and cache copies)
    done INTEGER NOT NULL DEFAULT 0,     -- results stored so far (any status)
    unparseable INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,  -- items left out (e.g. passages without text)
    message TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    pid INTEGER,                         -- the process running the job
    host TEXT,                           -- ... and its host name (the pid is checked only on this host)
    heartbeat_at TEXT,                   -- last sign of life (a stored result or the periodic beat)
    stale_after_s REAL NOT NULL DEFAULT 60  -- no heartbeat for this long: the job was killed
);
CREATE INDEX prejudge_jobs_running ON prejudge_jobs(source, task) WHERE status = 'running';

CREATE TABLE prejudgments (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name),
    task TEXT NOT NULL CHECK (task IN ('passage', 'ptkb', 'ntr', 'nuggets', 'response-nuggets', 'aepd')),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,               -- passage id | statement id | '<nugget id> <run>' | run | passage id
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    input_hash TEXT NOT NULL,            -- sha256 of the rendered messages and generation settings
    raw_output TEXT,                     -- the model's answer as received (NULL when the call failed)
    parse_status TEXT NOT NULL CHECK (parse_status IN ('ok', 'repaired', 'unparseable', 'error')),
    parsed TEXT,                         -- JSON of the parsed value (grade, 0/1, spans, aspects)
    note TEXT,                           -- parser notes: repairs, rejected spans, why unparseable
    error TEXT,                          -- why the call failed
    latency_ms INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    attempts INTEGER,
    cached_from INTEGER REFERENCES prejudgments(id),
    job_id INTEGER REFERENCES prejudge_jobs(id),
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX prejudgments_once ON prejudgments(source, task, turn_id, item_id, model, prompt_version, input_hash)
    WHERE parse_status != 'error';
CREATE INDEX prejudgments_cache ON prejudgments(model, prompt_version, input_hash) WHERE parse_status != 'error';
CREATE INDEX prejudgments_by_item ON prejudgments(task, turn_id, item_id);
"""
