"""The RAG assessor pages through AppTest: /citations (keys, resume, passages without text, inert sentences),
graded NtR keys on /ntr, nugget importance keys on /nuggets and the RAG scores on /scores, each checked
against the rows stored or numbers worked out by hand."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
def app_db(demo_target, monkeypatch):
    """The app's store with the demo and two cited responses (imported through the store, as the CLI will)."""
    from store import open_db
    from store import responses as cited

    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    monkeypatch.delenv("ASSESS_NLI_MODEL", raising=False)
    with open_db(demo_target) as db:
        cited.add_responses(db, "answers.jsonl", cited_responses())
    return demo_target


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


@pytest.mark.both_engines
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


def test_the_contradicts_key_stores_minus_2_and_shows_it(app_db):
    """O (the passage states the opposite) stores 'contradicts', -2, and the page shows it back as the label."""
    at = open_app("pages/citations.py", "cic")
    assert at.button(key="cite_m2").label == "O · contradicts"
    assert "**O · contradicts**: the cited passage states the opposite of what the sentence states" in shown(at)
    at.button(key="cite_m2").click().run()
    at.button(key="cite_prev").click().run()
    assert any("Your label: -2 · contradicts" in s.value for s in at.success)
    assert rows(app_db, "SELECT sentence, passage_id, support, via FROM citation_labels WHERE source = 'cic'", {}) == [
        (1, "demo-doc-001:0", -2, "key")
    ]


def test_citation_page_is_blind_and_shows_hostile_sentences_inertly(app_db):
    from store import open_db
    from store import responses as cited
    from store.sources import ensure_source

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


def test_a_citation_gone_since_the_page_was_drawn_is_refused_plainly(app_db):
    from store import open_db
    from store import responses as cited

    at = open_app("pages/citations.py", "cia")
    assert position(at)[0] == 1  # sentence 1 citing demo-doc-001:0 is on screen
    with open_db(app_db) as db:  # the response is imported again, citing another passage
        cited.add_responses(
            db,
            "answers-v2.jsonl",
            [
                CitedResponse(
                    run="rag-a", turn_id="101_1", sentences=(CitedSentence("Walk first.", ("demo-doc-005:0",)),)
                )
            ],
        )
    at.button(key="cite_2").click().run()
    assert not at.exception
    assert any("Not saved" in e.value and "does not cite" in e.value for e in at.error)
    assert rows(app_db, "SELECT 1 FROM citation_labels WHERE source = 'cia'", {}) == []
    # the page now shows the queue as it is (a key press that re-runs only the item panel, in a browser, says
    # instead that the item is no longer stored)
    assert "Walk first." in shown(at) or any("no longer stored" in w.value for w in at.warning)
    from assess.errors import UnknownItem
    from assess.services import rag

    with open_db(app_db) as db, pytest.raises(UnknownItem, match="sentence 1 of run 'rag-a'.* does not cite"):
        rag.citation_screen(db, "cia", "101_1", rag.citation_key("rag-a", 1, "demo-doc-001:0"))


# ------------------------------------------------------------------------------------------- /ntr graded


def test_ntr_graded_keys_store_support_labels_beside_yes_no(app_db):
    from store import labels, open_db
    from store.nuggets import ntr

    with open_db(app_db) as db:
        order = [(t, *ntr.item_parts(i)) for t, i in ntr.ntr_order(db, "gus", "gold").items]
    at = open_app("pages/ntr.py", "gus")
    assert at.toggle(key=GRADED).value is False  # yes / no by default: the Y / N keys
    assert at.button(key="ntr_yes") and position(at, "Item") == (1, len(order))
    at.toggle(key=GRADED).set_value(True).run()
    assert "How far does the response support the gold nugget of information?" in shown(at)
    for key in ("ntr_g2", "ntr_g1", "ntr_g0"):
        at.button(key=key).click().run()
    assert position(at, "Item") == (4, len(order))
    graded = rows(
        app_db,
        "SELECT turn_id, nugget_id, run, support, via FROM ntr_support_labels WHERE source = 'gus' ORDER BY updated_at",
        {},
    )
    expected = [(order[i][0], order[i][1], order[i][2], v, "ui") for i, v in enumerate((2, 1, 0))]
    assert graded == expected
    assert rows(app_db, "SELECT 1 FROM ntr_labels WHERE source = 'gus'", {}) == []  # nothing written as yes/no
    at.button(key="ntr_undo").click().run()
    assert position(at, "Item") == (3, len(order))
    assert len(rows(app_db, "SELECT 1 FROM ntr_support_labels WHERE source = 'gus'", {})) == 2
    at.button(key="ntr_prev").click().run()
    assert any("Your answer: 1 · partial support" in s.value for s in at.success)
    at.toggle(key=GRADED).set_value(False).run()  # back to yes / no: Y writes a yes/no label
    at.button(key="ntr_yes").click().run()
    assert rows(app_db, "SELECT nugget_id, run, match FROM ntr_labels WHERE source = 'gus'", {}) == [
        (order[1][1], order[1][2], 1)
    ]
    with open_db(app_db) as db:  # read on the graded scale: the graded label of the item wins
        assert labels.ntr_support(db, "gus") == {order[0]: 2, order[1]: 1}


