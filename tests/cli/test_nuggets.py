"""The nugget workbench without a browser: spans and UTF-16 offsets, locating, duplicates, the store, the CLI,
and the GFRC2 / AEPD documents (round-tripped through ``python -m assess score``)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess import nuggets as pure
from assess.errors import AssessError, InvalidSpan
from store import conversations, nuggets, open_db
from store.db import rows as query
from store.db import value
from tests.helpers import ROOT, run_cli, snapshot

UNICODE_PASSAGE = "demo-doc-022:0"

# Letters from several planes and scripts: ASCII, Latin with combining marks, CJK, Arabic (RTL),
# emoji (astral, with ZWJ and skin-tone modifiers), mathematical letters (astral).
ALPHABET = st.sampled_from(
    list("ab zé\u0301\u0308\n\t")
    + ["初", "心", "歓", "ب", "ا", "ل", "\u200d", "♀", "\ufe0f", "🏃", "👍", "🏽", "𝒜", "😀", "\U0010fffd"]
)
TEXTS = st.lists(ALPHABET, max_size=60).map("".join)


@pytest.fixture
def demo(demo_target):
    """The demo store, once per engine (SQLite file, PostgreSQL database)."""
    db = open_db(demo_target)
    yield db
    db.close()


def js_slice(text: str, start16: int, end16: int) -> str:
    """What JavaScript's ``text.slice(start16, end16)`` returns, computed on UTF-16 code units."""
    return text.encode("utf-16-le", "surrogatepass")[2 * start16 : 2 * end16].decode("utf-16-le", "surrogatepass")


# ------------------------------------------------------------------------------------------- offsets


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.data())
def test_utf16_offsets_of_any_substring_convert_back_to_that_substring(text, data):
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    s16, e16 = pure.spans.index_to_utf16(text, i), pure.spans.index_to_utf16(text, j)
    assert js_slice(text, s16, e16) == text[i:j]  # what the browser selected
    assert (pure.spans.utf16_to_index(text, s16), pure.spans.utf16_to_index(text, e16)) == (i, j)
    if i < j:
        span = pure.spans.span_from_utf16(text, s16, e16, text[i:j], trim=False)
        assert span == (i, j, text[i:j]) and text[span.start : span.end] == span.text


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_offsets_inside_a_surrogate_pair_are_refused(text):
    units = 0
    for ch in text:
        if ord(ch) > 0xFFFF:
            with pytest.raises(InvalidSpan, match="surrogate"):
                pure.spans.utf16_to_index(text, units + 1)
        units += 2 if ord(ch) > 0xFFFF else 1
    assert units == pure.spans.utf16_length(text)


def test_unicode_passage_offsets(demo):
    passage = conversations.passage_text(demo, UNICODE_PASSAGE)
    for needle in ["🏃\u200d♀️", "👍🏽", "初心者歓迎", "بالتوفيق", "cafe\u0301", "Zoe\u0308"]:
        i = passage.index(needle)
        s16 = pure.spans.index_to_utf16(passage, i)
        e16 = s16 + pure.spans.utf16_length(needle)
        assert pure.spans.span_from_utf16(passage, s16, e16, needle) == (i, i + len(needle), needle)
    # the runner emoji is 4 code points but 5 UTF-16 units; offsets after it shift by 1 per astral char
    assert len("🏃\u200d♀️") == 4 and pure.spans.utf16_length("🏃\u200d♀️") == 5


def test_span_checks():
    assert pure.spans.validate_span("abcdef", 1, 3, "bc") == (1, 3, "bc")
    for start, end in [(-1, 2), (3, 3), (4, 2), (0, 7)]:
        with pytest.raises(InvalidSpan):
            pure.spans.validate_span("abcdef", start, end)
    with pytest.raises(InvalidSpan, match="not the passage's text"):
        pure.spans.validate_span("abcdef", 1, 3, "xy")
    with pytest.raises(InvalidSpan, match="not the passage's text"):
        pure.spans.span_from_utf16("abcdef", 1, 3, "xy")
    assert pure.spans.span_from_utf16("  ab cd  ", 0, 9, "  ab cd  ") == (2, 7, "ab cd")  # trimmed
    assert pure.spans.span_from_utf16("ab cd", 4, 1) == (1, 4, "b c")  # backwards selection
    with pytest.raises(InvalidSpan, match="empty"):
        pure.spans.span_from_utf16("ab   cd", 2, 5)
    with pytest.raises(InvalidSpan):
        pure.spans.utf16_to_index("ab", 3)


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.lists(st.tuples(st.integers(0, 70), st.integers(0, 70)), max_size=6))
def test_segments_cover_the_text_exactly(text, spans):
    pieces = pure.spans.segments(text, spans)
    assert "".join(p for p, _ in pieces) == text
    covered = set()
    for s, e in spans:
        covered.update(range(max(0, s), min(len(text), e)))
    pos, marked = 0, set()
    for piece, is_marked in pieces:
        if is_marked:
            marked.update(range(pos, pos + len(piece)))
        pos += len(piece)
    assert marked == covered


# ------------------------------------------------------------------------------------------- locating


