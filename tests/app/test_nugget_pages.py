"""The nugget workbench pages through AppTest: stored spans, labels, decisions and exports after interactions.

The span-selection component runs JavaScript, which AppTest does not execute; its event is sent the
way the browser sends it (a trigger value on the component's events widget, see :func:`send_span`).
The real selection and key press are covered in tests/browser/test_nugget_browser.py.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from store import settings
from tests.helpers import ROOT, open_app, rows  # noqa: F401

UNICODE_PASSAGE = "demo-doc-022:0"


@pytest.fixture
def app_db(store_target, monkeypatch):
    """The app's store, once per engine: the pages create the demo in it on first use."""
    path = store_target
    monkeypatch.setenv("ASSESS_DB", path)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    monkeypatch.delenv("ASSESS_NLI_MODEL", raising=False)
    return path


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def component(at: AppTest, name: str = "assess_span_picker"):
    found = [
        e for e in at.main if type(e).__name__ == "UnknownElement" and getattr(e.proto, "component_name", "") == name
    ]
    assert found, "the span picker is not on the page"
    return found


def send_span(at: AppTest, start16: int, end16: int, text: str, *, index: int = 0, passage: str | None = None):
    """Do what the component does on N: set its 'span' trigger, then rerun the script."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    element = component(at)[index]
    data = json.loads(element.proto.mixed.json if element.proto.HasField("mixed") else element.proto.json)
    states = at._tree.get_widget_states()
    trigger = WidgetState(id=_make_trigger_id(element.proto.id, "events"))
    trigger.json_trigger_value = json.dumps(
        [
            {
                "event": "span",
                "value": {"id": passage or data["id"], "start": start16, "end": end16, "text": text, "units": "utf-16"},
            }
        ]
    )
    states.widgets.append(trigger)
    at._run(states)
    assert not at.exception, at.exception
    return data


def picker_text(at: AppTest, index: int = 0) -> str:
    element = component(at)[index]
    data = json.loads(element.proto.mixed.json if element.proto.HasField("mixed") else element.proto.json)
    return "".join(piece for piece, _ in data["segments"])


# ------------------------------------------------------------------------------------------- passage nuggets


def test_nuggets_page_defaults_to_all_pooled_then_own_labels(app_db):
    at = start("pages/nuggets.py", assessor="amy", turn="101_1")
    assert at.selectbox(key="nug_source_101_1").value == ""  # no labels of amy yet: all pooled
    assert at.selectbox(key="nug_passage_101_1").label == "Passage (16 relevant)"
    from store import open_db, queue

    db = open_db(app_db)
    queue.save_passage_label(db, "amy", "101_1", "demo-doc-001:0", 3)
    queue.save_passage_label(db, "amy", "101_1", UNICODE_PASSAGE, 1)
    again = start("pages/nuggets.py", assessor="amy", turn="101_1")
    assert again.selectbox(key="nug_source_101_1").value == "amy"
    assert again.selectbox(key="nug_passage_101_1").options == ["demo-doc-001:0 · 164 words · grade 3"]
    again.selectbox(key="nug_threshold").set_value(1).run()
    assert len(again.selectbox(key="nug_passage_101_1").options) == 2
    assert again.selectbox(key="nug_source_101_1").options == [
        "your labels (amy)",
        "all pooled passages with text",
    ]  # blind: no other source offered
    settings.set_setting(db, "judging_mode", "shown")
    shown = start("pages/nuggets.py", assessor="amy", turn="101_1")
    assert shown.selectbox(key="nug_source_101_1").options == [
        "your labels (amy)",
        "demo-ann",  # the demo's simulated assessor and two LLMs labelled turn 101_1
        "llm:demo-gpt",
        "llm:demo-llama",
        "all pooled passages with text",
    ]
    shown.selectbox(key="nug_source_101_1").set_value("llm:demo-gpt").run()
    options = shown.selectbox(key="nug_passage_101_1").options
    assert len(options) == len(
        rows(app_db, "SELECT 1 FROM passage_labels WHERE source = 'llm:demo-gpt' AND turn_id = '101_1' AND grade >= 2")
    )
    assert not any("grade" in o for o in options)  # only one's own grades are printed


def test_selection_event_stores_the_exact_unicode_span(app_db):
    at = start("pages/nuggets.py", assessor="amy", turn="101_1", passage=UNICODE_PASSAGE)
    passage = picker_text(at)
    assert rows(app_db, "SELECT text FROM passages WHERE id = :id", {"id": UNICODE_PASSAGE}) == [(passage,)]
    expected = []
    for needle in ["🏃\u200d♀️ — new intake", "初心者歓迎", "بالتوفيق", "Zoe\u0308,"]:
        i = passage.index(needle)
        s16 = utf16(passage[:i])
        send_span(at, s16, s16 + utf16(needle), needle)
        expected.append((UNICODE_PASSAGE, i, i + len(needle), needle, "selected", "amy"))
        assert any("Nugget added" in s.value for s in at.success)
    stored = rows(
        app_db,
        "SELECT passage_id, start_char, end_char, text, span_method, source FROM nuggets "
        "WHERE source = 'amy' ORDER BY id",
    )
    assert stored == expected
    assert all(passage[s:e] == t for _, s, e, t, _, _ in stored)
    # the new spans come back highlighted
    element = component(at)[0]
    segments = json.loads(element.proto.mixed.json if element.proto.HasField("mixed") else element.proto.json)[
        "segments"
    ]
    assert [p for p, marked in segments if marked] == [e[3] for e in sorted(expected, key=lambda e: e[1])]
    # a selection whose text does not match the passage (stale page) is refused, nothing stored
    send_span(at, 0, 5, "Other")
    assert any("Not stored" in e.value for e in at.error)
    assert len(rows(app_db, "SELECT * FROM nuggets WHERE source = 'amy'")) == len(expected)


def test_typed_nugget_edit_and_delete(app_db):
    at = start("pages/nuggets.py", assessor="amy", turn="101_1", passage="demo-doc-001:0")
    at.text_input(key="nug_typed").set_value("walk-run   PLAN")
    at.button(key="nug_add_typed").click().run()
    assert any("found at" in s.value for s in at.success)
    ((nid, text, start_, end_),) = rows(
        app_db, "SELECT id, text, start_char, end_char FROM nuggets WHERE source = 'amy'"
    )
    assert text == "walk-run plan"
    at.text_input(key="nug_typed").set_value("Run slowly on hills")
    at.button(key="nug_add_typed").click().run()
    assert any("free text" in s.value for s in at.success)
    assert at.dataframe[0].value["text"].tolist() == ["walk-run plan", "Run slowly on hills"]

    at.selectbox(key="nug_edit_101_1").set_value(nid).run()
    at.text_input(key=f"nug_text_{nid}").set_value("complete beginners")
    at.selectbox(key=f"nug_rel_{nid}").set_value("4")
    at.button(key="nug_save").click().run()
    assert rows(
        app_db, "SELECT text, relevance, start_char IS NOT NULL AS located FROM nuggets WHERE id = :id", {"id": nid}
    ) == [("complete beginners", 4, 1)]
    at.button(key="nug_delete").click().run()
    assert rows(app_db, "SELECT text FROM nuggets WHERE source = 'amy'") == [("Run slowly on hills",)]


# ------------------------------------------------------------------------------------------- NtR matching


def ntr_position(at: AppTest) -> tuple[int, int]:
    import re

    for m in at.markdown:
        found = re.match(r"Item (\d+) of (\d+)", m.value)
        if found:
            return int(found.group(1)), int(found.group(2))
    raise AssertionError("no item line")


def test_ntr_page_stores_answers_resumes_and_feeds_agreement(app_db):
    at = start("pages/ntr.py", assessor="nia")
    first, total = ntr_position(at)
    order = rows(
        app_db,
        """
        SELECT n.turn_id, r.run, n.id FROM nuggets n JOIN responses r ON r.turn_id = n.turn_id
        JOIN turns t ON t.id = n.turn_id JOIN conversations c ON c.id = t.conversation_id
        WHERE n.source = 'gold' AND length(trim(r.text)) > 0
        ORDER BY c.rowid, t.position, r.run, int_prefix(trim(n.key, '[]'))""",
        {},  # through the store: int_prefix is the store's function
    )
    assert (first, total) == (1, len(order))
    assert "Is the gold nugget of information covered in the response?" in " ".join(m.value for m in at.markdown)
    page_text = " ".join(str(getattr(e, "value", "")) for e in at.main)
    assert "llm:demo-gpt" not in page_text  # blind
    at.button(key="ntr_yes").click().run()
    at.button(key="ntr_no").click().run()
    at.button(key="ntr_yes").click().run()
    assert ntr_position(at) == (4, total)
    labels = rows(
        app_db,
        "SELECT turn_id, run, nugget_id, match, mode, via FROM ntr_labels WHERE source = 'nia' ORDER BY updated_at",
    )
    assert labels == [(*order[0], 1, "blind", "ui"), (*order[1], 0, "blind", "ui"), (*order[2], 1, "blind", "ui")]
    assert rows(app_db, "SELECT kind FROM sources WHERE name = 'nia'") == [("assessor",)]
    at.button(key="ntr_undo").click().run()  # back to item 3, label removed
    assert ntr_position(at) == (3, total)
    assert len(rows(app_db, "SELECT * FROM ntr_labels WHERE source = 'nia'")) == 2
    at.button(key="ntr_prev").click().run()
    assert ntr_position(at) == (2, total) and any("Your answer: no" in s.value for s in at.success)
    at.button(key="ntr_yes").click().run()  # change of mind, then next unjudged
    assert rows(
        app_db,
        "SELECT match FROM ntr_labels WHERE source = 'nia' AND nugget_id = :nid AND run = :run",
        {"nid": order[1][2], "run": order[1][1]},
    ) == [(1,)]
    assert ntr_position(at) == (3, total)
    again = start("pages/ntr.py", assessor="nia")  # a fresh session resumes
    assert ntr_position(again) == (3, total)

    from tests.helpers import run_cli

    out = run_cli("agreement", "--task", "ntr", "--a", "nia", "--b", "llm:demo-gpt", "--json", db=app_db)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["n"] == 2


# ------------------------------------------------------------------------------------------- duplicates


def test_duplicates_page_suggests_and_records_decisions(app_db):
    from store import nuggets as nugget_store
    from store import open_db

    at = start("pages/duplicates.py", assessor="dan")  # dan has no nuggets: the gold set
    assert at.selectbox(key="dup_source").value == "gold"
    db = open_db(app_db)
    n1 = nugget_store.gold.add_text_nugget(db, "dan", "101_2", "Run before your shift, not after it")
    n2 = nugget_store.gold.add_text_nugget(db, "dan", "101_2", "Run before your shift and not after it")
    n3 = nugget_store.gold.add_text_nugget(db, "dan", "101_2", "Protect your sleep")
    at = start("pages/duplicates.py", assessor="dan")
    assert at.selectbox(key="dup_source").value == "dan" and at.selectbox(key="dup_turn_dan").value == "101_2"
    at.button(key="dup_suggest").click().run()
    assert any("1 pair(s) suggested by lexical" in s.value for s in at.success)
    assert "Pair 1 of 1 open" in [h.value for h in at.subheader]
    at.button(key="dup_same").click().run()
    assert rows(app_db, "SELECT nugget_a, nugget_b, decision, decided_by, suggested_by FROM nugget_duplicates") == [
        (n1, n2, "same", "dan", "lexical")
    ]
    assert rows(app_db, "SELECT id, in_dedup FROM nuggets WHERE source = 'dan' ORDER BY id") == [
        (n1, 1),
        (n2, 0),
        (n3, 1),
    ]
    assert any("Every suggested pair" in s.value for s in at.success)
    # a pair marked by hand: "A covers B" with A = the third nugget, B = the first
    at.selectbox(key="dup_manual_a_101_2").set_value(n3)
    at.selectbox(key="dup_manual_b_101_2").set_value(n1)
    at.selectbox(key="dup_manual_decision_101_2").set_value("a_covers_b")
    at.button(key="dup_manual_save").click().run()
    assert rows(
        app_db,
        "SELECT decision, suggested_by FROM nugget_duplicates WHERE nugget_a = :a AND nugget_b = :b",
        {"a": n1, "b": n3},
    ) == [("b_covers_a", "manual")]
    assert rows(app_db, "SELECT id, in_dedup FROM nuggets WHERE source = 'dan' ORDER BY id") == [
        (n1, 0),
        (n2, 0),
        (n3, 1),
    ]
    assert at.caption[0].value.startswith("3 nuggets · 1 kept in the de-duplicated set")


# ------------------------------------------------------------------------------------------- gold responses


def test_gold_response_page_stores_text_and_nuggets_used(app_db):
    at = start("pages/gold_response.py", assessor="gia", turn="101_3")
    assert at.selectbox(key="gold_turn").value == "101_3"
    assert at.multiselect(key="gold_sources").value == ["gold"]
    gold = rows(app_db, "SELECT id, key FROM nuggets WHERE source = 'gold' AND turn_id = '101_3' ORDER BY id")
    ((pooled,),) = rows(
        app_db,
        "SELECT COUNT(*) FROM pool p JOIN passages s ON s.id = p.passage_id "
        "WHERE p.turn_id = '101_3' AND s.text IS NOT NULL",
    )
    headers = [h.value for h in at.subheader]
    assert f"Nuggets ({len(gold)})" in headers and f"Relevant passages ({pooled})" in headers  # gia judged nothing
    at.text_area(key="gold_text_101_3").set_value("Two years after a meniscus operation most people can run.")
    at.multiselect(key="gold_used_101_3").set_value([gold[0][0], gold[2][0]])
    at.button(key="gold_save").click().run()
    assert any("Gold response saved" in s.value for s in at.success)
    assert rows(app_db, "SELECT source, turn_id, text, nuggets_used FROM gold_responses WHERE source = 'gia'") == [
        (
            "gia",
            "101_3",
            "Two years after a meniscus operation most people can run.",
            json.dumps(sorted([gold[0][0], gold[2][0]])),
        )
    ]
    again = start("pages/gold_response.py", assessor="gia", turn="101_3")  # comes back filled in
    assert again.text_area(key="gold_text_101_3").value.startswith("Two years after")
    assert again.multiselect(key="gold_used_101_3").value == sorted([gold[0][0], gold[2][0]])
    again.text_area(key="gold_text_101_3").set_value("   ")
    again.button(key="gold_save").click().run()
    assert any("needs some text" in e.value for e in again.error)


# ------------------------------------------------------------------------------------------- GFRC2 response nuggets


def test_response_nuggets_page_marks_words_and_scores(app_db):
    at = start("pages/response_nuggets.py")
    at.text_input(key="rn_new_name").set_value("fair")
    at.button(key="rn_save_study").click().run()
    assert any("Study saved" in s.value for s in at.success)
    assert rows(app_db, 'SELECT name, max_level, "L" FROM gfrc_studies') == [("fair", 2, 1000)]
    at.selectbox(key="rn_run").set_value("demo-dense").run()
    at.selectbox(key="rn_conv").set_value("101").run()
    pickers = component(at)
    assert len(pickers) == 6  # one per system turn
    # mark words 2-4 of S1 by numbers, as she / G4 at level 2
    at.selectbox(key="rn_group_fair_PRONOUN").set_value("she")
    at.selectbox(key="rn_group_fair_HINDEX").set_value("G4")
    at.selectbox(key="rn_w_turn").set_value("101_1")
    at.number_input(key="rn_w_start").set_value(2)
    at.number_input(key="rn_w_end").set_value(4)
    at.button(key="rn_w_mark").click().run()
    # then select text in S2 and press N, as he / G1 at level 1
    at.selectbox(key="rn_level").set_value(1)
    at.selectbox(key="rn_group_fair_PRONOUN").set_value("he")
    at.selectbox(key="rn_group_fair_HINDEX").set_value("G1").run()
    s2 = picker_text(at, 1)
    words = s2.split()
    needle = " ".join(words[4:7])
    i = s2.index(needle)
    send_span(at, utf16(s2[:i]) + 1, utf16(s2[: i + len(needle)]), needle[1:], index=1)  # from inside word 5
    stored = rows(app_db, "SELECT run, turn_id, start_word, end_word, level, groups FROM response_nuggets ORDER BY id")
    assert stored == [
        ("demo-dense", "101_1", 2, 4, 2, json.dumps({"PRONOUN": "she", "HINDEX": "G4"})),
        ("demo-dense", "101_2", 5, 7, 1, json.dumps({"PRONOUN": "he", "HINDEX": "G1"})),
    ]
    from assess import nuggets as pure
    from store import nuggets as nugget_store
    from store import open_db

    offsets = pure.documents.response_offsets(
        nugget_store.responses.system_conversation(open_db(app_db), "demo-dense", "101")
    )
    table = at.dataframe[0].value
    assert table["words"].tolist() == [
        f"{offsets['101_1'][0] + 2}-{offsets['101_1'][0] + 4}",
        f"{offsets['101_2'][0] + 5}-{offsets['101_2'][0] + 7}",
    ]
    assert any(m.value.startswith("**demo-dense on 101:** GFRC2 ") for m in at.markdown)
    # an overlapping mark is refused and nothing is stored
    at.button(key="rn_w_mark").click().run()
    assert any("overlap" in e.value for e in at.error)
    assert len(rows(app_db, "SELECT * FROM response_nuggets")) == 2


# ------------------------------------------------------------------------------------------- AEPD aspects


def test_aspects_page_lists_links_assigns_and_scores(app_db):
    at = start("pages/aspects.py", turn="101_1")
    assert at.selectbox(key="asp_turn").value == "101_1"
    for text, ptkb in [("Plan length before the October race", ["7"]), ("Race-day tips", [])]:
        at.text_input(key="asp_new_101_1").set_value(text)
        at.multiselect(key="asp_new_ptkb_101_1").set_value(ptkb)
        at.button(key="asp_add").click().run()
    aspects = rows(app_db, "SELECT id, position, text FROM aspects WHERE turn_id = '101_1' ORDER BY position")
    assert [a[2] for a in aspects] == ["Plan length before the October race", "Race-day tips"]
    assert rows(app_db, "SELECT aspect_id, statement_id FROM aspect_ptkb") == [(aspects[0][0], "7")]
    at.selectbox(key="asp_run").set_value("demo-bm25").run()
    response = picker_text(at)
    needle = "On race day, start near the back"
    i = response.index(needle)
    at.selectbox(key="asp_target_101_1").set_value(aspects[1][0]).run()
    send_span(at, utf16(response[:i]), utf16(response[: i + len(needle)]), needle)
    assert rows(app_db, "SELECT aspect_id, run, text FROM aspect_content") == [(aspects[1][0], "demo-bm25", needle)]
    # edit the text directly, and link the second aspect to a statement
    at.text_area(key=f"asp_content_{aspects[0][0]}_demo-bm25").set_value("10K is a road race")
    at.button(key="asp_save_texts").click().run()
    assert rows(app_db, "SELECT text FROM aspect_content WHERE aspect_id = :id", {"id": aspects[0][0]}) == [
        ("10K is a road race",)
    ]
    at.selectbox(key="asp_edit_101_1").set_value(aspects[1][0]).run()
    at.multiselect(key=f"asp_ptkb_{aspects[1][0]}").set_value(["3"])
    at.button(key="asp_save").click().run()
    assert rows(app_db, "SELECT aspect_id, statement_id FROM aspect_ptkb ORDER BY aspect_id") == [
        (aspects[0][0], "7"),
        (aspects[1][0], "3"),
    ]
    scores = at.dataframe[0].value
    assert scores["id"].tolist() == ["demo-bm25/101_1", "demo-dense/101_1", "demo-rerank/101_1"]
    bm25 = scores.iloc[0]
    assert bm25["AR"] == 1.0 and 0 <= bm25["P"] <= 1 and 0 <= bm25["D"] <= 1  # both aspects covered


def marked(at: AppTest, index: int = 0) -> list[str]:
    element = component(at)[index]
    data = json.loads(element.proto.mixed.json if element.proto.HasField("mixed") else element.proto.json)
    return [piece for piece, is_marked in data["segments"] if is_marked]


def test_aspects_page_prefills_from_an_llm_and_highlights_assigned_content(app_db):
    from assess.llm.prompts import parse_aspects
    from store import nuggets as nugget_store
    from store import open_db, prejudgments

    start("pages/aspects.py", turn="101_1")  # creates the demo store
    db = open_db(app_db)
    response = nugget_store.responses.response_text(db, "demo-bm25", "101_1")
    raw = json.dumps(
        {
            "aspects": [
                {"aspect": "What a 10K is", "ptkb": [7], "text": "The 10K is a road race of 10 kilometres"},
                {"aspect": "Race day <b>tips</b> **now**", "ptkb": [], "text": "On race day, start near the back"},
                {"aspect": "Plan length", "ptkb": [3], "text": ""},
            ]
        }
    )
    status, parsed, _ = parse_aspects(raw, source=response, statements=[str(i) for i in range(1, 12)])
    prejudgments.ensure_llm_source(db, "llm:demo-aepd", "demo-aepd", "aepd-aspects@test")
    prejudgments.save(
        db,
        prejudgments.Prejudgment(
            "llm:demo-aepd", "aepd", "101_1", "demo-bm25", "demo-aepd", "aepd-aspects@test", "h1", raw, status, parsed
        ),
    )
    at = start("pages/aspects.py", turn="101_1")
    assert not at.text_area and not component_list(at)  # no aspects yet
    at.selectbox(key="asp_run").set_value("demo-bm25").run()
    assert at.selectbox(key="asp_llm_source").options == ["llm:demo-aepd"]
    preview = at.dataframe[0].value
    assert preview["aspect"].tolist() == ["What a 10K is", "Race day <b>tips</b> **now**", "Plan length"]
    assert preview["words"].tolist() == [9, 7, 0]
    at.button(key="asp_prefill").click().run()
    assert any("3 aspects added" in s.value for s in at.success)
    listed = nugget_store.aspects.turn_aspects(db, "101_1")
    assert [(a["aspect"], a["ptkb"], a["content"]) for a in listed] == [
        ("What a 10K is", ["7"], {"demo-bm25": "The 10K is a road race of 10 kilometres"}),
        ("Race day <b>tips</b> **now**", [], {"demo-bm25": "On race day, start near the back"}),
        ("Plan length", ["3"], {"demo-bm25": ""}),
    ]
    # the assigned content is highlighted in the response, and shown in the editable texts
    assert marked(at) == ["The 10K is a road race of 10 kilometres", "On race day, start near the back"]
    assert (
        at.text_area(key=f"asp_content_{listed[0]['id']}_demo-bm25").value == "The 10K is a road race of 10 kilometres"
    )
    # untrusted aspect text is shown escaped, never as markdown or HTML
    shown = " ".join(m.value for m in at.markdown)
    from assess.text import inert_html

    assert inert_html("Race day <b>tips</b> **now**")[len('<div class="passage-text">') : -len("</div>")] in shown
    assert "<b>tips" not in shown and "**now" not in shown
    assert not any("tips" in t.label for t in at.text_area) and not any("tips" in s.value for s in at.success)
    # the organizer edits and confirms: the aspect's name, its content, and a selection for "Plan length"
    at.selectbox(key="asp_edit_101_1").set_value(listed[1]["id"]).run()
    at.text_input(key=f"asp_text_{listed[1]['id']}").set_value("Race-day tips")
    at.button(key="asp_save").click().run()
    at.text_area(key=f"asp_content_{listed[0]['id']}_demo-bm25").set_value("The 10K is a road race")
    at.button(key="asp_save_texts").click().run()
    at.selectbox(key="asp_target_101_1").set_value(listed[2]["id"]).run()
    needle = "Don't wear new shoes"
    i = response.index(needle)
    send_span(at, utf16(response[:i]), utf16(response[: i + len(needle)]), needle)
    assert rows(
        app_db,
        "SELECT a.text AS aspect, c.text AS content FROM aspects a JOIN aspect_content c ON c.aspect_id = a.id "
        "WHERE c.run = 'demo-bm25' ORDER BY a.position",
    ) == [
        ("What a 10K is", "The 10K is a road race"),
        ("Race-day tips", "On race day, start near the back"),
        ("Plan length", needle),
    ]
    assert marked(at) == ["The 10K is a road race", "On race day, start near the back", needle]
    # pre-filling again keeps the organizer's edits; only the aspect she renamed comes back, to delete
    at.button(key="asp_prefill").click().run()
    assert any("1 aspects added, 2 already listed, content of 1 set" in s.value for s in at.success)
    assert [a["aspect"] for a in nugget_store.aspects.turn_aspects(db, "101_1")] == [
        "What a 10K is",
        "Race-day tips",
        "Plan length",
        "Race day <b>tips</b> **now**",
    ]
    assert nugget_store.aspects.turn_aspects(db, "101_1")[0]["content"]["demo-bm25"] == "The 10K is a road race"
    # another run has no LLM answer: the action says how to get one
    at.selectbox(key="asp_run").set_value("demo-dense").run()
    assert not [s for s in at.selectbox if s.key == "asp_llm_source"]
    assert any("prejudge --task aepd" in c.value for c in at.caption)


def component_list(at: AppTest):
    return [
        e
        for e in at.main
        if type(e).__name__ == "UnknownElement" and getattr(e.proto, "component_name", "") == "assess_span_picker"
    ]


def start(page: str, assessor: str | None = None, **params) -> AppTest:
    return open_app(page, assessor, **params)