GRADED = "_switch_ntr-graded"


def test_graded_support_is_kept_per_person_for_the_next_session(app_db):
    """The switch is stored per assessor (the setting ntr-graded:NAME): a new session of gus opens graded,
    another assessor's opens yes / no."""
    from assess.services import preferences
    from store import open_db

    at = open_app("pages/ntr.py", "gus")
    assert at.toggle(key=GRADED).value is False
    at.toggle(key=GRADED).set_value(True).run()
    assert not at.exception, at.exception
    with open_db(app_db) as db:
        assert preferences.switch_on(db, "gus", "ntr-graded") is True
        assert preferences.switch_on(db, "hal", "ntr-graded") is False
    again = open_app("pages/ntr.py", "gus")  # a new browser session
    assert again.toggle(key=GRADED).value is True and again.button(key="ntr_g2")
    other = open_app("pages/ntr.py", "hal")
    assert other.toggle(key=GRADED).value is False and other.button(key="ntr_yes")


# ------------------------------------------------------------------------------------------- /nuggets importance


def test_nugget_importance_keys_mark_the_chosen_nugget_and_move_on(app_db):
    from store import open_db
    from store.nuggets import gold

    with open_db(app_db) as db:
        ids = [gold.add_text_nugget(db, "ivy", "101_1", t) for t in ("Start slowly", "Sleep well", "Buy shoes")]
    at = open_app("pages/nuggets.py", "ivy", turn="101_1")
    assert at.selectbox(key="nug_edit_101_1").value == ids[0]
    at.button(key="nug_importance_1").click().run()  # V
    assert at.selectbox(key="nug_edit_101_1").value == ids[1]
    at.button(key="nug_importance_0").click().run()  # O
    at.button(key="nug_importance_1").click().run()
    assert rows(
        app_db,
        "SELECT nugget_id, turn_id, importance, via FROM nugget_importance_labels WHERE source = 'ivy' ORDER BY nugget_id",
        {},
    ) == [(ids[0], "101_1", 1, "key"), (ids[1], "101_1", 0, "key"), (ids[2], "101_1", 1, "key")]
    assert at.selectbox(key="nug_edit_101_1").value == ids[2]  # all marked: the cursor stays
    assert "Importance of `[3]`: **vital** · 3 of 3 set" in shown(at)
    at.selectbox(key="nug_edit_101_1").set_value(ids[1]).run()
    at.button(key="nug_importance_1").click().run()  # a change of mind
    assert rows(app_db, "SELECT importance FROM nugget_importance_labels WHERE nugget_id = :n", {"n": ids[1]}) == [(1,)]


# ------------------------------------------------------------------------------------------- /scores


