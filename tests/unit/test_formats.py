"""Readers of the iKAT / CAsT formats: quirks tolerated, bad input refused with file and line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess import formats
from assess.errors import FormatError
from assess.formats import trec


def write(tmp_path, name, content, mode="w"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def test_qrels_tolerates_tabs_trailing_spaces_crlf_bom_and_blank_lines(tmp_path):
    path = write(tmp_path, "q.txt", "\ufeff0_1\t0\tclueweb22-en0025-76-08262:14 \t3\r\n\r\n9-1_3 0 p:2 0  \r\n")
    rows = formats.parse_qrels(path)
    assert [(r.turn_id, r.item_id, r.grade, r.line) for r in rows] == [
        ("0_1", "clueweb22-en0025-76-08262:14", 3, 1),
        ("9-1_3", "p:2", 0, 3),
    ]


def test_qrels_identical_duplicate_lines_are_kept_once(tmp_path):
    path = write(tmp_path, "q.txt", "1_1 0 p 2\n1_1 0 p 2\n")
    assert len(formats.parse_qrels(path)) == 1


@pytest.mark.parametrize(
    "content, line, expected",
    [
        ("1_1 0 p\n", 1, "4 fields"),
        ("1_1 0 p 2\n1_1 0 q 9\n", 2, "a grade 0..4"),
        ("1_1 0 p two\n", 1, "an integer grade"),
        ("1_1 0 p 2\n1_1 0 p 3\n", 2, "one value per item"),
        ("1_1 0 p -1\n", 1, "a grade 0..4"),
    ],
)
def test_bad_qrels_name_the_line(tmp_path, content, line, expected):
    path = write(tmp_path, "bad.qrels", content)
    with pytest.raises(FormatError) as err:
        formats.parse_qrels(path)
    assert err.value.line == line
    assert expected in str(err.value)
    assert str(path) in str(err.value)


def test_invalid_utf8_names_line_and_byte(tmp_path):
    path = write(tmp_path, "bad.qrels", b"1_1 0 p 2\n1_1 0 q\xff 1\n")
    with pytest.raises(FormatError, match=r"bad.qrels:2: expected UTF-8 text, found the byte 0xff"):
        formats.parse_qrels(path)


def test_run_is_ranked_like_trec_eval(tmp_path):
    # Score descending, ties broken by passage id descending (docs/measures.md, "trec_eval conventions"); the rank column is ignored.
    path = write(tmp_path, "r.run", "1_1 Q0 d2 1 5 tag\n1_1 Q0 d7 2 5 tag\n1_1 Q0 d1 3 9 tag\n")
    ranked = formats.rank_run(formats.parse_run(path))[("tag", "1_1")]
    assert [r.passage_id for r in ranked] == ["d1", "d7", "d2"]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("1_1 Q0 d1 1 x tag\n", "a numeric score"),
        ("1_1 Q0 d1 one 3 tag\n", "an integer rank"),
        ("1_1 Q0 d1 1 3 tag\n1_1 Q0 d1 2 2 tag\n", "each passage once per turn"),
        ("1_1 Q0 d1 1 nan tag\n", "a finite score"),
    ],
)
def test_bad_runs(tmp_path, content, expected):
    with pytest.raises(FormatError, match=expected):
        formats.parse_run(write(tmp_path, "r.run", content))


def test_topics_2024_2023_and_2025_schemas(tmp_path):
    t2024 = [
        {
            "number": 0,
            "title": "T",
            "ptkb": {"1": "a", "2": "b"},
            "turns": [
                {
                    "turn_id": 1,
                    "utterance": "u",
                    "resolved_utterance": "r",
                    "response": "x",
                    "ptkb_provenance": [2],
                    "response_provenance": ["d:1"],
                }
            ],
        }
    ]
    t2023 = [
        {
            "number": "9-1",
            "title": "T",
            "ptkb": {"1": "a"},
            "turns": [{"turn_id": 3, "utterance": "u", "ptkb_provenance": []}],
        }
    ]
    t2025 = [
        {
            "number": "1-1",
            "title": "T",
            "ptkb": ["a", "b", "c"],
            "responses": [
                {
                    "turn_id": 2,
                    "user_utterance": "u",
                    "resolved_utterance": "r",
                    "response": "x",
                    "relevant_ptkbs": [3],
                    "citations": [],
                }
            ],
        }
    ]
    c24 = formats.parse_topics(write(tmp_path, "a.json", json.dumps(t2024)))[0]
    c23 = formats.parse_topics(write(tmp_path, "b.json", json.dumps(t2023)))[0]
    c25 = formats.parse_topics(write(tmp_path, "c.json", json.dumps(t2025)))[0]
    assert (c24.year, c24.turns[0].id, c24.turns[0].relevant_ptkb) == (2024, "0_1", ("2",))
    assert (c23.year, c23.turns[0].id) == (2023, "9-1_3")
    assert (c25.year, c25.turns[0].id, c25.ptkb["3"], c25.turns[0].relevant_ptkb) == (2025, "1-1_2", "c", ("3",))


def test_json_type_error_names_the_line_of_the_bad_value(tmp_path):
    doc = '[\n {"number": 0, "title": "T", "ptkb": {"1": "a"},\n  "turns": [\n   {"turn_id": 1},\n   {"turn_id": "x"}\n  ]\n }\n]\n'
    with pytest.raises(FormatError) as err:
        formats.parse_topics(write(tmp_path, "t.json", doc))
    assert err.value.line == 5
    assert "an integer turn id" in str(err.value)


def test_truncated_json_names_the_end(tmp_path):
    with pytest.raises(FormatError, match=r"t.json:2: expected complete, valid JSON, found the end of the file"):
        formats.parse_topics(write(tmp_path, "t.json", '[{"number": 0,\n "title": "T"'))


def test_ntr_ids_are_decoded(tmp_path):
    rows = formats.parse_ntr_labels(write(tmp_path, "l.tsv", "1_14_4_1_iires-1\t0\n3_9_2_12_uva-3\t1\n"))
    assert [(r.batch, r.turn_id, r.nugget_key, r.run, r.match) for r in rows] == [
        ("1", "14_4", "[1]", "iires-1", 0),
        ("3", "9_2", "[12]", "uva-3", 1),
    ]


def test_passages_jsonl_joins_doc_and_passage_ids(tmp_path):
    path = write(
        tmp_path,
        "p.jsonl",
        json.dumps({"doc_id": "d", "passage_id": "4", "passage_text": "hé"})
        + "\n"
        + json.dumps({"id": "x:1", "contents": "t"})
        + "\n",
    )
    assert [(p.passage_id, p.text) for p in formats.parse_passages(path)] == [("d:4", "hé"), ("x:1", "t")]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0_1", "0_2", "9-1_3"]),
            st.text("abcdef0123456789:-", min_size=1, max_size=12),
            st.integers(0, 4),
        ),
        max_size=40,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_qrels_write_then_read_round_trips(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("rt") / "q.qrels"
    path.write_text("".join(formats.format_qrels(rows)))
    if not rows:
        with pytest.raises(FormatError):
            formats.parse_qrels(path)
        return
    assert [(q.turn_id, q.item_id, q.grade) for q in formats.parse_qrels(path)] == rows


_FIELD = st.sampled_from(
    ["0_1", "9-1_3", "0", "p:1", "p:2", "clueweb22-en0025-76-08262:14", "2", "4", "7", "x", "-1", "Q0", "é:1"]
)
_SPACE = st.sampled_from([" ", "\t", "  ", " \t", "\u00a0", "\x0b"])
_LINE = st.one_of(
    st.lists(_FIELD, min_size=0, max_size=6).flatmap(
        lambda fields: st.lists(_SPACE, min_size=len(fields) + 1, max_size=len(fields) + 1).map(
            lambda spaces: spaces[0] * (len(fields) % 2) + "".join(f + s for f, s in zip(fields, spaces[1:]))
        )
    ),
    st.sampled_from(["", "\r", " ", "0_1 0 p:1 2", "0_1 0 p:1 3", "9-1_3 0 p:2 0\r"]),
)
_GOOD_LINE = st.tuples(
    st.sampled_from(["0_1", "9-1_3", "0_8"]),
    _SPACE,
    st.integers(0, 10**6).map(lambda i: f"é:{i}"),
    _SPACE,
    st.sampled_from("01234"),
    st.sampled_from(["", " ", "\t"]),
).map(lambda t: f"{t[0]}{t[1]}0{t[1]}{t[2]}{t[3]}{t[4]}{t[5]}")


def _outcome(read):
    try:
        return [tuple(q) for q in read()]
    except FormatError as exc:
        return ("refused", str(exc))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_GOOD_LINE, _GOOD_LINE, _GOOD_LINE, _LINE), max_size=12),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_qrels_column_reader_agrees_with_the_line_reader(tmp_path_factory, lines, newline, final_newline):
    """The column-wise fast path gives exactly the line-by-line reader's records (line numbers
    included) or the same refusal, whatever the whitespace, blank lines, repeats or bad fields."""
    path = tmp_path_factory.mktemp("q") / "q.qrels"
    path.write_bytes((newline.join(lines) + (newline if final_newline else "")).encode("utf-8"))
    expected = _outcome(lambda: trec._read_qrels(path, 0, 4, "passage id"))
    assert _outcome(lambda: formats.parse_qrels(path)) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(_GOOD_LINE, min_size=1, max_size=30), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_qrels_well_formed_files_take_the_column_reader(tmp_path_factory, lines, newline, final_newline):
    path = tmp_path_factory.mktemp("q") / "q.qrels"
    path.write_bytes((newline.join(lines) + (newline if final_newline else "")).encode("utf-8"))
    keys = [(line.split()[0], line.split()[2]) for line in lines]
    fast = trec._qrels_by_column(formats.read_text(path), 0, 4)
    assert (fast is not None) == (len(set(keys)) == len(keys))  # repeated items go line by line
    assert _outcome(lambda: formats.parse_qrels(path)) == _outcome(lambda: trec._read_qrels(path, 0, 4, "passage id"))


_RUN_FIELD = st.sampled_from(
    ["1_1", "Q0", "d:1", "tag", "7", "007", "-1", "+1", "2.5", ".5", "5.", "1e5", "1E-3", "1e999", "-0", "nan"]
    + ["inf", "1_0", "\u0662", "\uff12", "x" * 1001, "", "1e99999", "0x1", "1" * 19]
)


_RUN_LINE = st.one_of(
    st.lists(_RUN_FIELD, min_size=5, max_size=7).map(" ".join),
    st.tuples(  # six fields, ranks and scores mostly valid
        st.sampled_from(["1_1", "x" * 1000, "x" * 1001]),
        st.sampled_from(["7", "007", "1" * 18, "1" * 19, "+1"]),
        st.sampled_from(["2.5", ".5", "5.", "-1e-300", "1e308", "1e309", "-0", "9" * 101, "1_0"]),
        st.sampled_from(["tag", "\tt", "t\t"]),
    ).map(lambda f: f"{f[0]} Q0 d:1 {f[1]} {f[2]} {f[3]}"),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_RUN_LINE, min_size=1, max_size=6),
    st.sampled_from(["\n", "\r\n"]),
    st.integers(1, 99),
)
def test_run_blocks_read_by_column_as_line_by_line(lines, end, first_line):
    """The column-wise reader of a run block accepts only blocks the line reader accepts, with the same records."""
    text = end.join(lines) + end
    by_column = trec._run_by_column(text, first_line)
    try:
        by_line = [trec._run_row("r.run", n, line) for n, line in formats.reading.lines_of(text, first_line)]
    except FormatError:
        by_line = None
    if by_column is not None:
        assert by_column == by_line
    elif by_line is not None:  # line by line where the column reader declined: only for blank lines
        assert any(not line.strip() for line in text.split("\n")[:-1])
