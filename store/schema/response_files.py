"""Migration 10: response files read back as they were written.

- ``response_citations`` (rebuilt: SQLite cannot drop a UNIQUE constraint) keeps a passage a sentence
  cites twice as two rows, told apart by ``position``: the iKAT 2025 topics list one passage twice in
  the citations of two responses, and a store that kept one of them would count 396 citations where
  the file has 398 and would write a different file back. ``responses_text_changed`` is dropped and
  created again around the rebuild (a trigger naming a table that is being replaced would otherwise
  stop the rename).
- ``responses.layout``: the layout the response was read from (``ikat-topics``, ``trec-rag-2024``,
  ``trec-rag-2025``; NULL for responses stored otherwise). ``responses.file_fields``: JSON of what that
  layout says besides the text, the sentences and the citations (a TREC RAG answer's reference list,
  topic or narrative text and other fields), so an export writes the answer back as it came.
"""

MIGRATION = r"""
DROP TRIGGER responses_text_changed;
DROP INDEX response_citations_by_passage;
ALTER TABLE response_citations RENAME TO response_citations_v9;
CREATE TABLE response_citations (
    run TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    sentence INTEGER NOT NULL CHECK (sentence >= 0),   -- 0: the response as a whole
    position INTEGER NOT NULL CHECK (position >= 0),   -- citing order within the sentence
    passage_id TEXT NOT NULL REFERENCES passages(id),
    PRIMARY KEY (run, turn_id, sentence, position),
    FOREIGN KEY (run, turn_id) REFERENCES responses(run, turn_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO response_citations (run, turn_id, sentence, position, passage_id)
    SELECT run, turn_id, sentence, position, passage_id FROM response_citations_v9;
DROP TABLE response_citations_v9;
CREATE INDEX response_citations_by_passage ON response_citations(passage_id);

CREATE TRIGGER responses_text_changed AFTER UPDATE OF text ON responses
WHEN OLD.text IS NOT NEW.text
BEGIN
    DELETE FROM response_citations WHERE run = NEW.run AND turn_id = NEW.turn_id;
    DELETE FROM response_sentences WHERE run = NEW.run AND turn_id = NEW.turn_id;
END;

ALTER TABLE responses ADD COLUMN layout TEXT;
ALTER TABLE responses ADD COLUMN file_fields TEXT;
"""