def test_scores_page_rag_numbers_by_hand(app_db):
    from store import labels, open_db
    from store import responses as cited
    from store.nuggets import gold, ntr
    from store.sources import ensure_source

    with open_db(app_db) as db:
        a, b, c = (gold.add_text_nugget(db, "g2", "101_1", t) for t in ("Start slowly", "Sleep well", "Buy shoes"))
        ensure_source(db, "lab", "import")
        for nid, support in ((a, 2), (b, 1)):  # c unjudged: no support
            labels.save(db, "ntr-support", "lab", ("101_1", nid, "demo-bm25"), support, mode="import", via="test")
        for nid, match in ((a, 1), (b, 0), (c, 1)):  # yes/no labels read as support / no support
            ntr.save_label(db, "lab", nid, "demo-dense", match, mode="import")
        labels.save(db, "importance", "lab", ("101_1", a), 1, mode="import", via="test")  # a vital
        labels.save(db, "importance", "lab", ("101_1", b), 0, mode="import", via="test")  # b okay, c none: okay
        for sentence, passage, value in ((1, "demo-doc-001:0", 2), (1, "demo-doc-002:3", 1), (2, "no-text-doc:7", 1)):
            cited.save_citation_label(db, "lab", "101_1", "rag-a", sentence, passage, value, mode="import")
        cited.save_citation_label(db, "lab", "101_2", "topics", 0, "demo-doc-003:0", 2, mode="import")
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "RAG"  # only the open tab runs
    at.run()
    at.selectbox(key="rag_ntr").select("lab").run()
    at.selectbox(key="rag_nuggets").select("g2").run()
    at.selectbox(key="rag_importance:g2").select("lab").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "weighted_lax" in d.value.columns)
    got = {r["run"]: r for r in table.to_dict("records")}
    # demo-bm25: a support (vital), b partial (okay), c unjudged (okay); weights 1, 0.5, 0.5
    assert got["demo-bm25"] == pytest.approx(
        {
            "run": "demo-bm25",
            "turns": 1,
            "ntr_recall_strict": 1 / 3,
            "ntr_recall_lax": 2 / 3,
            "all_strict": 1 / 3,
            "all_lax": 1.5 / 3,
            "vital_strict": 1.0,
            "vital_lax": 1.0,
            "weighted_strict": 1 / 2,
            "weighted_lax": (1 + 0.5 * 0.5) / 2,
        }
    )
    # demo-dense: yes, no, yes = support, none, support
    assert got["demo-dense"] == pytest.approx(
        {
            "run": "demo-dense",
            "turns": 1,
            "ntr_recall_strict": 2 / 3,
            "ntr_recall_lax": 2 / 3,
            "all_strict": 2 / 3,
            "all_lax": 2 / 3,
            "vital_strict": 1.0,
            "vital_lax": 1.0,
            "weighted_strict": 1.5 / 2,
            "weighted_lax": 1.5 / 2,
        }
    )
    caption = " ".join(c.value for c in at.caption)
    assert "1 unjudged gold nuggets count as no support" in caption
    assert "1 gold nuggets without an importance label count as okay" in caption
    at.selectbox(key="rag_citation").select("lab").run()
    cites = next(d.value for d in at.dataframe if "precision_lax" in d.value.columns)
    got = {r["run"]: r for r in cites.to_dict("records")}
    # rag-a: s1 cites 001 (fully) and 002 (partially), s2 cites no-text-doc (partially), s3 cites nothing.
    # strict: s1 supported -> recall 1/3; precise: 001 only of 3 citations -> 1/3.
    # lax: s1, s2 supported -> 2/3; precise: all three (002, partial beside a full one, supports s1 alone
    # under the lax oracle: ALCE's condition A) -> 3/3.
    assert got["rag-a"] == pytest.approx(
        {
            "run": "rag-a",
            "responses": 1,
            "unlabelled": 0,
            "uncited": 0,
            "uncited_left_out": 0,
            "unlabelled_citations": 0,
            "coverage": 1.0,
            "cannot_judge": 0,
            "sentences": 3,
            "citations": 3,
            "recall": 1 / 3,
            "precision": 1 / 3,
            "supported": 1 / 3,
            "recall_lax": 2 / 3,
            "precision_lax": 1.0,
            "supported_lax": 2 / 3,
            "supported_micro": 1 / 3,  # one response: the pooled share is its own
            "supported_lax_micro": 2 / 3,
        }
    )
    # topics: one sentence, its whole-response citation fully supports it
    assert got["topics"]["recall"] == got["topics"]["precision"] == got["topics"]["supported"] == 1.0
    assert [b.label for b in at.get("download_button")].count("Download CSV") >= 2