def test_locate_exact_then_normalised():
    passage = "Most beginner plans last 10 to 12 weeks.\nStraße  und\tMeer."
    assert pure.spans.locate(passage, "plans last 10") == ((14, 27, "plans last 10"), "exact")
    span, how = pure.spans.locate(passage, "MOST BEGINNER   plans")
    assert how == "normalised" and span.text == "Most beginner plans"
    span, how = pure.spans.locate(passage, "12 weeks. strasse und meer")  # newline, tab, ß -> ss, case
    assert how == "normalised" and span.text == "12 weeks.\nStraße  und\tMeer"
    span, how = pure.spans.locate(passage, '"last 10 to 12 weeks."')  # quotes and final period
    assert span.text == "last 10 to 12 weeks" and passage[span.start : span.end] == span.text
    assert pure.spans.locate(passage, "ten to twelve weeks") is None
    assert pure.spans.locate(passage, "  ") is None


def test_human_and_model_spans_are_matched_under_one_folding_rule():
    """An assessor's nugget and a model's copy are found under the same rule: typographic quotes and dashes
    match their ASCII forms and ß matches SS in both (the two matchers used to fold differently)."""
    passage = "He said \u201chello\u201d to the man\u2014then left. Die Stra\u00dfe."
    for copy, text in (
        ('said "hello" to', "said \u201chello\u201d to"),
        ("the man-then left", "the man\u2014then left"),
        ("DIE STRASSE", "Die Stra\u00dfe"),
    ):
        span, how = pure.spans.locate(passage, copy)
        assert (span.text, how) == (text, "normalised")
        span, how = pure.spans.locate_span(copy, passage)
        assert (span.text, how) == (text, "repaired: case/quotes/white space")
    assert pure.spans.fold(" A\u00a0 \u201cB\u201d\u2013\u00df ") == ('a "b"-ss', [1, 2, 4, 5, 6, 7, 8, 8])


def test_locate_in_passages_prefers_an_exact_match_anywhere():
    found = pure.spans.locate_in_passages(
        "Walk Run", [("p1", "a walk run plan"), ("p2", "the Walk Run plan"), ("p3", None)]
    )
    assert found == ("p2", (4, 12, "Walk Run"), "exact")
    found = pure.spans.locate_in_passages("walk  RUN", [("p3", None), ("p1", "a walk run plan")])
    assert found.passage_id == "p1" and found.method == "normalised"


def test_locate_pieces_finds_the_selections_an_aspect_content_joins():
    response = (
        "The 10K is a road race.\nOn race day, start near the back. Don't wear new shoes 🏃 on the day. "
        "Run the first kilometre slowly."
    )
    # two selections appended with a space (the page's N), out of response order, plus a typed word
    content = "start near the back. The 10K is a road race. banana 🏃 on the"
    pieces = pure.spans.locate_pieces(response, content)
    assert [p.text for p in pieces] == ["start near the back.", "The 10K is a road race.", "🏃 on the"]
    assert all(response[p.start : p.end] == p.text for p in pieces)
    # case and white space are folded as in locate; the span keeps the response's own characters
    at = response.index("road race.")
    assert pure.spans.locate_pieces(response, "ROAD race. on RACE day") == [(at, at + 22, "road race.\nOn race day")]
    # a repeated phrase: the later piece is looked for after the earlier one first
    assert [p.start for p in pure.spans.locate_pieces("on the day on the day", "on the day on the day")] == [0]
    assert [p.start for p in pure.spans.locate_pieces("a b. x a b.", "x a b.")] == [5]
    assert pure.spans.locate_pieces(response, "") == [] and pure.spans.locate_pieces("", "x") == []
    assert pure.spans.locate_pieces(response, "nothing here") == []


WORDS = st.lists(
    st.sampled_from(["run", "Run", "10K", "day,", "初心者", "🏃", "é\u0301", "a", "the"]), min_size=1, max_size=12
)


@settings(max_examples=200, deadline=None)
@given(WORDS, st.data())
def test_located_pieces_hold_every_selected_word(words, data):
    text = " ".join(words)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(words)), max_size=4))) | {0, len(words)})
    picked = [" ".join(words[a:b]) for a, b in zip(cuts, cuts[1:]) if b > a and data.draw(st.booleans())]
    content = " ".join(picked)
    pieces = pure.spans.locate_pieces(text, content)
    assert all(text[p.start : p.end] == p.text for p in pieces)
    assert " ".join(p.text for p in pieces).casefold().split() == content.casefold().split()


def test_next_key():
    assert pure.spans.next_key([]) == "[1]"
    assert pure.spans.next_key(["[1]", "[7]", "x"]) == "[8]"


# ------------------------------------------------------------------------------------------- store: passage nuggets


