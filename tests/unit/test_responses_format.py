"""Responses with citations: the iKAT topics and TREC RAG answer layouts read, written and read back
into equal records; the sentence rule; bad input refused with the file, the place and expected vs found."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import FormatError
from assess.formats import response_writing
from assess.formats import responses as rf
from assess.formats import sentences as sentence_rule
from tests.conftest import shared_file


def write(tmp_path, name, content) -> object:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ sentences


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        (
            "Dr. Smith met J. K. Rowling in the U.S. Later they left.",
            ["Dr. Smith met J. K. Rowling in the U.S. Later they left."],
        ),
        ("It costs 3.5 dollars. See e.g. the list.", ["It costs 3.5 dollars.", "See e.g. the list."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("ends with etc. and more", ["ends with etc. and more"]),
        ("Wait... what? Yes (really.) Fine", ["Wait... what?", "Yes (really.)", "Fine"]),
        ("A list:\n- first item\n\n- second item.  ", ["A list:", "- first item", "- second item."]),
        ("  \n \t", []),
        ("", []),
        ("no final stop", ["no final stop"]),
    ],
)
def test_sentence_rule(text, sentences):
    spans = sentence_rule.split_sentences(text)
    assert [text[a:b] for a, b in spans] == sentences


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\"')A1é…\r\u2028")), max_size=60))
def test_sentences_are_ordered_stripped_slices_covering_all_text(text):
    spans = sentence_rule.split_sentences(text)
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))
    assert all(text[a:b] == text[a:b].strip() for a, b in spans)
    covered = "".join(text[a:b] for a, b in spans)
    assert "".join(covered.split()) == "".join(text.split())  # every visible character is in a sentence


# ---------------------------------------------------------------------------------- iKAT topics

IKAT = [
    {
        "number": "1-1",
        "title": "Acid reflux",
        "ptkb": ["I like pizza."],
        "responses": [
            {"turn_id": 1, "user_utterance": "Hi", "response": "Hello. How can I help?", "citations": []},
            {
                "turn_id": 2,
                "user_utterance": "Foods?",
                "response": "Bananas help.\nAvoid mint gum!",
                "citations": [
                    "clueweb22-en0022-52-08268:1",
                    "clueweb22-en0041-54-06342:6",
                    "clueweb22-en0022-52-08268:1",
                ],
            },
            {"turn_id": 3, "user_utterance": "Thanks"},
        ],
    },
    {"number": 2, "turns": [{"turn_id": "4", "response": "Yes.", "response_provenance": ["p:1"]}]},
]


def test_ikat_topics_responses(tmp_path):
    records = rf.parse_ikat_responses(write(tmp_path, "topics.json", IKAT))
    assert [(r.run, r.turn_id) for r in records] == [("topics", "1-1_1"), ("topics", "1-1_2"), ("topics", "2_4")]
    second = records[1]
    assert [s.text for s in second.sentences] == ["Bananas help.", "Avoid mint gum!"]
    assert [(s.start, s.end) for s in second.sentences] == [(0, 13), (14, 29)]
    assert second.citations == (
        "clueweb22-en0022-52-08268:1",
        "clueweb22-en0041-54-06342:6",
        "clueweb22-en0022-52-08268:1",
    )
    assert second.references == ("clueweb22-en0022-52-08268:1", "clueweb22-en0041-54-06342:6")
    assert all(s.citations == () for s in second.sentences)  # the layout names no sentence
    assert rf.response_counts(records) == {"count": 3, "with_citations": 2, "citations": 4}
    assert rf.parse_ikat_responses(write(tmp_path, "t2.json", IKAT), run="gold")[0].run == "gold"


def test_ikat_round_trip(tmp_path):
    records = rf.parse_ikat_responses(write(tmp_path, "topics.json", IKAT))
    out = tmp_path / "out.json"
    response_writing.write_ikat_responses(out, records)
    assert rf.parse_ikat_responses(out) == records
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written[0]["responses"][1] == {
        "turn_id": 2,
        "response": "Bananas help.\nAvoid mint gum!",
        "citations": IKAT[0]["responses"][1]["citations"],
    }


@pytest.mark.parametrize(
    "data, place, expected",
    [
        ({"number": "1"}, "the top level", "a list of conversations"),
        ([], "the top level", "at least one conversation"),
        ([{"number": "1", "responses": [{"turn_id": 1, "response": 5}]}], "[0]['responses'][0]['response']", "a str"),
        (
            [{"number": "1", "responses": [{"turn_id": 1, "response": "x", "citations": "p:1"}]}],
            "['citations']",
            "a list",
        ),
        (
            [{"number": "1", "responses": [{"turn_id": 1, "response": "x", "citations": ["p 1"]}]}],
            "['citations'][0]",
            "a passage id",
        ),
        (
            [{"number": "1", "responses": [{"turn_id": 1, "response": "x"}, {"turn_id": 1, "response": "y"}]}],
            "[1]['turn_id']",
            "each turn id once",
        ),
        ([{"number": "1", "responses": [{"turn_id": -1, "response": "x"}]}], "['turn_id']", "an integer turn id"),
        ([{"number": True, "responses": []}], "['number']", "a conversation number"),
    ],
)
def test_bad_ikat_files_name_the_place(tmp_path, data, place, expected):
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(FormatError) as err:
        rf.parse_ikat_responses(path)
    message = str(err.value)
    assert message.startswith(f"{path}:") and err.value.line is not None
    assert place in message and expected in message


@pytest.mark.realdata
def test_ikat_2025_topics_counts_and_round_trip(tmp_path):
    path = shared_file("data", "irlabamsterdam-iKAT", "2025", "data", "2025_test_topics.json")
    records = rf.parse_ikat_responses(path)
    assert rf.response_counts(records) == {"count": 188, "with_citations": 157, "citations": 398}
    assert len({r.turn_id for r in records}) == 188
    assert sum(len(r.references) for r in records) == 396  # two responses cite one passage twice
    assert all(r.text[s.start : s.end] == s.text for r in records for s in r.sentences)
    out = tmp_path / "back.json"
    response_writing.write_ikat_responses(out, records)
    assert rf.parse_ikat_responses(out) == records
    original = json.loads(path.read_text(encoding="utf-8"))
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [[(t["turn_id"], t["response"], t["citations"]) for t in c["responses"]] for c in original] == [
        [(t["turn_id"], t["response"], t["citations"]) for t in c["responses"]] for c in written
    ]


# ------------------------------------------------------------------------------------- TREC RAG

RAG_2024 = {
    "run_id": "h2oloo-baseline",
    "topic_id": "2027497",
    "topic": "how often should you take your toddler to the potty",
    "references": ["msmarco_v2.1_doc_51_766815931#2_1606878413", "msmarco_v2.1_doc_37_463237391#10_984448281", "d#3"],
    "response_length": 25,
    "answer": [
        {"text": "It depends on readiness.", "citations": [0, 1]},
        {"text": "Try three times a day.", "citations": [1]},
        {"text": "Be patient.", "citations": []},
    ],
}
RAG_2025 = {
    "metadata": {
        "team_id": "team",
        "run_id": "run-25",
        "type": "automatic",
        "narrative_id": 1,
        "narrative": "How did the Industrial Revolution begin?",
    },
    "references": ["seg#1", "seg#2"],
    "answer": [{"text": "It began in Britain.", "citations": [1, 0]}, {"text": "Steam mattered.", "citations": [0]}],
}
RAG_2025_IDS = {**RAG_2025, "answer": [{"text": "It began in Britain.", "citations": ["seg#2", "seg#1"]}]}


def jsonl(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def test_rag_answers_2024_and_2025(tmp_path):
    a, b, c = rf.parse_rag_answers(
        write(
            tmp_path,
            "a.jsonl",
            jsonl(RAG_2024, RAG_2025, {**RAG_2025_IDS, "metadata": {**RAG_2025["metadata"], "narrative_id": "2"}}),
        )
    )
    assert (a.run, a.turn_id, a.layout, a.line, a.topic) == (
        "h2oloo-baseline",
        "2027497",
        rf.RAG_2024,
        1,
        RAG_2024["topic"],
    )
    assert [(s.text, s.citations) for s in a.sentences] == [
        ("It depends on readiness.", tuple(RAG_2024["references"][:2])),
        ("Try three times a day.", (RAG_2024["references"][1],)),
        ("Be patient.", ()),
    ]
    assert a.text == "It depends on readiness. Try three times a day. Be patient."
    assert all(a.text[s.start : s.end] == s.text for s in a.sentences)
    assert (b.run, b.turn_id, b.layout) == ("run-25", "1", rf.RAG_2025)
    assert b.sentences[0].citations == ("seg#2", "seg#1")
    assert c.sentences[0].citations == ("seg#2", "seg#1")  # cited by id ("Format 2")
    assert rf.response_counts([a, b, c]) == {"count": 3, "with_citations": 3, "citations": 8}


@pytest.mark.parametrize("cite_ids", [False, True])
def test_rag_round_trip(tmp_path, cite_ids):
    records = rf.parse_rag_answers(write(tmp_path, "a.jsonl", jsonl(RAG_2024, RAG_2025)))
    out = tmp_path / "out.jsonl"
    response_writing.write_rag_answers(out, records, cite_ids=cite_ids)
    assert rf.parse_rag_answers(out) == records
    if not cite_ids:  # the objects come back as they were written by the participants
        assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == [RAG_2024, RAG_2025]


def test_rag_answers_written_in_the_other_layout(tmp_path):
    (record,) = rf.parse_rag_answers(write(tmp_path, "a.jsonl", jsonl(RAG_2024)))
    as_2025 = response_writing.rag_document(record, layout=rf.RAG_2025)
    assert as_2025["metadata"] == {
        "run_id": "h2oloo-baseline",
        "narrative_id": "2027497",
        "narrative": RAG_2024["topic"],
    }
    out = tmp_path / "out.jsonl"
    response_writing.write_rag_answers(out, [record], layout=rf.RAG_2025)
    (back,) = rf.parse_rag_answers(out)
    assert (back.sentences, back.references, back.turn_id) == (record.sentences, record.references, record.turn_id)


def test_ikat_records_in_the_rag_layout_and_back(tmp_path):
    ikat = rf.parse_ikat_responses(write(tmp_path, "topics.json", IKAT))
    with pytest.raises(FormatError, match=r"citations given per sentence, found 3 citations of the whole response"):
        response_writing.rag_document(ikat[1])
    document = response_writing.rag_document(ikat[0])
    assert document == {
        "run_id": "topics",
        "topic_id": "1-1_1",
        "references": [],
        "answer": [{"text": "Hello.", "citations": []}, {"text": "How can I help?", "citations": []}],
    }


def test_a_repeated_identical_line_is_kept_once(tmp_path):
    assert len(rf.parse_rag_answers(write(tmp_path, "a.jsonl", jsonl(RAG_2024, RAG_2024)))) == 1


def _with(**changes):
    return {**RAG_2024, **changes}


@pytest.mark.parametrize(
    "lines, line, expected",
    [
        (
            [_with(answer=[{"text": "x", "citations": [3]}])],
            1,
            "an index into references 0..2 (3 references) at ['answer'][0]['citations'][0], found 3",
        ),
        ([_with(answer=[{"text": "x", "citations": [-1]}])], 1, "an index into references 0..2"),
        ([_with(references=[], answer=[{"text": "x", "citations": [0]}])], 1, "no citation (0 references)"),
        (
            [_with(answer=[{"text": "x", "citations": ["seg#9"]}])],
            1,
            "a segment id listed in references at ['answer'][0]['citations'][0], found 'seg#9'",
        ),
        (
            [_with(answer=[{"text": "x", "citations": [True]}])],
            1,
            "a citation: an index into references or a segment id",
        ),
        ([_with(answer=[{"text": 7}])], 1, "a str at ['answer'][0]['text'], found int '7'"),
        ([_with(answer=[])], 1, "at least one answer sentence at ['answer']"),
        ([_with(answer="text")], 1, "a list at ['answer']"),
        (
            [RAG_2024, _with(answer=[{"text": "other"}])],
            2,
            "one answer per run and topic ('h2oloo-baseline', topic '2027497' is on line 2)",
        ),
        ([RAG_2024, _with(run_id="bad run")], 2, "a run id: an id of 1..1000 characters"),
        ([_with(references=["ok", "not ok"])], 1, "a segment id: an id of"),
        ([_with(topic_id=None)], 1, "a str or int at ['topic_id'], found NoneType 'null'"),
        ([{"references": [], "answer": []}], 1, "a TREC RAG answer: run_id, topic_id, references, answer (2024)"),
        ([{**RAG_2025, "metadata": {"run_id": "r"}}], 1, "a field 'narrative_id' at ['metadata']"),
        ([["not", "an", "object"]], 1, "a JSON object (one answer per line)"),
    ],
)
def test_bad_rag_lines_name_the_line_and_place(tmp_path, lines, line, expected):
    path = write(tmp_path, "bad.jsonl", "\n" + jsonl(*lines))  # a blank first line: numbers are the file's
    with pytest.raises(FormatError) as err:
        rf.parse_rag_answers(path)
    assert err.value.line == line + 1
    assert str(err.value).startswith(f"{path}:{line + 1}: expected ")
    assert expected in str(err.value)


@pytest.mark.parametrize(
    "content, line, expected",
    [
        ('{"run_id": "r",\n', 1, "one JSON object per line (complete, valid JSON)"),
        ("", None, "at least one answer line"),
        ("\n\n", None, "at least one answer line"),
        (jsonl(RAG_2024) + '{"run_id": NaN}\n', 2, "one JSON object per line"),
    ],
)
def test_bad_rag_files(tmp_path, content, line, expected):
    path = write(tmp_path, "bad.jsonl", content)
    with pytest.raises(FormatError) as err:
        rf.parse_rag_answers(path)
    assert (err.value.line, err.value.file) == (line, str(path))
    assert expected in str(err.value)


_SENTENCE = st.tuples(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30),
    st.lists(st.integers(0, 3), max_size=3),
)


@settings(max_examples=100, deadline=None)
@given(answers=st.lists(st.lists(_SENTENCE, min_size=1, max_size=4), min_size=1, max_size=3), cite_ids=st.booleans())
def test_rag_round_trip_property(tmp_path_factory, answers, cite_ids):
    references = ["p:0", "p:1", "p:2", "p:3"]
    lines = [
        {
            "run_id": "r",
            "topic_id": str(t),
            "references": references,
            "answer": [{"text": x, "citations": c} for x, c in answer],
        }
        for t, answer in enumerate(answers)
    ]
    folder = tmp_path_factory.mktemp("rag")
    records = rf.parse_rag_answers(write(folder, "in.jsonl", jsonl(*lines)))
    response_writing.write_rag_answers(folder / "out.jsonl", records, cite_ids=cite_ids)
    assert rf.parse_rag_answers(folder / "out.jsonl") == records
