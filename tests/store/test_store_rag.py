"""Schema 9's RAG storage on both engines: cited responses (sentences, citations, counts, replacement,
refused records), graded NtR read beside yes/no labels, nugget importance and citation-support labels with
their history."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError, FormatError, UnknownItem
from assess.formats import ResponseRecord
from assess.tasks import CitedResponse, CitedSentence, Task
from store import labels, open_db
from store import responses as cited
from store.db import rows, value, write
from store.rag_imports import import_responses
from store.sources import ensure_source

FILE = "answers.jsonl"


def two_responses() -> list[CitedResponse]:
    return [
        CitedResponse(
            run="rag-a",
            turn_id="101_1",
            sentences=(
                CitedSentence("Tea has caffeine.", ("demo-doc-001:0", "demo-doc-002:3")),
                CitedSentence("Less than coffee.", ("new-doc:7",)),
                CitedSentence("Enjoy."),
            ),
            line=1,
        ),
        CitedResponse(
            run="topics",
            turn_id="101_2",
            sentences=(CitedSentence("Hi, do you mean green tea?"),),
            text="Hi, do you mean green tea?",
            citations=("demo-doc-003:0",),
            line=2,
        ),
    ]


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


def stored(db) -> dict:
    return {
        table: rows(db, f"SELECT * FROM {table} ORDER BY run, turn_id")
        for table in ("responses", "response_sentences", "response_citations")
    } | {"runs": rows(db, "SELECT name FROM runs ORDER BY name")}


def test_responses_with_citations_are_stored_and_read_back(db):
    before = cited.counts(db)
    summary = cited.add_responses(db, FILE, two_responses(), by="olga")
    assert summary == {"count": 2, "with_citations": 2, "citations": 4}
    after = cited.counts(db)
    assert after == {
        "count": before["count"] + 2,
        "with_citations": before["with_citations"] + 2,
        "citations": before["citations"] + 4,
    }
    a = cited.response(db, "rag-a", "101_1")
    assert a["text"] == "Tea has caffeine. Less than coffee. Enjoy."
    assert a["imported_from"] == FILE
    assert [(s["sentence"], s["start"], s["end"], s["citations"]) for s in a["sentences"]] == [
        (1, 0, 17, ["demo-doc-001:0", "demo-doc-002:3"]),
        (2, 18, 35, ["new-doc:7"]),
        (3, 36, 42, []),
    ]
    assert all(a["text"][s["start"] : s["end"]] == s["text"] for s in a["sentences"])
    assert a["citations"] == []
    topics = cited.response(db, "topics", "101_2")
    assert topics["citations"] == ["demo-doc-003:0"] and topics["sentences"][0]["citations"] == []
    # the records come back as written (offsets filled in), so a writer can export them again
    back = {(r.run, r.turn_id): r for r in cited.records(db)}
    for r in two_responses():
        got = back[(r.run, r.turn_id)]
        assert [(s.text, s.citations) for s in got.sentences] == [(s.text, s.citations) for s in r.sentences]
        assert got.full_text == r.full_text and got.citations == r.citations
    # runs and the unknown cited passage were created; who imported it is in the history
    assert value(db, "SELECT kind FROM runs WHERE name = 'rag-a'") == "response"
    assert value(db, "SELECT text FROM passages WHERE id = 'new-doc:7'") is None
    history = rows(db, "SELECT source, item, via FROM label_history WHERE label_table = 'import'")
    assert history == [{"source": "olga", "item": f"responses {FILE}", "via": "responses"}]
    # the ordinary readers of responses see the new run's text too
    assert value(db, "SELECT text FROM responses WHERE run = 'rag-a' AND turn_id = '101_1'") == a["text"]
    assert [r["run"] for r in cited.responses(db, turn_id="101_1")] == [
        "demo-bm25",
        "demo-dense",
        "demo-rerank",
        "rag-a",
    ]


def test_citation_items_name_sentence_and_passage_texts(db):
    cited.add_responses(db, FILE, two_responses())
    items = cited.citation_items(db, run="rag-a")
    assert [(i["sentence"], i["passage_id"], i["sentence_text"]) for i in items] == [
        (1, "demo-doc-001:0", "Tea has caffeine."),
        (1, "demo-doc-002:3", "Tea has caffeine."),
        (2, "new-doc:7", "Less than coffee."),
    ]
    assert items[0]["passage_text"] and items[2]["passage_text"] is None  # no text: the page says so
    whole = cited.citation_items(db, run="topics")
    assert [(i["sentence"], i["sentence_text"]) for i in whole] == [(0, "Hi, do you mean green tea?")]


def test_writing_a_response_again_replaces_its_sentences_and_citations(db):
    cited.add_responses(db, FILE, two_responses())
    again = CitedResponse("rag-a", "101_1", (CitedSentence("Tea has caffeine.", ("demo-doc-003:0",)),), line=1)
    cited.add_response(db, "second.jsonl", again)
    a = cited.response(db, "rag-a", "101_1")
    assert a["text"] == "Tea has caffeine." and a["imported_from"] == "second.jsonl"
    assert [(s["sentence"], s["citations"]) for s in a["sentences"]] == [(1, ["demo-doc-003:0"])]
    assert value(db, "SELECT COUNT(*) AS n FROM response_citations WHERE run = 'rag-a'") == 1


def test_a_response_text_changed_by_a_plain_import_drops_its_stale_sentences(db):
    from assess.errors import FormatError

    cited.add_responses(db, FILE, two_responses())
    changed = [ResponseRecord("101_1", "rag-a", "Another text altogether.", None, 1)]
    with pytest.raises(FormatError, match="or --replace to rewrite it"):  # never rewritten silently
        import_responses(db, "plain.json", changed)
    assert cited.response(db, "rag-a", "101_1")["text"] != "Another text altogether."
    import_responses(db, "plain.json", changed, replace=True)
    a = cited.response(db, "rag-a", "101_1")
    assert a["text"] == "Another text altogether." and a["sentences"] == []
    assert value(db, "SELECT COUNT(*) AS n FROM response_citations WHERE run = 'rag-a'") == 0
    # the same text again changes nothing of another response
    assert cited.response(db, "topics", "101_2")["citations"] == ["demo-doc-003:0"]


# A passage cited twice by one sentence is no longer refused: schema 10 stores it as the file gives it
# (tests/cli/test_responses_import.py, the iKAT 2025 topics cite one passage twice in two responses).
BAD = {
    "unknown turn": (
        CitedResponse("rag-a", "999_9", (CitedSentence("x"),), line=4),
        "turn",
    ),
    "sentence not in the text": (
        CitedResponse("rag-a", "101_1", (CitedSentence("Hello."),), text="Goodbye.", line=4),
        "sentences that are in its text",
    ),
    "offsets that do not hold": (
        CitedResponse("rag-a", "101_1", (CitedSentence("Hello.", (), 1, 7),), text="Hello.", line=4),
        "sentences that are in its text",
    ),
    "empty sentence": (CitedResponse("rag-a", "101_1", (CitedSentence("  "),), text="  ", line=4), "empty"),
    "two responses of one run and turn": (
        CitedResponse("topics", "101_2", (CitedSentence("Hi."),), line=4),
        "one response per run and turn",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_refused_records_name_file_and_line_and_store_nothing(db, case):
    bad, expected = BAD[case]
    before = stored(db)
    history = value(db, "SELECT COUNT(*) AS n FROM label_history")
    with pytest.raises(FormatError) as caught:
        cited.add_responses(db, FILE, [two_responses()[1], bad], by="olga")
    message = str(caught.value)
    assert FILE in message and "4" in message and expected in message, message
    assert stored(db) == before
    assert value(db, "SELECT COUNT(*) AS n FROM label_history") == history


_serial = itertools.count()
words = st.text(st.characters(codec="utf-8", exclude_characters="\x00", min_codepoint=32), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(words.filter(str.strip), st.lists(st.sampled_from(["p:1", "p:2", "p:3"]), unique=True, max_size=3)),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.sampled_from(["p:1", "p:4"]), unique=True, max_size=2),
)
def test_any_response_round_trips(db, sentences, whole):
    record = CitedResponse(
        f"fuzz{next(_serial)}", "101_3", tuple(CitedSentence(t, tuple(c)) for t, c in sentences), citations=tuple(whole)
    )
    cited.add_response(db, FILE, record)
    (back,) = cited.records(db, run=record.run)
    assert back.full_text == record.full_text
    assert back.citations == record.citations
    assert [(s.text, s.citations) for s in back.sentences] == [(s.text, s.citations) for s in record.sentences]
    assert [(s.start, s.end) for s in back.sentences] == record.spans()


# ------------------------------------------------------------------------------------------ labels


def source(db, name: str) -> str:
    with write(db):
        ensure_source(db, name, "assessor")
    return name


def test_graded_ntr_reads_yes_no_labels_as_support_or_none(db):
    amy = source(db, "amy")
    labels.save(db, Task.NTR, amy, ("101_1", 1, "demo-bm25"), 1, mode="blind", via="key")
    labels.save(db, Task.NTR, amy, ("101_1", 2, "demo-bm25"), 0, mode="blind", via="key")
    labels.save(db, Task.NTR, amy, ("101_1", 3, "demo-bm25"), 1, mode="blind", via="key")
    labels.save(db, Task.NTR_SUPPORT, amy, ("101_1", 3, "demo-bm25"), 1, mode="blind", via="key")  # graded wins
    labels.save(db, Task.NTR_SUPPORT, amy, ("101_1", 4, "demo-dense"), 1, mode="blind", via="key")
    assert labels.ntr_support(db, amy) == {
        ("101_1", 1, "demo-bm25"): 2,
        ("101_1", 2, "demo-bm25"): 0,
        ("101_1", 3, "demo-bm25"): 1,
        ("101_1", 4, "demo-dense"): 1,
    }
    # the yes/no labels themselves are untouched
    assert labels.values(db, Task.NTR, amy)[("101_1", 1, "demo-bm25")] == 1
    assert labels.ntr_support(db, amy, turn_id="101_2") == {}


def test_importance_and_graded_ntr_changes_are_in_the_history(db):
    amy = source(db, "amy")
    labels.save(db, Task.IMPORTANCE, amy, ("101_1", 2), 1, mode="blind", via="key")
    labels.save(db, Task.IMPORTANCE, amy, ("101_1", 2), 0, mode="blind", via="key")
    labels.save(db, Task.NTR_SUPPORT, amy, ("101_1", 2, "demo-bm25"), 2, mode="blind", via="key")
    history = rows(
        db, "SELECT label_table, item, old_value, new_value FROM label_history WHERE source = 'amy' ORDER BY id"
    )
    assert history == [
        {"label_table": "importance", "item": "101_1 2", "old_value": None, "new_value": "1"},
        {"label_table": "importance", "item": "101_1 2", "old_value": "1", "new_value": "0"},
        {"label_table": "ntr-support", "item": "101_1 2 demo-bm25", "old_value": None, "new_value": "2"},
    ]
    assert labels.undo(db, Task.IMPORTANCE, amy) == ("101_1", "2")
    assert labels.get(db, Task.IMPORTANCE, amy, ("101_1", 2)).value == 1
    with pytest.raises(AssessError, match="importance"):
        labels.save(db, Task.IMPORTANCE, amy, ("101_1", 2), 2, mode="blind", via="key")


def test_citation_labels_only_for_cited_passages_with_history_and_undo(db):
    cited.add_responses(db, FILE, two_responses())
    amy = source(db, "amy")
    cited.save_citation_label(db, amy, "101_1", "rag-a", 1, "demo-doc-002:3", 2)
    cited.save_citation_label(db, amy, "101_1", "rag-a", 1, "demo-doc-002:3", -1)
    cited.save_citation_label(db, amy, "101_2", "topics", 0, "demo-doc-003:0", 1)
    with pytest.raises(UnknownItem, match="does not cite"):
        cited.save_citation_label(db, amy, "101_1", "rag-a", 2, "demo-doc-002:3", 2)
    with pytest.raises(AssessError, match="citation"):
        cited.save_citation_label(db, amy, "101_1", "rag-a", 1, "demo-doc-001:0", 3)
    assert labels.values(db, Task.CITATION, amy) == {
        ("101_1", "rag-a", 1, "demo-doc-002:3"): -1,
        ("101_2", "topics", 0, "demo-doc-003:0"): 1,
    }
    history = rows(
        db, "SELECT item, old_value, new_value, mode, via FROM label_history WHERE source = 'amy' ORDER BY id"
    )
    assert history == [
        {"item": "101_1 rag-a 1 demo-doc-002:3", "old_value": None, "new_value": "2", "mode": "blind", "via": "key"},
        {"item": "101_1 rag-a 1 demo-doc-002:3", "old_value": "2", "new_value": "-1", "mode": "blind", "via": "key"},
        {"item": "101_2 topics 0 demo-doc-003:0", "old_value": None, "new_value": "1", "mode": "blind", "via": "key"},
    ]
    assert labels.undo(db, Task.CITATION, amy) == ("101_2", "topics", "0", "demo-doc-003:0")
    assert labels.undo(db, Task.CITATION, amy) == ("101_1", "rag-a", "1", "demo-doc-002:3")
    assert labels.get(db, Task.CITATION, amy, ("101_1", "rag-a", 1, "demo-doc-002:3")).value == 2
    # a re-imported response text drops sentences, never the labels (the history keeps them too)
    import_responses(db, "plain.json", [ResponseRecord("101_1", "rag-a", "New words.", None, 1)], replace=True)
    assert labels.values(db, Task.CITATION, amy)[("101_1", "rag-a", 1, "demo-doc-002:3")] == 2
