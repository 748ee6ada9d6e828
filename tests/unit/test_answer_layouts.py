"""The answer layouts of the 2025/2026 campaigns (TREC RAG 2026, RAGTIME, iKAT 2025 runs), the RAG topics files
and the AutoJudge leaderboard layouts: files in the writers' form come back byte for byte, records read again are
equal, hard errors name the file, line and JSON path, warnings are given with the answer (stored anyway)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import FormatError
from assess.formats import leaderboard as lb
from assess.formats import rag_topics, response_writing
from assess.formats import responses as rf

# ------------------------------------------------------------------------ one answer per layout, writer's form

RAG26 = {
    "metadata": {
        "team_id": "my-team",
        "narrative_id": "rag2026-37",
        "narrative": "Is congestion pricing fair?",
        "run_id": "my-rag-run",
        "run_desc": "BM25 top-100",
    },
    "references": ["shard_00459_61697", "shard_01012_88420", "shard_00210_44018"],
    "answer": [
        {"text": "Congestion pricing funds transit.", "citations": [0, 1]},
        {"text": "Its costs fall on drivers.", "citations": [1, 2]},
    ],
}
RAGTIME = {
    "metadata": {"team_id": "hltcoe", "run_id": "rt-1", "topic_id": "300", "task": "english"},
    "references": ["a1b2c3d4-0000-0000-0000-000000000001_1", "a1b2c3d4-0000-0000-0000-000000000002_7"],
    "responses": [
        {"text": "The flood began in May.", "citations": {"a1b2c3d4-0000-0000-0000-000000000001_1": 0.9}},
        {"text": "It was reported widely.", "citations": ["a1b2c3d4-0000-0000-0000-000000000002_7"]},
        {"text": "Nothing more is known.", "citations": []},
    ],
}
IKAT = {
    "turn_id": "1-1_2",
    "metadata": {"team_id": "uva", "run_id": "ikat-gen", "run_type": "automatic"},
    "references": {"clueweb22-en0022-52-08268:1": 12.5, "clueweb22-en0022-52-08268:12": 9.0},
    "responses": [
        {
            "text": "Green tea has less caffeine.",
            "citations": {"clueweb22-en0022-52-08268:1": 12.5},
            "ptkb_provenance": [1],
        },
        {"text": "You said you like tea.", "citations": {}, "ptkb_provenance": []},
    ],
}


def jsonl(*objects) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def written(tmp_path, records, layout=None) -> str:
    out = tmp_path / "out.jsonl"
    response_writing.write_rag_answers(out, records, layout=layout)
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "answer, layout",
    [(RAG26, rf.RAG_2026), (RAGTIME, rf.RAGTIME), (IKAT, rf.IKAT_RUN)],
    ids=["trec-rag-2026", "ragtime", "ikat-2025-run"],
)
def test_layout_round_trip_byte_for_byte(tmp_path, answer, layout):
    """Detected from the fields, read, written again: the same bytes; read again: equal records."""
    path = write(tmp_path, "in.jsonl", jsonl(answer))
    warnings: list[str] = []
    first = rf.parse_rag_answers(path, warnings=warnings)
    assert [r.layout for r in first] == [layout]
    assert warnings == []
    assert written(tmp_path, first) == jsonl(answer)
    assert rf.parse_rag_answers(tmp_path / "out.jsonl") == first
    assert rf.parse_rag_answers(path, layout=layout) == first  # named layout: the same records


def test_what_each_layout_reads():
    """The records hold the sentences, their citations (ids), the references and the scores as given."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "a.jsonl", jsonl(RAG26, RAGTIME, IKAT))
        rag, rt, ikat = rf.parse_rag_answers(path)
    assert (rag.run, rag.turn_id, rag.topic) == ("my-rag-run", "rag2026-37", "Is congestion pricing fair?")
    assert [s.citations for s in rag.sentences] == [
        ("shard_00459_61697", "shard_01012_88420"),
        ("shard_01012_88420", "shard_00210_44018"),
    ]
    assert (rt.run, rt.turn_id, rt.text) == (
        "rt-1",
        "300",
        "The flood began in May. It was reported widely. Nothing more is known.",
    )
    assert [s.citations for s in rt.sentences] == [
        ("a1b2c3d4-0000-0000-0000-000000000001_1",),
        ("a1b2c3d4-0000-0000-0000-000000000002_7",),
        (),
    ]
    assert rt.sentence_fields == ({"scores": [0.9]}, {}, {})
    absent = {**RAGTIME, "responses": [*RAGTIME["responses"][:2], {"text": "Nothing more is known."}]}
    with tempfile.TemporaryDirectory() as tmp:  # citations absent (or null): the sentence cites nothing
        assert rf.parse_rag_answers(write(Path(tmp), "b.jsonl", jsonl(absent))) == [rt]
    assert (ikat.run, ikat.turn_id, ikat.line) == ("ikat-gen", "1-1_2", 3)
    assert ikat.references == ("clueweb22-en0022-52-08268:1", "clueweb22-en0022-52-08268:12")
    assert ikat.reference_scores == (12.5, 9.0)
    assert ikat.sentence_fields == ({"ptkb_provenance": [1], "scores": [12.5]}, {"ptkb_provenance": [], "scores": []})