def test_scores_page_leaves_out_cannot_judge_citations_as_score_citations_does(app_db):
    """Issue 22 item 11: rag-a's s1 cites 001 (not supported) and 002 (partially), s2 cites no-text-doc, which
    lab cannot judge, s3 cites nothing. s2 is left out: strict recall 0 / 2, lax 1 / 2 (reading 'cannot judge'
    as unsupported would give 1 / 3); precision over 001 and 002: strict 0 / 2, lax 1 / 2. The page's row and
    caption say so with the same numbers as ``score citations --json``."""
    import json

    from store import open_db
    from store import responses as cited
    from store.sources import ensure_source
    from tests.helpers import run_cli

    with open_db(app_db) as db:
        ensure_source(db, "lab", "import")
        for sentence, passage, value in (
            (1, "demo-doc-001:0", 0),
            (1, "demo-doc-002:3", 1),
            (2, "no-text-doc:7", None),
        ):
            cited.save_citation_label(db, "lab", "101_1", "rag-a", sentence, passage, value, mode="import")
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "RAG"  # only the open tab runs
    at.run()
    at.selectbox(key="rag_citation").select("lab").run()
    assert not at.exception
    cites = next(d.value for d in at.dataframe if "precision_lax" in d.value.columns)
    row = next(r for r in cites.to_dict("records") if r["run"] == "rag-a")
    assert row == pytest.approx(
        {
            "run": "rag-a",
            "responses": 1,
            "unlabelled": 0,
            "uncited": 0,
            "uncited_left_out": 0,
            "unlabelled_citations": 0,
            "coverage": 1.0,
            "cannot_judge": 1,
            "sentences": 3,
            "citations": 3,
            "recall": 0.0,
            "precision": 0.0,
            "supported": 0.0,
            "recall_lax": 1 / 2,
            "precision_lax": 1 / 2,
            "supported_lax": 1 / 2,
            "supported_micro": 0.0,
            "supported_lax_micro": 1 / 2,
        }
    )
    caption = " ".join(c.value for c in at.caption)
    assert "1 citations labelled 'cannot judge' (column cannot_judge) count as labelled and are left out" in caption
    cli = run_cli("score", "citations", "--db", app_db, "--source", "lab", "--json", check=True)
    assert json.loads(cli.stdout)["runs"]["rag-a"] == {k: v for k, v in row.items() if k != "run"}


def test_scores_page_reads_the_nugget_sets_own_importance_as_score_nuggets_does(app_db):
    """Issue 22 item 7: with no importance source chosen, the RAG tab reads the nugget set's own importance
    labels (as `score nuggets --db` does), so both give Vital 1 here, not 0 (every nugget okay)."""
    import json

    from store import labels, open_db
    from store.nuggets import gold
    from store.sources import ensure_source
    from tests.helpers import run_cli

    with open_db(app_db) as db:
        a, b = (gold.add_text_nugget(db, "g4", "101_1", t) for t in ("Start slowly", "Sleep well"))
        ensure_source(db, "lab", "import")
        for nid, support in ((a, 2), (b, 0)):
            labels.save(db, "ntr-support", "lab", ("101_1", nid, "demo-bm25"), support, mode="import", via="test")
        labels.save(db, "importance", "g4", ("101_1", a), 1, mode="import", via="test")  # a vital, by the set
        labels.save(db, "importance", "g4", ("101_1", b), 0, mode="import", via="test")
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "RAG"  # only the open tab runs
    at.run()
    at.selectbox(key="rag_ntr").select("lab").run()
    at.selectbox(key="rag_nuggets").select("g4").run()
    assert not at.exception
    assert at.selectbox(key="rag_importance:g4").value == "g4"
    table = next(d.value for d in at.dataframe if "weighted_lax" in d.value.columns)
    page = {r["run"]: r for r in table.to_dict("records")}["demo-bm25"]
    # a (vital) supported, b (okay) not: Vital 1, Weighted 1 / (1 + 0.5), All 1/2
    assert (page["vital_strict"], page["weighted_strict"], page["all_strict"]) == pytest.approx((1.0, 2 / 3, 0.5))
    cli = run_cli("score", "nuggets", "--db", app_db, "--ntr-source", "lab", "--nugget-source", "g4", "--json")
    assert cli.returncode == 0, cli.stderr
    out = json.loads(cli.stdout)
    assert out["importance_source"] == "g4"
    mean = out["nugget_scores"]["runs"]["demo-bm25"]["original"]["mean"]
    assert mean == pytest.approx({k: v for k, v in page.items() if k not in ("run", "turns")})
    # "none" stays a choice: every nugget okay, Vital 0
    at.selectbox(key="rag_importance:g4").select_index(0).run()
    assert at.selectbox(key="rag_importance:g4").value is None
    table = next(d.value for d in at.dataframe if "weighted_lax" in d.value.columns)
    assert {r["run"]: r for r in table.to_dict("records")}["demo-bm25"]["vital_strict"] == 0.0


def test_hostile_source_and_run_names_on_scores_are_inert(app_db):
    from store import labels, open_db
    from store.nuggets import gold
    from store.sources import ensure_source
    from tests.helpers import HOSTILE_LLM

    with open_db(app_db) as db:
        nid = gold.add_text_nugget(db, "g3", "101_1", "Start slowly")
        ensure_source(db, HOSTILE_LLM, "llm")
        labels.save(db, "ntr-support", HOSTILE_LLM, ("101_1", nid, "demo-bm25"), 1, mode="llm", via="llm")
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "RAG"  # only the open tab runs
    at.run()
    at.selectbox(key="rag_ntr").select(HOSTILE_LLM).run()
    at.selectbox(key="rag_nuggets").select("g3").run()
    caption = next(c.value for c in at.caption if "labels of" in c.value)
    assert "![l](" not in caption and "](http" not in caption  # escaped: no image, no link
    table = next(d.value for d in at.dataframe if "all_lax" in d.value.columns)
    assert table.to_dict("records")[0]["all_lax"] == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------- real data