def test_span_nuggets_are_checked_against_the_stored_passage(demo):
    passage = conversations.passage_text(demo, UNICODE_PASSAGE)
    i = passage.index("👍🏽")
    nid = nuggets.gold.add_span_nugget(demo, "amy", "101_1", UNICODE_PASSAGE, i, i + 2, "👍🏽")
    row = nuggets.gold.nugget(demo, nid)
    assert (row["key"], row["text"], row["start_char"], row["end_char"], row["span_method"], row["in_dedup"]) == (
        "[1]",
        "👍🏽",
        i,
        i + 2,
        "selected",
        1,
    )
    assert value(demo, "SELECT kind FROM sources WHERE name = 'amy'") == "assessor"
    before = value(demo, "SELECT COUNT(*) AS n FROM nuggets")
    with pytest.raises(InvalidSpan):
        nuggets.gold.add_span_nugget(demo, "amy", "101_1", UNICODE_PASSAGE, i, i + 2, "👍")
    with pytest.raises(InvalidSpan):
        nuggets.gold.add_span_nugget(demo, "amy", "101_1", UNICODE_PASSAGE, i, len(passage) + 1, "x")
    with pytest.raises(InvalidSpan, match="no text"):
        nuggets.gold.add_span_nugget(demo, "amy", "101_1", "demo-doc-900:0", 0, 1, "x")
    assert value(demo, "SELECT COUNT(*) AS n FROM nuggets") == before
    assert nuggets.gold.passage_spans(demo, "amy", "101_1", UNICODE_PASSAGE) == [(i, i + 2)]


def test_typed_edited_and_deleted_nuggets(demo):
    passage = conversations.passage_text(demo, "demo-doc-001:0")
    nid = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "  WALK-RUN plan ", passage_id="demo-doc-001:0")
    row = nuggets.gold.nugget(demo, nid)
    assert (
        row["span_method"] == "typed" and passage[row["start_char"] : row["end_char"]] == row["text"] == "walk-run plan"
    )
    free = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "Not in any passage", passage_id="demo-doc-001:0")
    assert nuggets.gold.nugget(demo, free)["start_char"] is None and nuggets.gold.nugget(demo, free)["key"] == "[2]"
    edited = nuggets.gold.update_nugget(demo, "amy", nid, text="complete beginners", relevance=3)
    assert edited["relevance"] == 3 and passage[edited["start_char"] : edited["end_char"]] == "complete beginners"
    edited = nuggets.gold.update_nugget(demo, "amy", nid, text="beginners run ten kilometres")  # rephrased
    assert edited["start_char"] is None and edited["passage_id"] == "demo-doc-001:0"
    assert edited["relevance"] == 3
    with pytest.raises(AssessError, match="belongs to"):
        nuggets.gold.update_nugget(demo, "bob", nid, text="x")
    with pytest.raises(AssessError, match="belongs to"):
        nuggets.gold.delete_nugget(demo, "bob", nid)
    nuggets.gold.delete_nugget(demo, "amy", nid)
    assert [r["id"] for r in nuggets.gold.turn_nuggets(demo, "amy", "101_1")] == [free]
    assert nuggets.gold.add_text_nugget(demo, "amy", "101_1", "again") and [
        r["key"] for r in nuggets.gold.turn_nuggets(demo, "amy", "101_1")
    ] == ["[2]", "[3]"]


def test_relevant_passages_follow_source_and_threshold(demo):
    llm = nuggets.gold.relevant_passages(demo, "101_1", source="llm:demo-gpt", threshold=2)
    assert llm and all(p["grade"] >= 2 for p in llm)
    assert len(nuggets.gold.relevant_passages(demo, "101_1", source="llm:demo-gpt", threshold=4)) < len(llm)
    pooled = nuggets.gold.relevant_passages(demo, "101_1", source=None)
    assert {p["passage_id"] for p in llm} <= {p["passage_id"] for p in pooled}
    assert nuggets.gold.relevant_passages(demo, "101_1", source="amy") == []
    assert not nuggets.gold.has_grades(demo, "amy", "101_1")


# ------------------------------------------------------------------------------------------- duplicates


def test_lexical_entailment_is_token_containment():
    judge = pure.dedup.LexicalEntailment()
    a, b = "Beginner plans last 10 to 12 weeks", "Plans last 12 weeks"
    ab, ba = judge.entailment([(a, b), (b, a)])
    assert ab == 1.0 and ba == pytest.approx(
        4 / 6
    )  # {plans, last, 12, weeks} in {beginner, plans, last, 10, 12, weeks}
    assert judge.entailment([("x", "the")]) == [0.0]
    assert judge.entailment([("", "")]) == [0.0]


def test_suggestions_use_any_injected_judge():
    texts = [(1, "alpha beta"), (2, "beta alpha"), (3, "gamma")]
    found = pure.dedup.suggest_duplicates(texts, None, threshold=0.6)
    assert [(s.a, s.b, s.score_ab, s.score_ba) for s in found] == [(1, 2, 1.0, 1.0)]
    calls = []

    def entails(premise, hypothesis):  # a plain function works as the injectable interface
        calls.append((premise, hypothesis))
        return 0.9 if "gamma" in premise else 0.1

    found = pure.dedup.suggest_duplicates(texts, entails, threshold=0.5)
    assert {(s.a, s.b) for s in found} == {(1, 3), (2, 3)} and len(calls) == 6
    assert pure.dedup.suggest_duplicates(texts[:1], entails) == []