def test_conversions_between_layouts(tmp_path):
    """A 2024 answer written as 2026 keeps the cited references only; as RAGTIME a list of ids per sentence;
    as an iKAT run line scores 1.0 and an empty PTKB provenance. Each is read back with the same sentences."""
    rag24 = {
        "run_id": "r",
        "topic_id": "1-1_2",
        "references": ["p1", "p2", "p3"],
        "answer": [{"text": "One.", "citations": [2, 0]}, {"text": "Two.", "citations": []}],
    }
    record = rf.parse_rag_answers(write(tmp_path, "a.jsonl", jsonl(rag24)))[0]
    as_2026 = json.loads(written(tmp_path, [record], rf.RAG_2026))
    assert list(as_2026["metadata"]) == ["team_id", "narrative_id", "narrative", "run_id", "run_desc"]
    assert as_2026 == {
        "metadata": {"team_id": "", "run_desc": "", "run_id": "r", "narrative_id": "1-1_2", "narrative": ""},
        "references": ["p1", "p3"],
        "answer": [{"text": "One.", "citations": [1, 0]}, {"text": "Two.", "citations": []}],
    }
    as_ragtime = json.loads(written(tmp_path, [record], rf.RAGTIME))
    assert as_ragtime == {
        "metadata": {"team_id": "", "run_id": "r", "topic_id": "1-1_2"},
        "references": ["p1", "p3"],
        "responses": [{"text": "One.", "citations": ["p3", "p1"]}, {"text": "Two.", "citations": []}],
    }
    as_ikat = json.loads(written(tmp_path, [record], rf.IKAT_RUN))
    assert as_ikat == {
        "turn_id": "1-1_2",
        "metadata": {"team_id": "", "run_id": "r", "run_type": "automatic"},
        "references": {"p1": 1.0, "p2": 1.0, "p3": 1.0},
        "responses": [
            {"text": "One.", "citations": {"p3": 1.0, "p1": 1.0}, "ptkb_provenance": []},
            {"text": "Two.", "citations": {}, "ptkb_provenance": []},
        ],
    }
    for layout in (rf.RAG_2026, rf.RAGTIME, rf.IKAT_RUN):
        again = rf.parse_rag_answers(write(tmp_path, "c.jsonl", written(tmp_path, [record], layout)))[0]
        assert (again.layout, again.text, [s.citations for s in again.sentences]) == (
            layout,
            record.text,
            [s.citations for s in record.sentences],
        )


def test_2025_still_read_as_2025_and_2026_told_by_run_desc(tmp_path):
    """A metadata with ``type`` (or without ``run_desc``) is 2025, as before; ``run_desc`` without ``type`` 2026."""
    both = {**RAG26, "metadata": {**RAG26["metadata"], "narrative_id": "2", "type": "automatic"}}
    bare = {**RAG26, "metadata": {"run_id": "r", "narrative_id": 1}}
    path = write(tmp_path, "a.jsonl", jsonl(RAG26, both, bare))
    assert [r.layout for r in rf.parse_rag_answers(path)] == [rf.RAG_2026, rf.RAG_2025, rf.RAG_2025]


# ------------------------------------------------------------------------------------------- warnings


