"""Every source picker opens on the choice a person means (issue 32): /audit's reference is the human source with
the most labels and its judge an LLM; /scores' agreement, run rankings and RAG pickers open on the most labelled
human source, an LLM, the gold nuggets and the most labelled NtR and citation sources. A new assessor, first in
name order with a handful of labels on her own nuggets, is never the default."""

from __future__ import annotations

import pytest

from tests.app.test_audit_page import open_audit
from tests.helpers import open_app


@pytest.fixture
def app_db(demo_target, monkeypatch):
    """The demo, and amy: 3 passage labels, her own nugget set with one NtR label, one citation label; 'lab' holds
    three citation labels."""
    from store import labels, open_db, queue
    from store import responses as cited
    from store.db import rows
    from store.nuggets import gold, ntr
    from store.sources import ensure_source
    from tests.app.test_rag_pages import cited_responses

    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with open_db(demo_target) as db:
        cited.add_responses(db, "answers.jsonl", cited_responses())
        amy = ensure_source(db, "amy", "assessor")
        for r in rows(db, "SELECT turn_id, passage_id FROM pool ORDER BY turn_id, passage_id")[:3]:
            queue.save_passage_label(db, amy, r["turn_id"], r["passage_id"], 2, mode="blind", via="ui")
        nugget = gold.add_text_nugget(db, "amy", "101_1", "Start slowly")
        ntr.save_label(db, "amy", nugget, "demo-dense", 1, mode="blind")
        ensure_source(db, "lab", "import")
        cited.save_citation_label(db, "amy", "101_1", "rag-a", 1, "demo-doc-001:0", 2, mode="blind")
        for sentence, passage in ((1, "demo-doc-001:0"), (1, "demo-doc-002:3"), (2, "no-text-doc:7")):
            cited.save_citation_label(db, "lab", "101_1", "rag-a", sentence, passage, 1, mode="import")
        assert labels.counts(db, "passage", ["amy", "demo-ann", "nist"]) == {"amy": 3, "demo-ann": 162, "nist": 0}
    return demo_target


def test_audit_opens_on_the_most_labelled_human_and_an_llm(app_db):
    at = open_audit()
    assert at.selectbox(key="au_ref").value == "demo-ann"  # 162 labels; amy (3) comes first by name
    assert at.selectbox(key="au_judge").value == "llm:demo-gpt"


def test_scores_pickers_open_on_gold_and_the_most_labelled_sources(app_db):
    at = open_app("pages/scores.py")
    assert not at.exception
    assert (at.selectbox(key="ag_a").value, at.selectbox(key="ag_b").value) == ("demo-ann", "llm:demo-gpt")
    at.session_state["sc_tab"] = "Run rankings"  # only the open tab runs
    at.run()
    assert (at.selectbox(key="rk_a").value, at.selectbox(key="rk_b").value) == ("demo-ann", "llm:demo-gpt")
    at.session_state["sc_tab"] = "RAG"
    at.run()
    assert at.selectbox(key="rag_nuggets").value == "gold"
    assert at.selectbox(key="rag_ntr").value == "llm:demo-gpt"  # 192 labels against amy's one
    assert at.selectbox(key="rag_citation").value == "lab"
    assert not any("score no run" in i.value for i in at.info)


def test_audit_states_the_minimum_of_shared_items_and_lists_pairs_below_it(app_db):
    """The human ceiling's minimum (30) is said beside the matrix; amy and demo-ann share 3 items: listed, not
    pooled, so the ceiling is demo-ann x demo-ben's alone, as `audit agreement --json` has it."""
    import html
    import json

    from tests.helpers import run_cli

    at = open_audit(tab="Side by side")
    at.multiselect(key="au_mx_sources_passage").set_value(["amy", "demo-ann", "demo-ben", "llm:demo-gpt"]).run()
    assert not at.exception
    caption = next(html.unescape(c.value) for c in at.caption if "Human ceiling" in c.value)
    assert "share at least 30 items" in caption
    cli = json.loads(
        run_cli(
            "audit", "agreement", "--source", "amy", "--source", "demo-ann", "--source", "demo-ben",
            "--source", "llm:demo-gpt", "--bootstrap", "0", "--json", db=app_db, check=True,
        ).stdout
    )  # fmt: skip
    below = cli["ceiling_below_minimum"]
    assert cli["ceiling_min_shared"] == 30 and below and {a for a, _, n in below if n < 30} == {"amy"}
    for a, b, n in below:
        assert f"`{a}` and `{b}` ({n} items)" in caption
    assert cli["ceiling"]["pairs"] == [["demo-ann", "demo-ben"]] and cli["ceiling"]["n"] == 109
    pairs = next(d.value for d in at.dataframe if "kinds" in d.value.columns)
    ceiling = pairs[pairs["a"] == "human ceiling"].iloc[0]
    assert (ceiling["b"], ceiling["n"]) == ("1 human pair(s)", 109)


def test_the_bradley_terry_tab_opens_on_the_source_with_the_most_battles(app_db, tmp_path):
    import json

    from tests.helpers import run_cli

    battle = {"topic_id": "101_1", "run_a": "demo-bm25", "run_b": "demo-dense", "winner": "b"}
    for source, n in (("arena", 1), ("zed", 3)):
        file = tmp_path / f"{source}.jsonl"
        file.write_text("".join(json.dumps({**battle, "topic_id": f"101_{i + 1}"}) + "\n" for i in range(n)))
        run_cli("battles", "import", str(file), "--source", source, db=app_db, check=True)
    at = open_app("pages/scores.py")
    at.session_state["sc_tab"] = "Bradley-Terry"  # only the open tab runs
    at.run()
    assert not at.exception
    assert at.selectbox(key="bt_source").value == "zed"  # 3 battles; arena (1) comes first by name