def test_dedup_rule_keeps_nuggets_no_kept_nugget_entails():
    order = [1, 2, 3, 4]
    assert pure.dedup.dedup_keep(order, set()) == {1: True, 2: True, 3: True, 4: True}
    same = pure.dedup.entailment_edges([(1, 2, "same")])  # mutual: the earlier is kept
    assert pure.dedup.dedup_keep(order, same) == {1: True, 2: False, 3: True, 4: True}
    covers = pure.dedup.entailment_edges([(1, 3, "b_covers_a"), (2, 4, "distinct")])  # 3 entails 1
    assert pure.dedup.dedup_keep(order, covers) == {1: False, 2: True, 3: True, 4: True}
    chain = pure.dedup.entailment_edges([(1, 2, "a_covers_b"), (2, 3, "a_covers_b")])  # 1 ⊨ 2 ⊨ 3
    assert pure.dedup.dedup_keep(order, chain) == {1: True, 2: False, 3: False, 4: True}
    cycle = pure.dedup.entailment_edges([(1, 2, "same"), (2, 3, "same"), (1, 3, "same")])
    assert pure.dedup.dedup_keep(order, cycle) == {1: True, 2: False, 3: False, 4: True}
    with pytest.raises(AssessError):
        pure.dedup.entailment_edges([(1, 2, "maybe")])


def test_decisions_set_in_dedup_and_the_dedup_export(demo):
    gold = nuggets.gold.turn_nuggets(demo, "gold", "101_1")
    assert len(gold) == 5 and {n["in_dedup"] for n in gold} == {None}
    a, b, c = (n["id"] for n in gold[:3])
    nuggets.duplicates.decide_duplicate(demo, b, a, "a_covers_b", by="amy")  # given as (b, a): b covers a
    flags = {n["id"]: n["in_dedup"] for n in nuggets.gold.turn_nuggets(demo, "gold", "101_1")}
    assert flags == {a: 0, b: 1, c: 1, gold[3]["id"]: 1, gold[4]["id"]: 1}
    assert query(demo, "SELECT nugget_a, nugget_b, decision, decided_by FROM nugget_duplicates") == [
        {"nugget_a": a, "nugget_b": b, "decision": "b_covers_a", "decided_by": "amy"}
    ]
    nuggets.duplicates.decide_duplicate(demo, a, b, None, by="amy")  # reopened: everything kept again
    assert {n["in_dedup"] for n in nuggets.gold.turn_nuggets(demo, "gold", "101_1")} == {1}
    nuggets.duplicates.decide_duplicate(demo, b, c, "same", by="amy")
    assert nuggets.duplicates.dedup_counts(demo, "gold", "101_1") == {
        "nuggets": 5,
        "kept": 4,
        "unknown": 0,
        "open_pairs": 1,
    }
    with pytest.raises(AssessError):
        nuggets.duplicates.decide_duplicate(
            demo, a, nuggets.gold.turn_nuggets(demo, "gold", "101_2")[0]["id"], "same", by="amy"
        )
    demo.close()
    full = json.loads(run_cli("export", "nuggets", "--source", "gold", db=demo.target, check=True).stdout)
    dedup = json.loads(run_cli("export", "nuggets", "--source", "gold", "--dedup", db=demo.target, check=True).stdout)
    assert len(full["101_1"]) == 5 and sorted(dedup["101_1"]) == ["[1]", "[2]", "[4]", "[5]"]
    assert dedup["101_1"]["[2]"] == full["101_1"]["[2]"]  # same CONE-RAG layout
    # /duplicates' two downloads, written on the click (not each page run), are these files
    from assess.services.nuggets import nugget_files

    with open_db(demo.target) as db:
        files = nugget_files(db, "gold")
        assert [(f[1], json.loads(f[2]())) for f in files.values()] == [
            ("nuggets_gold.json", full),
            ("nuggets_gold_deduplicated.json", dedup),
        ]


def test_stored_suggestions_keep_decisions(demo):
    nid = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "Most beginner plans last 10 to 12 weeks")
    twin = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "Beginner plans last 10-12 weeks mostly")
    other = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "Buy shoes in a running shop")
    assert nuggets.duplicates.suggest_duplicates(demo, "amy", "101_1") == 1
    (pair,) = nuggets.duplicates.duplicate_pairs(demo, "amy", "101_1")
    assert (pair["a"], pair["b"], pair["suggested_by"], pair["decision"]) == (nid, twin, "lexical", None)
    nuggets.duplicates.decide_duplicate(demo, nid, twin, "same", by="amy")
    assert nuggets.duplicates.suggest_duplicates(demo, "amy", "101_1") == 1  # re-suggesting keeps the decision
    assert nuggets.duplicates.duplicate_pairs(demo, "amy", "101_1")[0]["decision"] == "same"
    assert [n["in_dedup"] for n in nuggets.gold.turn_nuggets(demo, "amy", "101_1")] == [1, 0, 1]
    later = nuggets.gold.add_text_nugget(demo, "amy", "101_1", "A new one")  # joins the kept set
    assert nuggets.gold.nugget(demo, later)["in_dedup"] == 1
    nuggets.gold.delete_nugget(demo, "amy", twin)  # its pairs go with it
    assert (
        nuggets.duplicates.duplicate_pairs(demo, "amy", "101_1") == []
        and nuggets.gold.nugget(demo, other)["in_dedup"] == 1
    )


def test_cli_suggest_duplicates(demo):
    demo.close()
    out = run_cli("nuggets", "suggest-duplicates", "--source", "gold", "--json", db=demo.target, check=True)
    result = json.loads(out.stdout)
    assert (
        result["judge"] == "lexical"
        and result["threshold"] == 0.5
        and result["pairs"] == sum(result["per_turn"].values())
    )