def _advice(tmp_path, *answers, layout=None, topics=None) -> list[str]:
    path = write(tmp_path, "w.jsonl", jsonl(*answers))
    warnings: list[str] = []
    found = list(rf.iter_rag_answers(path, layout=layout, warnings=warnings, topics=topics))
    assert len(found) == len(answers)  # stored anyway
    return [w.replace(f"{path}:", "FILE:") for w in warnings]


def test_rag_2026_warnings(tmp_path):
    many = {
        **RAG26,
        "answer": [{"text": "Four cites.", "citations": [0, 1, 2, 0]}, {"text": "x " * 1030, "citations": [1]}],
    }
    uncited = {**RAG26, "metadata": {**RAG26["metadata"], "narrative_id": "rag2026-38"}, "answer": [RAG26["answer"][0]]}
    assert _advice(tmp_path, many, uncited) == [
        "FILE:1: 4 citations in one sentence (trec-rag-2026 judges the first 3) at ['answer'][0]['citations']",
        "FILE:1: 1032 words (trec-rag-2026 allows 1024) at ['answer']",
        "FILE:2: a reference no sentence cites, 'shard_00210_44018' (trec-rag-2026 lists the cited documents only) "
        "at ['references'][2]",
    ]


def test_ragtime_warnings_count_nfkc_characters(tmp_path):
    """RAGTIME's limit counts NFKC characters of the sentences joined by one space: the ligature 'ﬁ' is two."""
    text = "ﬁ" * 10  # 10 code points, 20 characters after NFKC
    report = {
        **RAGTIME,
        "metadata": {**RAGTIME["metadata"], "limit": 19},
        "responses": [{"text": text, "citations": []}],
    }
    assert rf.char_count([text]) == 20 and rf.char_count(["ab", "c"]) == 4
    assert _advice(tmp_path, {**report, "references": []}) == [
        "FILE:1: 20 characters after NFKC (the request allows 19) at ['responses']"
    ]
    # the requests' limit wins over the report's own; 20 is within it
    assert (
        _advice(tmp_path, {**report, "references": []}, topics={"300": rag_topics.RagTopic("300", "Floods", 20, 1)})
        == []
    )
    undeclared = {**RAGTIME, "references": [RAGTIME["references"][0]]}
    assert _advice(tmp_path, undeclared) == [
        "FILE:1: a cited document missing from references, 'a1b2c3d4-0000-0000-0000-000000000002_7' at "
        "['responses'][1]['citations']"
    ]
    four = {"metadata": RAGTIME["metadata"], "responses": [{"text": "x", "citations": ["a", "b", "c", "d"]}]}
    assert _advice(tmp_path, four) == [
        "FILE:1: 4 citations in one sentence (ragtime judges the first 3) at ['responses'][0]['citations']"
    ]


def test_narrative_checked_against_the_topics(tmp_path):
    topics = {"rag2026-37": rag_topics.RagTopic("rag2026-37", "Is congestion pricing fair to riders?", None, 4)}
    assert _advice(tmp_path, RAG26, topics=topics) == [
        "FILE:1: a narrative other than the text of topic 'rag2026-37' (line 4 of the topics) at ['metadata']['narrative']"
    ]
    same = {"rag2026-37": rag_topics.RagTopic("rag2026-37", RAG26["metadata"]["narrative"], None, 4)}
    assert _advice(tmp_path, RAG26, topics=same) == []


def test_word_limits_of_2025_and_ikat(tmp_path):
    rag25 = {
        "metadata": {"team_id": "t", "run_id": "r", "type": "automatic", "narrative_id": 1, "narrative": "n"},
        "references": ["a"],
        "answer": [{"text": "w " * 401, "citations": [0]}],
    }
    ikat = {**IKAT, "responses": [{"text": "w " * 251, "citations": {}, "ptkb_provenance": []}]}
    assert _advice(tmp_path, rag25, ikat) == [
        "FILE:1: 401 words (trec-rag-2025 allows 400) at ['answer']",
        "FILE:2: 251 words (ikat-2025-run allows 250) at ['responses']",
    ]


# ----------------------------------------------------------------------------------------- hard errors


