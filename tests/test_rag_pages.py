"""The RAG assessor pages through AppTest: /citations (keys, resume, passages without text, inert sentences),
graded NtR keys on /ntr, nugget importance keys on /nuggets and the RAG scores on /scores, each checked
against the rows stored or numbers worked out by hand."""

from __future__ import annotations

import html
import re

import pytest

from assess.tasks import CitedResponse, CitedSentence
from tests.helpers import TRAP, open_app, rows

HOSTILE_SENTENCE = f"Try ![s](http://{TRAP}/sentence.png) [s-link](http://evil.example/s) <b>x</b> :red[alarm] **loud**"


def cited_responses() -> list[CitedResponse]:
    return [
        CitedResponse(
            run="rag-a",
            turn_id="101_1",
            sentences=(
                CitedSentence("Start with walk-run intervals.", ("demo-doc-001:0", "demo-doc-002:3")),
                CitedSentence("Rest a day between runs.", ("no-text-doc:7",)),
                CitedSentence("Enjoy."),
            ),
        ),
        CitedResponse(
            run="topics",
            turn_id="101_2",
            sentences=(CitedSentence("Do you mean a 10k plan?"),),
            text="Do you mean a 10k plan?",
            citations=("demo-doc-003:0",),
        ),
    ]


@pytest.fixture
def app_db(store_target, monkeypatch):
    """The app's store with the demo and two cited responses (imported through the store, as the CLI will)."""
    from assess.services.loading import load_demo
    from store import open_db
    from store import responses as cited

    monkeypatch.setenv("ASSESS_DB", store_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    monkeypatch.delenv("ASSESS_NLI_MODEL", raising=False)
    with open_db(store_target) as db:
        load_demo(db)
        cited.add_responses(db, "answers.jsonl", cited_responses())
    return store_target


def citation_items(target) -> list[tuple]:
    from store import open_db
    from store import responses as cited

    with open_db(target) as db:
        return [(i["turn_id"], i["run"], i["sentence"], i["passage_id"]) for i in cited.citation_items(db)]


def position(at, word: str = "Citation") -> tuple[int, int]:
    for m in at.markdown:
        found = re.match(rf"{word} (\d+) of (\d+)", m.value)
        if found:
            return int(found.group(1)), int(found.group(2))
    raise AssertionError(f"no '{word} N of M' line")


def shown(at) -> str:
    """What the page rendered as markdown and captions: our tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", " ".join(m.value for m in [*at.markdown, *at.caption])))


# ------------------------------------------------------------------------------------------- /citations


def test_citation_keys_store_labels_move_on_and_resume(app_db):
    items = citation_items(app_db)
    assert items[:4] == [
        ("101_1", "rag-a", 1, "demo-doc-001:0"),
        ("101_1", "rag-a", 1, "demo-doc-002:3"),
        ("101_1", "rag-a", 2, "no-text-doc:7"),
        ("101_2", "topics", 0, "demo-doc-003:0"),
    ]
    at = open_app("pages/citations.py", "cia")
    assert position(at) == (1, len(items))
    text = shown(at)
    assert "Sentence 1 of 3" in text and "Start with walk-run intervals." in text
    assert "Also cited here: `demo-doc-002:3`" in text
    at.button(key="cite_2").click().run()
    assert position(at) == (2, len(items))
    at.button(key="cite_1").click().run()
    assert position(at) == (3, len(items))
    assert any("Passage text not available" in w.value for w in at.warning)  # no text: said so, as on /judge
    at.button(key="cite_m1").click().run()  # X: the citation is irrelevant
    assert position(at) == (4, len(items))
    assert "The response as a whole" in shown(at)
    stored = rows(
        app_db,
        "SELECT turn_id, run, sentence, passage_id, support, mode, via FROM citation_labels "
        "WHERE source = 'cia' ORDER BY updated_at, sentence, passage_id",
        {},
    )
    assert stored == [(*items[0], 2, "blind", "key"), (*items[1], 1, "blind", "key"), (*items[2], -1, "blind", "key")]
    at.button(key="cite_undo").click().run()  # the last label is gone and shown again
    assert position(at) == (3, len(items))
    assert len(rows(app_db, "SELECT 1 FROM citation_labels WHERE source = 'cia'", {})) == 2
    at.button(key="cite_0").click().run()
    at.button(key="cite_prev").click().run()
    assert position(at) == (3, len(items)) and any("Your label: 0 · not supported" in s.value for s in at.success)
    again = open_app("pages/citations.py", "cia")  # a fresh session resumes at the first unlabelled citation
    assert position(again) == (4, len(items))
    again.button(key="cite_2").click().run()
    assert rows(
        app_db,
        "SELECT sentence, support FROM citation_labels WHERE source = 'cia' AND run = 'topics'",
        {},
    ) == [(0, 2)]


def test_citation_page_is_blind_and_shows_hostile_sentences_inertly(app_db):
    from store import open_db
    from store import responses as cited
    from store.imports import ensure_source

    with open_db(app_db) as db:
        cited.add_responses(
            db,
            "evil.jsonl",
            [
                CitedResponse(
                    run="rag-a", turn_id="101_1", sentences=(CitedSentence(HOSTILE_SENTENCE, ("demo-doc-001:0",)),)
                )
            ],
        )
        ensure_source(db, "llm:judge", "llm")
        cited.save_citation_label(db, "llm:judge", "101_1", "rag-a", 1, "demo-doc-001:0", 0, mode="llm", via="llm")
    at = open_app("pages/citations.py", "cia")
    block = next(m.value for m in at.markdown if "evil" in m.value)
    for raw in ("![s]", "](http", "<b>", ":red[", "**loud**"):
        assert raw not in block  # every syntax character is an entity inside one raw HTML block
    assert HOSTILE_SENTENCE in shown(at)
    page = " ".join(str(getattr(e, "value", "")) for e in at.main)
    assert "llm:judge" not in page and "Your label" not in page  # blind: another source's label is never shown