# ------------------------------------------------------------------------------------------- GFRC2

DEMO_GFRC2 = json.loads((ROOT / "assets" / "demo" / "gfrc2.json").read_text(encoding="utf-8"))


def test_word_positions_over_the_conversation():
    turns = [
        pure.documents.TurnText("c_1", 1, "How do I start?", "Walk, then run."),
        pure.documents.TurnText("c_2", 2, "And shoes?", None),
        pure.documents.TurnText("c_3", 3, "Thanks  a lot", "You are\twelcome."),
    ]
    assert pure.documents.response_offsets(turns) == {"c_1": (4, 3), "c_2": (9, 0), "c_3": (12, 3)}
    text = "Walk, then  run fast."
    assert pure.documents.words_in_span(text, 0, 4) == (1, 1) and pure.documents.words_in_span(text, 2, 13) == (1, 3)
    assert pure.documents.words_in_span(text, 10, 13) == (3, 3)  # a selection touching a word takes the word
    with pytest.raises(InvalidSpan):
        pure.documents.words_in_span(text, 10, 11)  # only whitespace
    assert pure.documents.mark_spans(text, [(2, 3), (4, 9)]) == [(6, 15)]


def demo_marks(db) -> dict:
    """The demo's GFRC2 spans as response-relative word ranges, checking each lies inside S_turn."""
    out = {}
    for conv in DEMO_GFRC2["conversations"]:
        run, conversation = conv["id"].split("/")
        turns = nuggets.responses.system_conversation(db, run, conversation)
        offsets = pure.documents.response_offsets(turns)
        by_number = {t.number: t for t in turns}
        for n in conv["nuggets"]:
            t = by_number[n["turn"]]
            before, count = offsets[t.turn_id]
            assert before < n["start"] <= n["end"] <= before + count, (conv["id"], n)
            out.setdefault(conv["id"], []).append(
                (t.turn_id, n["start"] - before, n["end"] - before, n["level"], n["groups"])
            )
    return out


def test_gfrc2_export_round_trips_through_score(demo, tmp_path):
    marks = demo_marks(demo)
    nuggets.responses.save_study(demo, "demo", DEMO_GFRC2["attributes"], max_level=2, L=1000)
    for cid, rows in marks.items():
        run = cid.split("/")[0]
        for turn_id, start, end, level, groups in rows:
            nuggets.responses.mark_response_nugget(demo, "demo", run, turn_id, start, end, level, groups)
    document = nuggets.responses.gfrc2_export(demo, "demo")
    assert [c["id"] for c in document["conversations"]] == [c["id"] for c in DEMO_GFRC2["conversations"]]
    assert [c["nuggets"] for c in document["conversations"]] == [c["nuggets"] for c in DEMO_GFRC2["conversations"]]
    exported = tmp_path / "exported.json"
    demo.close()
    out = run_cli("nuggets", "export-gfrc2", "--study", "demo", "-o", exported, db=demo.target, check=True)
    assert out.stdout == ""
    ours = json.loads(run_cli("score", "gfrc2", exported, "--json", check=True).stdout)
    reference = json.loads(
        run_cli("score", "gfrc2", ROOT / "assets" / "demo" / "gfrc2.json", "--json", check=True).stdout
    )
    assert ours == reference


def test_response_marks_are_checked(demo):
    nuggets.responses.save_study(demo, "s", pure.documents.EXAMPLE_ATTRIBUTES)
    assert nuggets.responses.study(demo, "s")["attributes"][0]["target"] == pytest.approx([1 / 3] * 3)
    groups = {"PRONOUN": "she", "HINDEX": "G4"}
    mid = nuggets.responses.mark_response_nugget(demo, "s", "demo-dense", "101_1", 3, 5, 2, groups)
    words = nuggets.responses.response_text(demo, "demo-dense", "101_1").split()
    assert nuggets.responses.response_marks(demo, "s", "demo-dense", "101") == [
        {
            "id": mid,
            "turn_id": "101_1",
            "start_word": 3,
            "end_word": 5,
            "level": 2,
            "groups": groups,
            "text": " ".join(words[2:5]),
        }
    ]
    for bad in [
        dict(start_word=5, end_word=7),  # overlaps 3-5
        dict(start_word=len(words), end_word=len(words) + 1),  # past the response
        dict(level=3),
        dict(groups={"PRONOUN": "it", "HINDEX": "G1"}),
        dict(groups={"PRONOUN": "he"}),
    ]:
        args = {"start_word": 6, "end_word": 6, "level": 1, "groups": groups, **bad}
        with pytest.raises(AssessError):
            nuggets.responses.mark_response_nugget(demo, "s", "demo-dense", "101_1", **args)
    with pytest.raises(AssessError):
        nuggets.responses.save_study(demo, "bad", [{"name": "X", "kind": "ordinal", "groups": ["a"], "target": [0.5]}])
    nuggets.responses.delete_mark(demo, mid)
    assert nuggets.responses.response_marks(demo, "s", "demo-dense") == []