@pytest.mark.parametrize(
    "answer, layout, expected",
    [
        (
            {**RAG26, "responses": []},
            None,
            "either answer (TREC RAG) or responses (RAGTIME, iKAT run), or a --layout at the top level, found both",
        ),
        (
            {"foo": 1},
            None,
            "a TREC RAG answer: run_id, topic_id, references, answer (2024) or metadata, references, answer (2025, 2026), a RAGTIME report",
        ),
        (
            {**RAG26, "metadata": {k: v for k, v in RAG26["metadata"].items() if k != "team_id"}},
            rf.RAG_2026,
            "a field 'team_id' at ['metadata']",
        ),
        (RAGTIME, rf.RAG_2026, "a field 'narrative' at ['metadata']"),
        (
            {
                **RAG26,
                "references": [f"s{i}" for i in range(101)],
                "metadata": {**RAG26["metadata"], "type": "automatic"},
            },
            None,
            "at most 100 references (trec-rag-2025) at ['references'], found 101",
        ),
        (
            {**RAGTIME, "responses": [{"text": "x", "citations": {"d": "high"}}]},
            None,
            "a numeric score at ['responses'][0]['citations']['d'], found 'high'",
        ),
        (
            {**RAGTIME, "responses": [{"text": "x", "citations": "d"}]},
            None,
            "citations as {document id: score} or [document id] at ['responses'][0]['citations']",
        ),
        ({**RAGTIME, "metadata": {"team_id": "t", "run_id": "r"}}, None, "a field 'topic_id' at ['metadata']"),
        ({**RAGTIME, "responses": []}, None, "at least one response sentence at ['responses'], found an empty list"),
        (
            {**IKAT, "metadata": {**IKAT["metadata"], "run_type": "fast"}},
            None,
            "a run type manual / automatic / generation-only at ['metadata']['run_type'], found 'fast'",
        ),
        (
            {**IKAT, "responses": [{"text": "x", "citations": {"p9": 1}, "ptkb_provenance": []}]},
            None,
            "a passage id listed in references at ['responses'][0]['citations']['p9'], found 'p9'",
        ),
        (
            {**IKAT, "responses": [{"text": "x", "citations": ["p9"], "ptkb_provenance": []}]},
            None,
            "citations as {passage id: score} at ['responses'][0]['citations']",
        ),
        (
            {**IKAT, "responses": [{"text": "x", "citations": {}}]},
            None,
            "a field 'ptkb_provenance' at ['responses'][0]",
        ),
        ({**IKAT, "references": ["p1"]}, None, "a dict at ['references']"),
    ],
)
def test_hard_errors_name_file_line_and_place(tmp_path, answer, layout, expected):
    path = write(tmp_path, "bad.jsonl", "\n" + jsonl(answer))
    with pytest.raises(FormatError) as err:
        rf.parse_rag_answers(path, layout=layout)
    assert str(err.value).startswith(f"{path}:2: expected ")
    assert expected in str(err.value)


# ---------------------------------------------------------------------------------------- RAG topics


def test_rag_topics_tsv_and_requests(tmp_path):
    tsv = write(tmp_path, "q.tsv", "rag2026-37\tIs congestion pricing fair?\n\nrag2026-38\tTea?\n")
    assert rag_topics.parse_rag_topics(tsv) == [
        rag_topics.RagTopic("rag2026-37", "Is congestion pricing fair?", None, 1),
        rag_topics.RagTopic("rag2026-38", "Tea?", None, 3),
    ]
    requests = write(
        tmp_path,
        "r.jsonl",
        jsonl({"request_id": "300", "title": "Floods", "limit": 2000}, {"request_id": 301, "title": "Tea"}),
    )
    assert rag_topics.parse_rag_topics(requests) == [
        rag_topics.RagTopic("300", "Floods", 2000, 1),
        rag_topics.RagTopic("301", "Tea", None, 2),
    ]


@pytest.mark.parametrize(
    "content, line, expected",
    [
        ("a\tb\tc\n", 1, "two tab-separated fields: topic_id, text, found 3 fields"),
        ("a\tx\na\ty\n", 2, "each topic id once ('a' is on line 1), found it again"),
        ("a b\tx\n", 1, "a topic id: an id of"),
        ('{"request_id": "1", "title": "t", "limit": -1}\n', 1, "a character limit >= 0 at ['limit'], found -1"),
        ('{"request_id": "1"}\n', 1, "a field 'title' at the top level"),
        ("", None, "at least one topic line"),
    ],
)
def test_bad_rag_topics(tmp_path, content, line, expected):
    path = write(tmp_path, "bad.tsv", content)
    with pytest.raises(FormatError) as err:
        rag_topics.parse_rag_topics(path)
    assert err.value.line == line
    assert expected in str(err.value)


