"""Migration 16 (issue 26): the figures of each endpoint a
pre-judging job sent its calls to.

``prejudge_job_endpoints`` holds one row per (job, endpoint), the endpoint named by its place in the job's list
(from 1) and its base URL (never its key): the concurrency limit it was given, the calls sent to it (each
try), how many answered and how many failed, the median and 95th percentile latency of its answered calls,
how often and for how long in all it was paused after failing repeatedly (and its latest pauses as JSON
``[[start, seconds, reason], ...]``), and its last error. A running job rewrites its rows as it goes; a job
that used one endpoint the old way has none. Both scripts may run twice (``IF NOT EXISTS``), as the last
migration must on PostgreSQL.
"""

MIGRATION = r"""
CREATE TABLE IF NOT EXISTS prejudge_job_endpoints (
    job_id INTEGER NOT NULL REFERENCES prejudge_jobs(id),
    position INTEGER NOT NULL CHECK (position >= 1),   -- the endpoint's place in the job's list
    base_url TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,  -- calls sent to it (every try)
    ok INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    p50_ms INTEGER,                       -- latency of its answered calls
    p95_ms INTEGER,
    pauses INTEGER NOT NULL DEFAULT 0,    -- times it was paused after failing repeatedly
    paused_s REAL NOT NULL DEFAULT 0,     -- seconds paused in all
    paused TEXT,                          -- JSON: its latest pauses, [[start, seconds, reason], ...]
    last_error TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (job_id, position)
);
"""

POSTGRES = r"""
CREATE TABLE IF NOT EXISTS prejudge_job_endpoints (
    job_id BIGINT NOT NULL REFERENCES prejudge_jobs(id) DEFERRABLE INITIALLY IMMEDIATE,
    position INTEGER NOT NULL CHECK (position >= 1),
    base_url TEXT COLLATE "C" NOT NULL,
    concurrency INTEGER NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    ok INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    p50_ms INTEGER,
    p95_ms INTEGER,
    pauses INTEGER NOT NULL DEFAULT 0,
    paused_s DOUBLE PRECISION NOT NULL DEFAULT 0,
    paused TEXT COLLATE "C",
    last_error TEXT COLLATE "C",
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (job_id, position)
);
"""