def test_cli_study_and_bad_attributes(demo):
    demo.close()
    db = demo.target
    out = run_cli(
        "nuggets", "study", "fair", "--attributes", json.dumps(pure.documents.EXAMPLE_ATTRIBUTES), db=db, check=True
    )
    assert "PRONOUN (nominal, he/she/other)" in out.stdout
    before = snapshot(db)
    bad = run_cli(
        "nuggets", "study", "fair", "--attributes", '[{"name": "X", "kind": "weird", "groups": ["a"]}]', db=db
    )
    assert bad.returncode == 2 and "nominal or ordinal" in bad.stderr and snapshot(db) == before
    empty = json.loads(run_cli("nuggets", "export-gfrc2", "--study", "fair", db=db, check=True).stdout)
    assert empty["attributes"][0]["name"] == "PRONOUN" and all(c["nuggets"] == [] for c in empty["conversations"])


# ------------------------------------------------------------------------------------------- AEPD

DEMO_AEPD = json.loads((ROOT / "assets" / "demo" / "aepd.json").read_text(encoding="utf-8"))


def test_aepd_export_round_trips_through_score(demo, tmp_path):
    ids = {}
    for entry in DEMO_AEPD["turns"]:
        run, turn_id = entry["id"].split("/")
        for a in entry["aspects"]:
            if (turn_id, a["aspect"]) not in ids:
                ids[turn_id, a["aspect"]] = nuggets.aspects.save_aspect(
                    demo, turn_id, a["aspect"], [str(p) for p in a["ptkb"]]
                )
            nuggets.aspects.set_aspect_content(demo, ids[turn_id, a["aspect"]], run, a["text"])
    document = nuggets.aspects.aepd_export(demo)
    assert [t["id"] for t in document["turns"]] == [t["id"] for t in DEMO_AEPD["turns"]]
    assert [t["aspects"] for t in document["turns"]] == [t["aspects"] for t in DEMO_AEPD["turns"]]
    exported = tmp_path / "aepd.json"
    demo.close()
    run_cli("nuggets", "export-aepd", "-o", exported, db=demo.target, check=True)
    ours = json.loads(run_cli("score", "aepd", exported, "--json", check=True).stdout)
    reference = json.loads(
        run_cli("score", "aepd", ROOT / "assets" / "demo" / "aepd.json", "--json", check=True).stdout
    )
    assert ours == reference


def test_aspects_are_checked_and_edited(demo):
    aid = nuggets.aspects.save_aspect(demo, "101_1", "Plan length", ["7"])
    other = nuggets.aspects.save_aspect(demo, "101_1", "Shoes", [])
    with pytest.raises(AssessError, match="already has"):
        nuggets.aspects.save_aspect(demo, "101_1", "Plan length")
    with pytest.raises(AssessError, match="no PTKB statement"):
        nuggets.aspects.save_aspect(demo, "101_1", "Other", ["99"])
    with pytest.raises(AssessError):
        nuggets.aspects.save_aspect(demo, "101_1", "  ")
    nuggets.aspects.save_aspect(demo, "101_1", "Plan length and race date", ["7", "3"], aspect_id=aid)
    nuggets.aspects.set_aspect_content(demo, aid, "demo-dense", "  twelve weeks  ")
    with pytest.raises(AssessError):
        nuggets.aspects.set_aspect_content(demo, aid, "no-such-run", "x")
    assert nuggets.aspects.turn_aspects(demo, "101_1") == [
        {
            "id": aid,
            "aspect": "Plan length and race date",
            "ptkb": ["3", "7"],
            "content": {"demo-dense": "twelve weeks"},
        },
        {"id": other, "aspect": "Shoes", "ptkb": [], "content": {}},
    ]
    nuggets.aspects.delete_aspect(demo, aid)
    assert [a["id"] for a in nuggets.aspects.turn_aspects(demo, "101_1")] == [other]
    doc = nuggets.aspects.aepd_export(demo, runs=["demo-dense"])
    assert doc["turns"] == [
        {
            "id": "demo-dense/101_1",
            "system": "demo-dense",
            "conversation": "101",
            "aspects": [{"aspect": "Shoes", "ptkb": [], "text": ""}],
        }
    ]


def aepd_reply(aspects):
    from tests.stub_llm import Reply

    return lambda request: Reply(content=json.dumps({"aspects": aspects(request)}))