# --------------------------------------------------------------------------------------- leaderboards

ENTRIES = [
    lb.Entry("run-a", "t1", "citation_recall", 0.5),
    lb.Entry("run-a", "t1", "nDCG@10", 1.0),
    lb.Entry("run-a", "t2", "citation_recall", 0.25),
    lb.Entry("run-b", "t1", "citation_recall", 1.0),
]


def test_all_rows_are_the_means_of_the_topic_rows():
    assert lb.with_all_rows(ENTRIES) == [
        *ENTRIES[:3],
        lb.Entry("run-a", "all", "citation_recall", 0.375),
        lb.Entry("run-a", "all", "nDCG@10", 1.0),
        ENTRIES[3],
        lb.Entry("run-b", "all", "citation_recall", 1.0),
    ]


@pytest.mark.parametrize(
    "layout, first_line",
    [("tot", "run-a\tcitation_recall\tt1\t0.5"), ("ir_measures", "run-a\tt1\tcitation_recall\t0.5")],
)
def test_leaderboard_files_round_trip(tmp_path, layout, first_line):
    entries = lb.with_all_rows(ENTRIES)
    path = tmp_path / f"board.{layout}"
    assert lb.write_leaderboard(path, entries, layout) == {"runs": 2, "lines": 7, "files": 1}
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == first_line and text.endswith("\n") and len(text.splitlines()) == 7
    assert lb.read_leaderboard(path, layout) == entries


def test_trec_eval_leaderboard_is_one_file_per_run(tmp_path):
    entries = lb.with_all_rows(ENTRIES)
    folder = tmp_path / "board"
    assert lb.write_leaderboard(folder, entries, "trec_eval") == {"runs": 2, "lines": 7, "files": 2}
    assert sorted(p.name for p in folder.iterdir()) == ["run-a", "run-b"]
    assert (folder / "run-b").read_text(encoding="utf-8") == "citation_recall\tt1\t1.0\ncitation_recall\tall\t1.0\n"
    assert lb.read_leaderboard(folder, "trec_eval") == entries  # the file's name is its run
    with pytest.raises(FormatError, match="a run id that is a plain file name, found '.hidden'"):
        lb.write_leaderboard(tmp_path / "x", [lb.Entry(".hidden", "t", "m", 1.0)], "trec_eval")


@pytest.mark.parametrize(
    "content, line, expected",
    [
        ("run-a\tm\tt1\n", 1, "4 whitespace-separated fields (run measure topic value), found 3 fields"),
        ("run-a m t1 0.5\nrun-a m t2 high\n", 2, "a finite number in the value field, found 'high'"),
        ("run-a m t1 nan\n", 1, "a finite number in the value field, found 'nan'"),
        ("", None, "at least one leaderboard line, found an empty file"),
    ],
)
def test_bad_leaderboard_lines(tmp_path, content, line, expected):
    path = write(tmp_path, "bad.tot", content)
    with pytest.raises(FormatError) as err:
        lb.read_leaderboard(path, "tot")
    assert err.value.line == line
    assert str(err.value).startswith(f"{path}:{line}: " if line else f"{path}: ")
    assert expected in str(err.value)


# ------------------------------------------------------------------------ AutoJudge's own example files

# trec-auto-judge/auto-judge-base, tests/resources/spot-check-dataset (commit d3a048b4981acbe592e571e40afeb84499085b9b):
# runs/my_best_run_02_with_citations.jsonl (a report with [doc id] citations) and trec-leaderboard.txt (tot).
SPOT_CHECK_RUN = (
    '{"metadata": {"team_id": "my_fantastic_team", "run_id": "my_best_run_02_citations", "topic_id": "28"}, '
    '"responses": [{"text": "Shell integration is a method to approximate the volume of a figure.", "citations": []}, '
    '{"text": "Linear theory has an application in this shell integration calculations.", "citations": ["279"]}, '
    '{"text": "This is all.", "citations": []}], "references": ["279"]}\n'
)
SPOT_CHECK_LEADERBOARD = """my_best_run_01            Measure-01  28  1
my_best_run_02            Measure-01  28  2
my_best_run_02_citations  Measure-01  28  3
my_best_run_01            Measure-02  28  3
my_best_run_02            Measure-02  28  2
my_best_run_02_citations  Measure-02  28  1
my_best_run_01            Measure-01  all  1
my_best_run_02            Measure-01  all  2
my_best_run_02_citations  Measure-01  all  3
my_best_run_01            Measure-02  all  3
my_best_run_02            Measure-02  all  2
my_best_run_02_citations  Measure-02  all  1
"""


