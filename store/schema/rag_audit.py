"""Migration 9: generated responses with citations, graded NtR, nugget importance, citation support, and the
judge audit (samples of an LLM's answers, budgeted human samples).

- ``responses.imported_from``: the file a response was read from (NULL for responses stored before).
- ``response_sentences``: a response cut into sentences, numbered from 1, each with its code-point offsets
  into ``responses.text``. ``response_citations``: the passages each sentence cites, in citing order
  (``position`` from 0); sentence 0 stands for the response as a whole (citations a file gives per
  response, as the iKAT 2025 topics do). A response whose text changes loses its sentences and
  citations (their offsets no longer hold) until they are written again.
- ``ntr_support_labels``: graded NtR, 2 support / 1 partial support / 0 no support. The yes/no labels of
  ``ntr_labels`` stay as they are (read as yes = support, no = no support; never rewritten).
- ``nugget_importance_labels``: a gold nugget's importance, 1 vital / 0 okay.
- ``citation_labels``: does a passage a response sentence cites support it: 2 fully, 1 partially,
  0 not supported, -1 the citation is irrelevant to the sentence.
  The three label tables get history triggers like the others (added by ``store.schema``).
- ``prejudgments`` (rebuilt: SQLite cannot change a CHECK): ``sample``, the index of one of K answers to
  the same input (0 when one answer is asked for), part of the "answered once" key; the task CHECK
  admits the new label kinds and 'ntn'.
- ``samples`` / ``sample_items``: a budgeted human sample: its design, population and budget, and per
  item the probability it had of being drawn, its stratum, the assessor whose queue it is in and its
  place there.
"""

MIGRATION = r"""
ALTER TABLE responses ADD COLUMN imported_from TEXT;

CREATE TABLE response_sentences (
    run TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    sentence INTEGER NOT NULL CHECK (sentence >= 1),
    text TEXT NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    PRIMARY KEY (run, turn_id, sentence),
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id) ON DELETE CASCADE,
    CHECK (start_char >= 0 AND end_char > start_char)
) WITHOUT ROWID;

CREATE TABLE response_citations (
    run TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    sentence INTEGER NOT NULL CHECK (sentence >= 0),   -- 0: the response as a whole
    position INTEGER NOT NULL CHECK (position >= 0),   -- citing order within the sentence
    passage_id TEXT NOT NULL REFERENCES passages(id),
    PRIMARY KEY (run, turn_id, sentence, position),
    UNIQUE (run, turn_id, sentence, passage_id),
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX response_citations_by_passage ON response_citations(passage_id);

CREATE TRIGGER responses_text_changed AFTER UPDATE OF text ON responses
WHEN OLD.text IS NOT NEW.text
BEGIN
    DELETE FROM response_citations WHERE run = NEW.run AND turn_id = NEW.turn_id;
    DELETE FROM response_sentences WHERE run = NEW.run AND turn_id = NEW.turn_id;
END;

CREATE TABLE ntr_support_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    nugget_id INTEGER NOT NULL REFERENCES nuggets(id),
    run TEXT NOT NULL REFERENCES runs(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    support INTEGER NOT NULL CHECK (support BETWEEN 0 AND 2),
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, nugget_id, run)
) WITHOUT ROWID;

CREATE TABLE nugget_importance_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    nugget_id INTEGER NOT NULL REFERENCES nuggets(id),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    importance INTEGER NOT NULL CHECK (importance = 0 OR importance = 1),
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, nugget_id)
) WITHOUT ROWID;

CREATE TABLE citation_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL REFERENCES turns(id),
    run TEXT NOT NULL REFERENCES runs(name),
    sentence INTEGER NOT NULL CHECK (sentence >= 0),
    passage_id TEXT NOT NULL REFERENCES passages(id),
    support INTEGER NOT NULL CHECK (support BETWEEN -1 AND 2),
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, run, sentence, passage_id)
) WITHOUT ROWID;

DROP INDEX prejudgments_once;
DROP INDEX prejudgments_cache;
DROP INDEX prejudgments_by_item;
ALTER TABLE prejudgments RENAME TO prejudgments_v8;
CREATE TABLE prejudgments (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name),
    task TEXT NOT NULL CHECK (task IN ('passage', 'ptkb', 'ntr', 'response', 'ntr-support', 'importance', 'citation',
                                       'nuggets', 'response-nuggets', 'aepd', 'ntn')),
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
    sample INTEGER NOT NULL DEFAULT 0 CHECK (sample >= 0)   -- which of K answers to the same input
);
INSERT INTO prejudgments (id, source, task, turn_id, item_id, model, prompt_version, input_hash, raw_output,
                          parse_status, parsed, note, error, latency_ms, prompt_tokens, completion_tokens, attempts,
                          cached_from, job_id, created_at, sample)
    SELECT id, source, task, turn_id, item_id, model, prompt_version, input_hash, raw_output, parse_status, parsed,
           note, error, latency_ms, prompt_tokens, completion_tokens, attempts, cached_from, job_id, created_at, 0
    FROM prejudgments_v8 ORDER BY id;
DROP TABLE prejudgments_v8;
CREATE UNIQUE INDEX prejudgments_once
    ON prejudgments(source, task, turn_id, item_id, model, prompt_version, input_hash, sample)
    WHERE parse_status != 'error';
CREATE INDEX prejudgments_cache ON prejudgments(model, prompt_version, input_hash) WHERE parse_status != 'error';
CREATE INDEX prejudgments_by_item ON prejudgments(task, turn_id, item_id);

CREATE TABLE samples (
    name TEXT PRIMARY KEY,
    task TEXT NOT NULL,                  -- the label kind of its items ('passage', 'ntr', ...)
    design TEXT NOT NULL,                -- how it was drawn: 'stratified-llm', 'disagreement', 'uniform', ...
    population INTEGER NOT NULL CHECK (population >= 0),   -- items it was drawn from
    budget INTEGER NOT NULL CHECK (budget >= 0),           -- items drawn
    details TEXT,                        -- JSON: sources, strata with sizes and allocations, seed
    created_by TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE sample_items (
    sample TEXT NOT NULL REFERENCES samples(name) ON DELETE CASCADE,
    turn_id TEXT NOT NULL REFERENCES turns(id),
    item_id TEXT NOT NULL,               -- the task's item after the turn, as prejudgments spell it
    stratum TEXT,
    inclusion REAL NOT NULL CHECK (inclusion > 0 AND inclusion <= 1),   -- P(the item is in the sample)
    assessor TEXT,                       -- whose queue it is in (NULL: nobody's yet)
    position INTEGER NOT NULL CHECK (position >= 0),                    -- its place in that queue
    PRIMARY KEY (sample, turn_id, item_id)
) WITHOUT ROWID;
CREATE INDEX sample_items_by_assessor ON sample_items(assessor, sample, position);
"""