def test_prefill_aspects_from_a_prejudge_run(demo):
    """A tiny ``prejudge --task aepd`` against the stub endpoint, then its aspects pre-fill the organizer's list."""
    from assess.llm.clients import OpenAIClient
    from assess.services import jobs as prejudge
    from tests.stub_llm import StubLLM, enclosed

    def aspects(request):
        response = enclosed(request, "response")
        return [
            {"aspect": "Race day", "ptkb": [7], "text": response.split(". ")[0]},
            {"aspect": "Shoes", "ptkb": [3, 99], "text": ""},
        ]

    with StubLLM(reply=aepd_reply(aspects)) as stub:
        plan = prejudge.plan(demo, "aepd", "llm:stub", "stub-1", limit=3)  # 101_1 x the three runs
        prejudge.run(demo, plan, OpenAIClient("stub-1", base_url=stub.base_url, api_key="k", timeout=5))
    assert nuggets.aspects.llm_aspect_sources(demo, "101_1", "demo-bm25") == ["llm:stub"]
    assert nuggets.aspects.llm_aspect_sources(demo, "101_2", "demo-bm25") == []
    bm25 = nuggets.responses.response_text(demo, "demo-bm25", "101_1")
    first = bm25.split(". ")[0]
    assert nuggets.aspects.llm_aspects(demo, "llm:stub", "101_1", "demo-bm25") == [
        {"aspect": "Race day", "ptkb": ["7"], "text": first},
        {"aspect": "Shoes", "ptkb": ["3"], "text": ""},
    ]
    # the organizer already has "race day" with her own content for demo-bm25: kept as it is
    own = nuggets.aspects.save_aspect(demo, "101_1", "race day", [])
    nuggets.aspects.set_aspect_content(demo, own, "demo-bm25", "On race day")
    assert nuggets.aspects.prefill_aspects(demo, "llm:stub", "101_1", "demo-bm25") == {
        "added": 1,
        "existing": 1,
        "content": 1,
        "dropped_ptkb": 0,
    }
    listed = nuggets.aspects.turn_aspects(demo, "101_1")
    assert [(a["aspect"], a["ptkb"], a["content"]) for a in listed] == [
        ("race day", [], {"demo-bm25": "On race day"}),
        ("Shoes", ["3"], {"demo-bm25": ""}),
    ]
    # another run: nothing new to add, the empty content of "race day" for demo-dense is filled
    assert nuggets.aspects.prefill_aspects(demo, "llm:stub", "101_1", "demo-dense") == {
        "added": 0,
        "existing": 2,
        "content": 2,
        "dropped_ptkb": 0,
    }
    dense = nuggets.responses.response_text(demo, "demo-dense", "101_1")
    assert nuggets.aspects.turn_aspects(demo, "101_1")[0]["content"]["demo-dense"] == dense.split(". ")[0]
    assert nuggets.aspects.prefill_aspects(demo, "llm:stub", "101_1", "demo-dense")["content"] == 0  # idempotent
    # highlighting: the contents are located in the response
    i = bm25.index("On race day")
    assert nuggets.aspects.content_spans(demo, "101_1", "demo-bm25") == [(i, i + len("On race day"))]
    assert nuggets.aspects.content_spans(demo, "101_1", "demo-dense") == [(0, len(dense.split(". ")[0]))]
    with pytest.raises(AssessError, match="no AEPD aspects"):
        nuggets.aspects.prefill_aspects(demo, "llm:stub", "101_2", "demo-bm25")


def test_prefill_drops_unknown_statements_and_uses_the_latest_answer(demo):
    from store import prejudgments

    prejudgments.ensure_llm_source(demo, "llm:x", "x", "v1")
    for n, aspects in enumerate(
        [
            [{"aspect": "Old", "ptkb": [], "text": ""}],
            [{"aspect": "Plan", "ptkb": ["7", "99"], "text": "walk"}, {"aspect": " ", "text": ""}],
        ]
    ):
        prejudgments.save(
            demo,
            prejudgments.Prejudgment(
                "llm:x", "aepd", "101_2", "demo-dense", "x", "v1", f"h{n}", "raw", "ok", {"aspects": aspects}
            ),
        )
    prejudgments.save(
        demo,
        prejudgments.Prejudgment("llm:x", "aepd", "101_2", "demo-dense", "x", "v1", "h3", "junk", "unparseable", None),
    )
    assert nuggets.aspects.llm_aspects(demo, "llm:x", "101_2", "demo-dense") == [
        {"aspect": "Plan", "ptkb": ["7", "99"], "text": "walk"}
    ]
    assert nuggets.aspects.prefill_aspects(demo, "llm:x", "101_2", "demo-dense") == {
        "added": 1,
        "existing": 0,
        "content": 1,
        "dropped_ptkb": 1,
    }
    assert [(a["aspect"], a["ptkb"]) for a in nuggets.aspects.turn_aspects(demo, "101_2")] == [("Plan", ["7"])]