def test_autojudge_spot_check_files(tmp_path):
    """AutoJudge's example report reads as RAGTIME without warnings and comes back with the same content; its
    truth leaderboard (space-aligned ``tot``) reads with its ``all`` rows, which equal our recomputed ones."""
    warnings: list[str] = []
    report = rf.parse_rag_answers(write(tmp_path, "run.jsonl", SPOT_CHECK_RUN), warnings=warnings)
    assert warnings == [] and [(r.layout, r.run, r.turn_id) for r in report] == [
        (rf.RAGTIME, "my_best_run_02_citations", "28")
    ]
    assert [s.citations for s in report[0].sentences] == [(), ("279",), ()]
    assert json.loads(written(tmp_path, report)) == json.loads(SPOT_CHECK_RUN)
    entries = lb.read_leaderboard(write(tmp_path, "truth.txt", SPOT_CHECK_LEADERBOARD), "tot")
    assert len(entries) == 12 and entries[0] == lb.Entry("my_best_run_01", "28", "Measure-01", 1.0)
    topics = [e for e in entries if e.topic != "all"]
    assert sorted(lb.with_all_rows(topics)) == sorted(entries)


# --------------------------------------------------------------------------------------- property: round trips

_IDS = st.sampled_from(["d1", "d2", "shard_1_2", "clueweb22-en0022-52-08268:1", "é-doc"])
_TEXT = st.text(alphabet=st.sampled_from(list('ab .!?é"ﬁ\\')), min_size=1, max_size=20)
_SCORE = st.one_of(st.integers(-5, 100), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


@st.composite
def _answers(draw):
    """An answer in the writer's form of one of the three layouts."""
    layout = draw(st.sampled_from([rf.RAG_2026, rf.RAGTIME, rf.IKAT_RUN]))
    refs = draw(st.lists(_IDS, unique=True, max_size=4))
    cites = st.lists(st.sampled_from(refs), max_size=4) if refs else st.just([])
    sentences = draw(st.lists(st.tuples(_TEXT, cites), min_size=1, max_size=4))
    if layout == rf.RAG_2026:
        head = {"team_id": "t", "narrative_id": "q1", "narrative": draw(_TEXT), "run_id": "r", "run_desc": "d"}
        answer = [{"text": t, "citations": [refs.index(c) for c in cs]} for t, cs in sentences]
        return {"metadata": head, "references": refs, "answer": answer}
    if layout == rf.RAGTIME:
        responses = []
        for t, cs in sentences:
            scored = draw(st.booleans())
            citations = {c: draw(_SCORE) for c in cs} if scored else cs
            responses.append({"text": t, "citations": citations})
        out = {"metadata": {"team_id": "t", "run_id": "r", "topic_id": "q1"}}
        return {**out, **({"references": refs} if refs else {}), "responses": responses}
    responses = [
        {
            "text": t,
            "citations": {c: draw(_SCORE) for c in cs},
            "ptkb_provenance": draw(st.lists(st.integers(1, 9), max_size=2)),
        }
        for t, cs in sentences
    ]
    head = {"team_id": "t", "run_id": "r", "run_type": "manual"}
    return {"turn_id": "1-1_1", "metadata": head, "references": {r: draw(_SCORE) for r in refs}, "responses": responses}


@settings(max_examples=80, deadline=None)
@given(answer=_answers())
def test_any_answer_in_writers_form_round_trips(tmp_path_factory, answer):
    tmp = tmp_path_factory.mktemp("prop")
    path = write(tmp, "in.jsonl", jsonl(answer))
    first = rf.parse_rag_answers(path)
    assert written(tmp, first) == jsonl(answer)
    assert rf.parse_rag_answers(tmp / "out.jsonl") == first
