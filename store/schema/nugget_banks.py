"""Migration 16 (numbered here after the migrations before it; the lead renumbers at merge): RAGTIME nugget
banks and DRAGUN rubrics.

- ``bank_topics``: one imported nugget bank per topic, with the file's whole ``metadata`` object (JSON, key
  order kept: ``team_id``, ``topic_id``, ``run_id``, ``run_desc`` and any other field) and the file read.
- ``bank_nuggets``: a bank's questions, numbered from 1 in the file's order; ``aggregator`` AND (every
  answer needed) or OR (any one); ``importance`` and ``metadata`` as JSON text (the file's value, whatever
  its type); ``origin`` ``original`` (imported) or ``post-edit`` (written or changed by an assessor later);
  ``created_by`` who wrote it last.
- ``bank_answers``: each question's acceptable answers, numbered from 1, with ``refs`` (JSON list of the
  supporting document ids, as the file gives them), ``metadata``, ``origin`` and ``created_by``.
- ``bank_matches``: the ``bank-match`` label kind (:mod:`assess.tasks`): which answers of a bank a run's response
  contains (``contains`` 1) or was judged not to contain (0), per label source, with the response's sentence
  numbers that state it (``sentences``, JSON). History triggers as every label table has (added by
  ``store.schema``); a change of the sentences alone is recorded too.
- ``rubric_topics`` / ``rubric_questions`` / ``rubric_answers``: an imported DRAGUN rubric (the file's whole
  object kept for export) and its questions (importance label) and short answers.
- ``rubric_labels``: a report's judgment of a short answer, per label source, in half units (supports 2,
  partial 1, none 0, contradicts -2; the track's score is the value / 2).

- ``prejudgments`` (rebuilt on SQLite, which cannot change a CHECK; in place on PostgreSQL): the task CHECK
  admits ``bank-match``, the LLM's matching of a response against a bank.

Edits of banks and rubric judgments are appended to ``label_history`` by the store functions that make them,
in the same transaction (``bank-nugget``, ``bank-answer``, ``rubric``), with who made them. The script may run twice (``IF NOT EXISTS``): PostgreSQL's last
migration is re-run by ``init`` to grant an app role again.
"""

from store.schema.prejudgments_rebuild import sqlite_rebuild

MIGRATION = r"""
CREATE TABLE IF NOT EXISTS bank_topics (
    topic_id TEXT PRIMARY KEY,
    metadata TEXT NOT NULL,              -- JSON: the bank file's metadata object
    imported_from TEXT,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS bank_nuggets (
    topic_id TEXT NOT NULL REFERENCES bank_topics(topic_id) ON DELETE CASCADE,
    nugget INTEGER NOT NULL CHECK (nugget >= 1),
    question TEXT NOT NULL,
    aggregator TEXT NOT NULL CHECK (aggregator = 'AND' OR aggregator = 'OR'),
    importance TEXT,                     -- JSON value, NULL: none given
    metadata TEXT,                       -- JSON object, NULL: none given
    origin TEXT NOT NULL CHECK (origin = 'original' OR origin = 'post-edit'),
    created_by TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (topic_id, nugget)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS bank_answers (
    topic_id TEXT NOT NULL,
    nugget INTEGER NOT NULL,
    answer INTEGER NOT NULL CHECK (answer >= 1),
    text TEXT NOT NULL,
    refs TEXT NOT NULL,                  -- JSON list of supporting documents
    metadata TEXT,
    origin TEXT NOT NULL CHECK (origin = 'original' OR origin = 'post-edit'),
    created_by TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (topic_id, nugget, answer),
    FOREIGN KEY (topic_id, nugget) REFERENCES bank_nuggets(topic_id, nugget) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS bank_matches (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL,
    run TEXT NOT NULL,
    nugget INTEGER NOT NULL,
    answer INTEGER NOT NULL,
    contains INTEGER NOT NULL CHECK (contains = 0 OR contains = 1),
    sentences TEXT NOT NULL DEFAULT '[]',   -- JSON list of the response's sentence numbers
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, run, nugget, answer),
    FOREIGN KEY (turn_id, nugget, answer) REFERENCES bank_answers(topic_id, nugget, answer) ON DELETE CASCADE,
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS rubric_topics (
    topic_id TEXT PRIMARY KEY,
    document TEXT NOT NULL,              -- JSON: the rubric file's object, written back by export
    imported_from TEXT,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS rubric_questions (
    topic_id TEXT NOT NULL REFERENCES rubric_topics(topic_id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 1),
    text TEXT,
    importance TEXT NOT NULL CHECK (importance = 'A: Have to Know' OR importance = 'B: Good to Know'
                                    OR importance = 'C: Nice to Know'),
    PRIMARY KEY (topic_id, question_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS rubric_answers (
    topic_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 1),
    text TEXT,
    PRIMARY KEY (topic_id, answer_id),
    FOREIGN KEY (topic_id, question_id) REFERENCES rubric_questions(topic_id, question_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS rubric_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    topic_id TEXT NOT NULL,
    run TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    judgment INTEGER NOT NULL CHECK (judgment = 2 OR judgment = 1 OR judgment = 0 OR judgment = -2),
    note TEXT,
    mode TEXT NOT NULL DEFAULT 'import',
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, topic_id, run, answer_id),
    FOREIGN KEY (topic_id, answer_id) REFERENCES rubric_answers(topic_id, answer_id) ON DELETE CASCADE
) WITHOUT ROWID;
"""

_TASKS = """'passage', 'ptkb', 'ntr', 'response', 'ntr-support', 'importance', 'citation', 'battle', 'bank-match',
                                       'nuggets', 'response-nuggets', 'aepd', 'ntn'"""

PREJUDGMENTS = "\n" + sqlite_rebuild(_TASKS, "prejudgments_v15")

POSTGRES_PREJUDGMENTS = f"""
ALTER TABLE prejudgments DROP CONSTRAINT prejudgments_task_check;
ALTER TABLE prejudgments ADD CONSTRAINT prejudgments_task_check CHECK (task IN ({_TASKS}));
"""

_FK = "DEFERRABLE INITIALLY IMMEDIATE"

# PostgreSQL: the same tables, TEXT in the C collation, foreign keys deferrable (store/schema/postgres.py).
POSTGRES = (
    MIGRATION.replace(" WITHOUT ROWID;", ";")
    .replace("TEXT PRIMARY KEY", 'TEXT COLLATE "C" PRIMARY KEY')
    .replace("TEXT NOT NULL", 'TEXT COLLATE "C" NOT NULL')
    .replace("TEXT,", 'TEXT COLLATE "C",')
    .replace("ON DELETE CASCADE", f"ON DELETE CASCADE {_FK}")
    .replace("REFERENCES sources(name)", f"REFERENCES sources(name) {_FK}")
    .replace("REFERENCES responses(run, turn_id)", f"REFERENCES responses(run, turn_id) {_FK}")
)