@pytest.mark.both_engines
def test_nugget_edits_decisions_and_gold_responses_go_to_the_history(demo):
    """Schema 6: an edited or deleted nugget keeps its old text and span in the append-only history."""
    from store.history import item_history

    passage = "demo-doc-001:0"
    body = conversations.passage_text(demo, passage)
    nid = nuggets.gold.add_span_nugget(demo, "ann", "101_1", passage, 0, 20, body[:20], relevance=3)
    key = nuggets.gold.nugget(demo, nid)["key"]
    other = nuggets.gold.add_text_nugget(demo, "ann", "101_1", "a typed nugget")
    other_key = nuggets.gold.nugget(demo, other)["key"]
    nuggets.gold.update_nugget(demo, "ann", nid, relevance=2)
    nuggets.gold.update_nugget(demo, "ann", nid, relevance=2)  # no change: no history row
    nuggets.duplicates.decide_duplicate(demo, nid, other, "distinct", by="ann")
    nuggets.gold_responses.save_gold_response(demo, "ann", "101_1", "A response.", [nid])
    nuggets.gold.delete_nugget(demo, "ann", other)

    trail = item_history(demo, "ann", f"101_1 {key}", "nugget")
    values = [
        (json.loads(r["old"]) if r["old"] else None, json.loads(r["new"]) if r["new"] else None, r["via"])
        for r in trail
    ]
    first = {"text": body[:20], "relevance": 3, "passage_id": passage, "start": 0, "end": 20}
    assert values == [(None, first, "selected"), (first, {**first, "relevance": 2}, "selected")]
    rows = [
        tuple(r.values())
        for r in query(
            demo,
            "SELECT label_table, item, old_value, new_value, via FROM label_history WHERE source = 'ann' "
            "AND label_table != 'nugget' ORDER BY id",
        )
    ]
    a, b = sorted((nid, other))
    assert rows[0] == ("nugget-duplicate", f"101_1 {a} {b}", None, "distinct", "ann")
    assert rows[1][:3] == ("gold-response", "101_1", None)
    assert json.loads(rows[1][3]) == {"text": "A response.", "nuggets_used": json.dumps([nid])}
    deleted = query(
        demo,
        "SELECT old_value, new_value, via FROM label_history WHERE label_table = 'nugget' AND "
        "item = :item ORDER BY id DESC LIMIT 1",
        {"item": f"101_1 {other_key}"},
    )[0]
    assert json.loads(deleted["old_value"])["text"] == "a typed nugget"
    assert (deleted["new_value"], deleted["via"]) == (None, "delete")
    proc = run_cli(
        "history",
        "--source",
        "ann",
        "--turn",
        "101_1",
        "--item",
        key,
        "--task",
        "nugget",
        db=demo.target,
        check=True,
    )
    # the JSON text is the trigger's own (SQLite's json_object is compact; PostgreSQL may add spaces)
    assert proc.stdout.count("\n") == 2 and re.search(r'"relevance": ?2\b', proc.stdout)


def test_moving_a_nugget_needs_its_own_passage(demo):
    passage = "demo-doc-001:0"
    body = conversations.passage_text(demo, passage)
    nid = nuggets.gold.add_span_nugget(demo, "ann", "101_1", passage, 0, 10, body[:10])
    with pytest.raises(InvalidSpan, match="belongs to passage demo-doc-001:0"):
        nuggets.gold.set_nugget_span(demo, "ann", nid, 0, 5, "x", passage_id="demo-doc-002:0")
    row = nuggets.gold.set_nugget_span(demo, "ann", nid, 5, 12, body[5:12], passage_id=passage)
    assert (row["start_char"], row["end_char"], row["text"]) == (5, 12, body[5:12])
    assert nuggets.gold.movable_nugget(demo, "ann", nid, "101_1")["id"] == nid
    assert nuggets.gold.movable_nugget(demo, "ann", nid, "101_2") is None  # the turn changed meanwhile
    assert nuggets.gold.movable_nugget(demo, "bob", nid, "101_1") is None  # someone else's nugget
    assert nuggets.gold.movable_nugget(demo, "ann", None, "101_1") is None


def test_refused_deletes_and_aspects_leave_the_transaction_usable(demo):
    """A refused write (a constraint) is reported and undone alone, even inside a caller's transaction
    (PostgreSQL aborts a transaction on a failed statement unless it ran in a savepoint)."""
    from store.db import write

    nid = nuggets.gold.add_text_nugget(demo, "ann", "101_1", "a nugget with a label")
    nuggets.ntr.save_label(demo, "ann", nid, "demo-dense", 1)
    with pytest.raises(AssessError, match="cannot be deleted"):
        nuggets.gold.delete_nugget(demo, "ann", nid)
    assert nuggets.ntr.label_of(demo, "ann", nid, "demo-dense") == 1
    with write(demo):
        kept = nuggets.aspects.save_aspect(demo, "101_1", "Plan length")
        with pytest.raises(AssessError, match="already has this aspect"):
            nuggets.aspects.save_aspect(demo, "101_1", "Plan length")
        with pytest.raises(AssessError, match="cannot be deleted"):
            nuggets.gold.delete_nugget(demo, "ann", nid)
        other = nuggets.aspects.save_aspect(demo, "101_1", "Shoes")  # the transaction goes on
    assert [a["id"] for a in nuggets.aspects.turn_aspects(demo, "101_1")] == [kept, other]
    assert nuggets.gold.nugget(demo, nid)["text"] == "a nugget with a label"


def test_locating_imported_nuggets_records_exact_spans(demo):
    counts = nuggets.gold.locate_nuggets(demo, "gold", relocate=True)
    total = value(demo, "SELECT COUNT(*) AS n FROM nuggets WHERE source = 'gold'")
    assert counts["nuggets"] == total and counts["located"] + counts["free_text"] == total
    located = query(
        demo,
        "SELECT passage_id, start_char, end_char, span_method FROM nuggets WHERE source = 'gold' "
        "AND start_char IS NOT NULL ORDER BY id",
    )
    assert len(located) == counts["located"] > 0
    for n in located:
        body = conversations.passage_text(demo, n["passage_id"])
        assert 0 <= n["start_char"] < n["end_char"] <= len(body) and n["span_method"] in ("exact", "normalised")
    again = nuggets.gold.locate_nuggets(demo, "gold")  # offsets kept: nothing looked for again
    assert again["already_located"] == counts["located"] and again["located"] == 0
    with pytest.raises(AssessError, match="no nugget source"):
        nuggets.gold.locate_nuggets(demo, "nobody")