def test_a_newcomer_labels_the_ikat_2025_topics_citations(tmp_path, monkeypatch):
    from assess.services.loading import load_file
    from store import open_db
    from tests.conftest import shared_file

    topics = shared_file("data", "irlabamsterdam-iKAT", "2025", "data", "2025_test_topics.json")
    target = str(tmp_path / "store.db")
    monkeypatch.setenv("ASSESS_DB", target)
    monkeypatch.setenv("ASSESS_OPEN", "1")  # a store of one's own: sign-in by name only when opened so
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with open_db(target) as db:
        load_file(db, "topics", topics)
        assert load_file(db, "ikat-responses", topics)["citations"] == 398
    ((distinct,),) = rows(
        target, "SELECT COUNT(*) FROM (SELECT DISTINCT turn_id, run, sentence, passage_id FROM response_citations) x"
    )
    at = open_app("pages/citations.py", "nel")
    assert position(at) == (1, distinct)  # 398 citations, a passage cited twice by one response counted once
    assert "The response as a whole" in shown(at)
    assert any("Passage text not available" in w.value for w in at.warning)  # ClueWeb22 text is licensed
    at.button(key="cite_1").click().run()
    assert position(at) == (2, distinct)
    assert rows(target, "SELECT sentence, support FROM citation_labels WHERE source = 'nel'") == [(0, 1)]


# ------------------------------------------------------------------------------------------- properties


@given(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1),  # a run name may hold any character
    st.integers(min_value=0, max_value=10_000),
    st.text(st.characters(blacklist_characters=" ", blacklist_categories=("Cs",)), min_size=1),
)
def test_citation_queue_ids_round_trip_and_spell_items_as_the_registry(run, sentence, passage):
    from assess.services.rag import citation_key, citation_parts
    from assess.tasks import LABEL_KINDS, Task

    assert citation_parts(citation_key(run, sentence, passage)) == (run, sentence, passage)
    # one spelling of an item: the label history's, less the turn (and a pre-judgment's item_id)
    history = LABEL_KINDS[Task.CITATION].history_item("101_1", run, sentence, passage)
    assert history == f"101_1 {citation_key(run, sentence, passage)}"


@given(st.lists(st.integers(), unique=True, min_size=1), st.data())
def test_importance_cursor_moves_to_an_unmarked_nugget_or_stays(ids, data):
    from assess.services.rag import next_without_importance

    marked = dict.fromkeys(data.draw(st.lists(st.sampled_from(ids), unique=True)), 1)
    current = data.draw(st.sampled_from(ids))
    after = next_without_importance(ids, marked, current)
    if all(i in marked for i in ids if i != current):
        assert after == current
    else:
        assert after not in marked and after != current


CITED = st.lists(st.sampled_from(["p1", "p2", "p3", "p 4"]), max_size=3, unique=True)


@given(st.lists(CITED, max_size=4), CITED, st.data())
def test_labelling_every_citation_item_makes_a_response_scorable(sentence_cites, own, data):
    """Whatever mix of sentence and whole-response citations a stored response has, labelling each of its
    citation items (what /citations asks) is exactly what the citation measures need."""
    from assess.measures.citations import response_citation_scores
    from assess.services.rag import _units

    response = {
        "citations": own,
        "sentences": [{"sentence": n, "citations": c} for n, c in enumerate(sentence_cites, 1)],
    }
    items = [(0, p) for p in own] + [(n, p) for n, c in enumerate(sentence_cites, 1) for p in c]
    given_labels = {item: data.draw(st.sampled_from([-1, 0, 1, 2, None])) for item in items}  # None: cannot judge
    (sentences, whole), labels_by_index = _units(response, given_labels)
    scores = response_citation_scores(sentences, labels_by_index, response_citations=whole, require_all=True)
    assert scores.unlabelled == 0 and scores.sentences == max(1, len(sentence_cites))
    every_sentence_cites = bool(own) or bool(sentence_cites and all(sentence_cites))
    if every_sentence_cites and all(v == 2 for v in given_labels.values()):
        assert scores.supported == scores.recall == scores.precision == 1.0
