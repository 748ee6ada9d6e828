"""The prompt library: versions follow the text, parsers accept the usual shapes and refuse the rest,
extracted spans are exact substrings (repaired when unambiguous, else rejected, every decision recorded)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assess.errors import InvalidSpan
from assess.llm import prompts
from assess.llm.prompts import NuggetSpan, locate_span, parse_aspects, parse_grade, parse_spans, parse_yes_no

# ------------------------------------------------------------------------------------------- versions


def test_every_task_has_a_prompt_whose_version_is_name_and_hash():
    assert set(prompts.PROMPTS) == {"passage", "ptkb", "ntr", "nuggets", "response-nuggets", "aepd"}
    versions = {p.version for p in prompts.PROMPTS.values()}
    assert len(versions) == 6
    for p in prompts.PROMPTS.values():
        name, digest = p.version.split("@")
        assert name == p.name and len(digest) == 8


def test_a_changed_prompt_is_a_new_version_and_the_same_text_the_same_version():
    p = prompts.prompt_for("passage")
    same = dataclasses.replace(p)
    changed = dataclasses.replace(p, template=p.template + " ")
    assert same.version == p.version
    assert changed.version != p.version and changed.version.startswith("passage-relevance@")


def test_render_fills_every_field_and_refuses_missing_ones():
    p = prompts.prompt_for("passage")
    assert p.fields == ["history", "passage", "ptkb", "resolved", "utterance"]
    messages = p.render(history="(first)", utterance="u?", resolved="full u?", ptkb="1. x", passage="text {braces}")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "text {braces}" in messages[1]["content"] and '{"rationale"' in messages[1]["content"]
    with pytest.raises(ValueError, match="needs passage"):
        p.render(history="", utterance="", resolved="", ptkb="")


def test_prompt_texts_do_not_copy_the_cone_rag_wording():
    # Table 3 / Table 4 of the CONE-RAG paper: the library words its prompts differently.
    for phrase in (
        "I will give you a user query",
        "Please copy exact spans from the text as nuggets",
        "I will provide you with a response and a gold information piece",
        "Does the Response capture the Gold Information",
    ):
        assert all(phrase.lower() not in (p.system + p.template).lower() for p in prompts.PROMPTS.values())


# ------------------------------------------------------------------------------------------- grades


@pytest.mark.parametrize(
    "answer, grade",
    [
        ("3", 3),
        (" 0 \n", 0),
        ("4.", 4),
        ("**2**", 2),
        ("Score: 3", 3),
        ("score = 1", 1),
        ("The passage helps a little.\nGrade: 1", 1),
        ("Relevance: 4/4", 4),
        ('{"rationale": "on topic", "grade": 2}', 2),
        ('{"score": "3"}', 3),
        ('```json\n{"grade": 4, "rationale": "x"}\n```', 4),
        ('Here you go: {"grade": 0}', 0),
        ("3\nIt answers the question well.", 3),
        ("**Grade:** 3", 3),
        ('{"relevance_score": 1}', 1),
    ],
)
def test_grade_shapes_that_parse(answer, grade):
    assert parse_grade(answer) == ("ok", grade, None)


def test_reasoning_before_the_answer_is_ignored_but_kept_in_the_raw_output():
    p = prompts.prompt_for("passage")
    assert p.parse("<think>Maybe 4? No, it misses the knee.</think>\nScore: 2") == ("ok", 2, None)
    assert p.parse("<think>still thinking about 3") == ("unparseable", None, "only reasoning, no answer")


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "relevant",
        "Score: 7",
        "5",
        "2.5",
        '{"grade": 9}',
        '{"grade": true}',
        "Score: 3/5",
        "Score: 2 ... on reflection Score: 3",
        "I would say three.",
        "-1",
    ],
)
def test_grade_shapes_that_do_not_parse_are_unparseable_never_a_label(answer):
    status, value, _ = prompts.prompt_for("passage").parse(answer)
    assert status == "unparseable" and value is None


@given(st.text())
def test_grade_parser_never_raises_and_only_returns_grades(text):
    status, value, _ = parse_grade(text) if text.strip() else ("unparseable", None, None)
    assert (status, value in range(5)) in {("ok", True)} or (status, value) == ("unparseable", None)


# ------------------------------------------------------------------------------------------- yes / no


@pytest.mark.parametrize(
    "answer, value",
    [
        ("yes", 1),
        ("No", 0),
        ("YES.", 1),
        ("no.", 0),
        ("Yes, the response says so.", 1),
        ("Answer: no", 0),
        ("# Answer (yes/no): yes", 1),
        ('{"answer": "no"}', 0),
        ('{"match": true}', 1),
        ("1", 1),
        ("0", 0),
    ],
)
def test_yes_no_shapes(answer, value):
    assert parse_yes_no(answer) == ("ok", value, None)


@pytest.mark.parametrize("answer", ["maybe", "It depends.", "yesno", '{"answer": "perhaps"}', "2"])
def test_yes_no_unparseable(answer):
    assert parse_yes_no(answer)[:2] == ("unparseable", None)


# ------------------------------------------------------------------------------------------- spans

PASSAGE = (
    "Most beginner plans last 10 to 12 weeks and ask for three sessions a week, with a rest day between "
    "them. In week one you might run for one minute and walk for ninety seconds. Don’t worry about speed "
    "yet: the goal is time on your feet. Run slowly. Run slowly."
)


def test_exact_spans_keep_their_offsets():
    parsed = parse_spans("Most beginner plans last 10 to 12 weeks\nthe goal is time on your feet", source=PASSAGE)
    assert parsed.status == "ok"
    spans = parsed.value["spans"]
    assert [(s["start"], s["end"], s["how"]) for s in spans] == [
        (0, 39, "exact"),
        (PASSAGE.index("the goal"), PASSAGE.index("the goal") + 29, "exact"),
    ]
    for s in spans:
        assert PASSAGE[s["start"] : s["end"]] == s["text"]


@pytest.mark.parametrize(
    "candidate, expected, how",
    [
        ("most beginner PLANS last 10 to 12 weeks", "Most beginner plans last 10 to 12 weeks", "case"),
        ("Don't worry about speed yet", "Don’t worry about speed yet", "quotes"),
        ("run for one minute \t and   walk", "run for one minute and walk", "white space"),
        (
            "Most beginner plans last ... three sessions a week",
            "Most beginner plans last 10 to 12 weeks and ask for three sessions a week",
            "ellipsis",
        ),
        ("walk for ninety seconds!", "walk for ninety seconds", "punctuation"),
    ],
)
def test_unambiguous_near_copies_are_repaired_to_exact_spans_and_the_repair_recorded(candidate, expected, how):
    parsed = parse_spans(candidate, source=PASSAGE)
    assert parsed.status == "repaired" and parsed.note == "1 repaired"
    span = parsed.value["spans"][0]
    assert span["text"] == expected == PASSAGE[span["start"] : span["end"]]
    assert span["how"].startswith("repaired") and span["original"] == candidate


@pytest.mark.parametrize(
    "candidate, why",
    [
        ("beginners should rest often", "not found"),  # a paraphrase
        ("run slowly", "ambiguous"),  # two places match after folding case
    ],
)
def test_paraphrases_and_ambiguous_copies_are_rejected_and_recorded(candidate, why):
    parsed = parse_spans(f"Most beginner plans last 10 to 12 weeks\n{candidate}", source=PASSAGE)
    assert [s["text"] for s in parsed.value["spans"]] == ["Most beginner plans last 10 to 12 weeks"]
    assert parsed.value["rejected"][0]["original"] == candidate and why in parsed.value["rejected"][0]["why"]
    assert parsed.note == "1 rejected"


def test_list_marks_and_quotes_around_an_exact_copy_are_formatting_not_a_repair():
    parsed = parse_spans('- "the goal is time on your feet"\n2) Run slowly.', source=PASSAGE)
    assert parsed.status == "ok"
    assert [(s["text"], s["how"]) for s in parsed.value["spans"]] == [
        ("the goal is time on your feet", "exact"),
        ("Run slowly.", "exact"),
    ]
    assert parsed.value["spans"][0]["original"] == '- "the goal is time on your feet"'


def test_an_exact_duplicate_takes_the_next_occurrence():
    parsed = parse_spans("Run slowly.\nRun slowly.", source=PASSAGE)
    starts = [s["start"] for s in parsed.value["spans"]]
    assert len(starts) == 2 and starts[0] != starts[1]


def test_no_nugget_is_an_empty_answer_and_only_rejects_are_unparseable():
    assert parse_spans("No nugget", source=PASSAGE) == ("ok", {"spans": [], "rejected": []}, "no nugget")
    assert parse_spans("no nuggets.", source=PASSAGE).value == {"spans": [], "rejected": []}
    only_bad = parse_spans("nothing like this is in the text", source=PASSAGE)
    assert only_bad.status == "unparseable" and only_bad.value["rejected"]
    assert parse_spans('["Run slowly.", "the goal is time on your feet"]', source=PASSAGE).status == "ok"
    assert parse_spans("- Most beginner plans\n2. three sessions a week", source=PASSAGE).status == "ok"


@given(st.text(min_size=1, max_size=80), st.data())
def test_every_accepted_span_is_an_exact_substring(source, data):
    start = data.draw(st.integers(0, len(source) - 1))
    end = data.draw(st.integers(start + 1, len(source)))
    candidate = data.draw(
        st.sampled_from(
            [
                source[start:end],
                source[start:end].upper(),
                " ".join(source[start:end].split()),
                data.draw(st.text(max_size=20)),
            ]
        )
    )
    span, how = locate_span(candidate, source)
    if span is not None:
        span.check(source)
        assert how == "exact" or how.startswith("repaired")
    else:
        assert how.startswith("rejected")


def test_nugget_span_validates_offsets():
    assert NuggetSpan.of("abcdef", 1, 3) == NuggetSpan(1, 3, "bc")
    with pytest.raises(InvalidSpan):
        NuggetSpan.of("abc", 2, 2)
    with pytest.raises(InvalidSpan):
        NuggetSpan(0, 2, "xx").check("abc")


# ------------------------------------------------------------------------------------------- AEPD

RESPONSE = "Start with a walk-run plan three times a week. Protect your knee with soft trails. Race day: go slow."


def test_aepd_aspects_parse_into_the_aepd_input_shape():
    answer = (
        '{"aspects": [{"aspect": "plan", "ptkb": [], "text": "Start with a walk-run plan three times a week."},'
        ' {"aspect": "knee", "ptkb": [4, 99], "text": "protect your knee with soft trails"},'
        ' {"aspect": "nutrition", "ptkb": ["5"], "text": ""},'
        ' {"aspect": "shoes", "ptkb": [], "text": "buy good shoes"}]}'
    )
    parsed = parse_aspects(answer, source=RESPONSE, statements=["1", "4", "5"])
    assert parsed.status == "repaired"
    a = parsed.value["aspects"]
    assert [x["ptkb"] for x in a] == [[], ["4"], ["5"], []]
    assert a[1]["text"] == "Protect your knee with soft trails" and a[1]["how"].startswith("repaired")
    assert a[2]["text"] == "" and a[3]["text"] == ""  # not covered / not found: not covered
    assert "unknown PTKB numbers dropped" in parsed.note and "rejected: not found" in parsed.note
    from assess.measures.aepd import score_aepd_document

    score_aepd_document({"turns": [{"id": "t", "aspects": a}]})  # the AEPD scorer accepts it


def test_aepd_without_json_is_unparseable():
    assert parse_aspects("plan, knee, nutrition", source=RESPONSE)[:2] == ("unparseable", None)


@pytest.mark.parametrize("answer", ["Grade 2 or 3", "Score: 2-3", "Relevance: 1 to 2", '{"grade": 3, "score": 1}'])
def test_ambiguous_grades_are_unparseable_never_a_label(answer):
    parsed = parse_grade(answer)
    assert parsed.status == "unparseable" and parsed.value is None


@pytest.mark.parametrize("answer", ["Yes, but no", "No, well, yes"])
def test_both_yes_and_no_is_unparseable(answer):
    parsed = parse_yes_no(answer)
    assert parsed.status == "unparseable" and parsed.value is None


def test_agreeing_duplicate_grade_fields_are_one_grade():
    assert parse_grade('{"grade": 3, "score": 3}').value == 3
