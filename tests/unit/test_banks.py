"""RAGTIME nugget banks and DRAGUN rubrics: the layouts (round trips, refusals naming file, line and JSON path)
and the measures on them, each checked against numbers worked by hand."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import AssessError, FormatError
from assess.formats.banks import (
    AGGREGATORS,
    RUBRIC_JUDGMENTS,
    BankAnswer,
    BankNugget,
    NuggetBank,
    read_bank_matches,
    read_nugget_banks,
    read_rubric_judgments,
    read_rubrics,
    write_nugget_banks,
    write_rubric,
    write_rubric_judgments,
)
from assess.measures.banks import (
    NuggetState,
    ReportSupport,
    RubricScore,
    TopicScores,
    citation_relevance,
    coverage,
    f1,
    importance_weight,
    mean_scores,
    nugget_met,
    report_support,
    rubric_topic_score,
    run_averages,
    sentence_support,
    sentence_verdict,
)
from tests.helpers import ROOT

BANKS = ROOT / "assets" / "demo" / "banks"


# ------------------------------------------------------------------------------------------- layouts


def test_the_demo_bank_round_trips_byte_for_byte(tmp_path):
    banks = read_nugget_banks(BANKS / "bank.jsonl")
    assert [b.topic_id for b in banks] == ["101_1", "101_2"]
    first = banks[0].nuggets
    assert [(n.question, n.aggregator, n.importance) for n in first] == [
        ("How should a beginner start?", "OR", 2),
        ("When should a night-shift worker run?", "AND", 1),
    ]
    assert first[0].answers[1].answer == "brisk walking first"
    assert first[0].answers[1].references == ("demo-doc-003:0",)
    assert banks[1].nuggets[0].importance is None
    assert write_nugget_banks(banks) == (BANKS / "bank.jsonl").read_text(encoding="utf-8")


def test_a_bank_per_file_with_every_optional_field_comes_back_equal(tmp_path):
    folder = tmp_path / "banks"
    folder.mkdir()
    bank = {
        "metadata": {"team_id": "t", "topic_id": "x1", "run_id": "r", "run_desc": "d", "extra": [1, 2]},
        "nugget_bank": [
            {
                "question": "Q?",
                "aggregator_type": "AND",
                "answers": [
                    {
                        "answer": "a",
                        "references": ["d1", {"doc_id": "d2", "offsets": {"start_offset": 1}}],
                        "metadata": {"k": 1},
                    },
                    {"answer": "b", "references": []},
                ],
                "importance": "vital",
                "metadata": {"creator": "x"},
            }
        ],
    }
    (folder / "x1.json").write_text(json.dumps(bank, indent=2), encoding="utf-8")
    read = read_nugget_banks(folder)
    again = tmp_path / "again.jsonl"
    again.write_text(write_nugget_banks(read), encoding="utf-8")
    assert read_nugget_banks(again)[0][:3] == read[0][:3]
    assert json.loads(again.read_text()) == bank


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"metadata": {"topic_id": "t"}, "nugget_bank": [{"question": "Q", "aggregator_type": "XOR", "answers": []}]}',
            "expected \"AND\" or \"OR\" at ['nugget_bank'][0]['aggregator_type'], found 'XOR'",
        ),
        (
            '{"metadata": {"topic_id": "t"}, "nugget_bank": [{"question": "Q", "aggregator_type": "OR", "answers": [{"answer": "a", "references": [3]}]}]}',
            "at ['nugget_bank'][0]['answers'][0]['references'][0], found int '3'",
        ),
        (
            '{"metadata": {"team_id": "x"}, "nugget_bank": []}',
            "expected a field 'topic_id' at ['metadata'], found fields ['team_id']",
        ),
        (
            '{"metadata": {"topic_id": "t"}, "nugget_bank": [{"question": "Q", "aggregator_type": "OR", "answers": []}]}',
            "expected at least one answer at ['nugget_bank'][0]['answers'], found an empty list",
        ),
    ],
)
def test_a_malformed_bank_names_file_line_and_json_path(tmp_path, line, expected):
    good = (BANKS / "bank.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(FormatError) as e:
        read_nugget_banks(path)
    assert str(e.value).startswith(f"{path}:2: ")
    assert expected in str(e.value)


def test_a_topic_given_twice_is_refused(tmp_path):
    good = (BANKS / "bank.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "twice.jsonl"
    path.write_text(good + "\n" + good + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"twice.jsonl:2: expected one bank per topic \('101_1' is at .*:1\)"):
        read_nugget_banks(path)


def test_matches_are_read_with_their_sentences_and_refused_when_repeated(tmp_path):
    matches = read_bank_matches(BANKS / "matches.jsonl")
    assert len(matches) == 7
    assert matches[5][:6] == ("101_1", "rt-beta", 2, 2, False, ())
    assert matches[0].sentences == (1,)
    path = tmp_path / "m.jsonl"
    path.write_text('{"topic_id": "a", "run_id": "r", "nugget": 0, "answer": 1}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"m.jsonl:1: expected a number from 1 at \['nugget'\], found 0"):
        read_bank_matches(path)


def test_the_demo_rubrics_round_trip_byte_for_byte():
    rubrics = read_rubrics(BANKS / "rubrics")
    assert [r.topic_id for r in rubrics] == ["101_1", "101_2"]
    q = rubrics[0].questions
    assert [(x.question_id, x.importance, len(x.answers)) for x in q] == [
        ("101_1-1", "A: Have to Know", 2),
        ("101_1-2", "B: Good to Know", 1),
        ("101_1-3", "C: Nice to Know", 1),
    ]
    assert q[0].answers[0] == ("101_1-1-1", "With a walk-run plan.")
    for r in rubrics:
        assert write_rubric(r.document) == (BANKS / "rubrics" / f"{r.topic_id}.json").read_text(encoding="utf-8")


def test_a_rubric_with_an_unknown_importance_is_refused_with_its_path(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(
        '{"topic_id": "t",\n "rubrics": [\n  {"question_id": "q1", "importance": "D: Never",\n   "short_answers": []}]}',
        encoding="utf-8",
    )
    with pytest.raises(FormatError) as e:
        read_rubrics(path)
    assert str(e.value) == (
        f"{path}:3: expected 'A: Have to Know' or 'B: Good to Know' or 'C: Nice to Know' at "
        "['rubrics'][0]['importance'], found 'D: Never'"
    )


def test_judgments_read_in_half_units_and_written_back(tmp_path):
    rows = read_rubric_judgments(BANKS / "judgments.csv")
    assert RUBRIC_JUDGMENTS == {"supports": 2, "partial": 1, "none": 0, "contradicts": -2}
    assert [r.judgment for r in rows[:4]] == [2, 1, 2, -2]
    questions = {
        "101_1-1-1": "101_1-1",
        "101_1-1-2": "101_1-1",
        "101_1-2-1": "101_1-2",
        "101_1-3-1": "101_1-3",
        "101_2-1-1": "101_2-1",
    }
    text = write_rubric_judgments([(r.topic_id, r.run, questions[r.answer_id], r.answer_id, r.judgment) for r in rows])
    assert text == (BANKS / "judgments.csv").read_text(encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text("topic_id,run_tag,answer_id,assessment\nt,r,a,maybe\n", encoding="utf-8")
    with pytest.raises(
        FormatError, match=r"bad.csv:2: expected assessment one of supports, partial, none, contradicts, found 'maybe'"
    ):
        read_rubric_judgments(bad)


def test_autojudge_csv_layouts_of_the_dragun_repository(tmp_path):
    """Issue 34 item 3: trec-dragun/resources writes ``auto_report_assessments.csv`` with the header
    ``topic_id,run_tag,team,answer_id,assessment,reasoning`` at 1b451dff and
    ``topic_id,run_tag,answer_id,auto_assessment,auto_rationale`` at its head (4b60fb6c; ``utils/score.py``
    renames ``auto_assessment`` to ``annotation`` since e2350624). Both read to the same judgments (rows
    written for this test in each layout)."""
    pinned = tmp_path / "pinned.csv"
    pinned.write_text(
        "topic_id,run_tag,team,answer_id,assessment,reasoning\n"
        "t1,run-a,TEAM,na-1,supports,The report says so.\n"
        't1,run-a,TEAM,na-2,contradicts,"It says the opposite, twice."\n',
        encoding="utf-8",
    )
    head = tmp_path / "head.csv"
    head.write_text(
        "topic_id,run_tag,answer_id,auto_assessment,auto_rationale\n"
        "t1,run-a,na-1,supports,The report says so.\n"
        't1,run-a,na-2,contradicts,"It says the opposite, twice."\n',
        encoding="utf-8",
    )

    def read(path):
        return [(r.topic_id, r.run, r.answer_id, r.judgment) for r in read_rubric_judgments(path)]

    expected = [("t1", "run-a", "na-1", 2), ("t1", "run-a", "na-2", -2)]
    assert read(pinned) == read(head) == expected
    neither = tmp_path / "neither.csv"
    neither.write_text("topic_id,run_tag,answer_id,verdict\nt1,run-a,na-1,supports\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"neither.csv:1: expected columns .*annotation\|auto_assessment\|assessment"):
        read_rubric_judgments(neither)


# ------------------------------------------------------------------------------------------- measures


def test_and_needs_every_answer_or_any_one():
    assert nugget_met("AND", 3, 3) and not nugget_met("AND", 3, 2)
    assert nugget_met("OR", 3, 1) and not nugget_met("OR", 3, 0)
    assert not nugget_met("OR", 0, 0) and not nugget_met("AND", 0, 0)  # a nugget without answers is never met
    with pytest.raises(AssessError):
        nugget_met("XOR", 1, 1)


def test_coverage_by_hand():
    # four nuggets: AND 2/2 (met), AND 1/2 (not), OR 1/3 (met), OR 0/1 (not); weights 3, 1, 2, 4
    states = [
        NuggetState("AND", 2, 2, 3),
        NuggetState("AND", 2, 1, 1),
        NuggetState("OR", 3, 1, 2),
        NuggetState("OR", 1, 0, 4),
    ]
    assert coverage([s._replace(weight=1.0) for s in states]) == 2 / 4
    assert coverage(states) == pytest.approx((3 + 2) / (3 + 1 + 2 + 4))
    assert coverage([]) is None
    assert coverage([NuggetState("OR", 1, 1, 0)]) is None  # nothing of positive weight: undefined, not 0/0


def test_importance_weights():
    assert importance_weight(None) == 1.0
    assert importance_weight(2) == 2.0
    assert importance_weight("3") == 3.0
    for bad in ("vital", -1, True, float("nan")):
        with pytest.raises(AssessError):
            importance_weight(bad)


def test_sentence_support_needs_every_citation_as_argue_does():
    """Issue 34 item 1, worked by hand. ARGUE (trevoradriaanse/report_gen_eval ``evaluator.py``
    ``check_citations_relevance``: ``all(response == "YES" ...)``) and Auto-ARGUE (hltcoe/argue-viz: sentences
    "supported by *each* of their citations") need every citation of a sentence to support it. Four cited
    sentences: s1 {A fully}, s2 {A fully, B not}, s3 {A fully}, s4 {A not}. Any-citation reading (before):
    s1, s2, s3 -> 3/4 = 0.75; ARGUE: s1, s3 -> 2/4 = 0.5. Citation support: 3 of 5 citations fully support."""
    report = report_support([[2], [2, 0], [2], [0]])
    assert report == ReportSupport(sentences=4, judged=4, supported=2, citations=5, supporting=3)
    assert sentence_support(report) == 0.5
    # partial support does not attest (ARGUE's judgment is yes / no); irrelevant and contradicts never do
    assert [sentence_verdict(v) for v in ([1], [2, 1], [-1], [-2], [])] == [False, False, False, False, False]
    # 'cannot judge' / unlabelled (None): left out unless another citation already fails the sentence
    assert [sentence_verdict(v) for v in ([None], [2, None], [0, None])] == [None, None, False]
    left = report_support([[2], [2, None], []])
    assert (left.judged, left.supported, left.left_out, left.citations) == (2, 1, 1, 2)
    assert sentence_support(left) == 0.5
    assert sentence_support(report_support([])) == 0.0 and sentence_support(report_support([[None]])) is None
    # R = 1/2, S = 3/4: F1 = 2 * 3/8 / (5/4) = 3/5
    assert f1(0.5, 0.75) == pytest.approx(0.6)
    assert f1(0.0, 0.0) == 0.0 and f1(None, 0.5) is None


# Auto-ARGUE's example run, per topic (sentences_with_citations_or_requiring_citations, correctly_cited_sentences,
# nuggets, correct_nuggets): the counts of hltcoe/argue-viz assets/example-report.scores.tsv (commit ada21228).
ARGUE_VIZ_TOPICS = [
    (15, 14, 15, 9), (10, 10, 10, 7), (10, 9, 10, 6), (12, 12, 12, 8), (11, 10, 11, 6), (18, 16, 19, 15),
    (11, 10, 11, 10), (10, 10, 10, 6), (11, 11, 10, 8), (15, 14, 15, 14), (14, 13, 15, 10), (18, 18, 18, 13),
    (17, 17, 17, 10), (13, 12, 13, 7), (17, 17, 19, 13), (19, 18, 19, 16), (19, 18, 19, 17), (13, 12, 13, 12),
    (10, 10, 10, 6),
]  # fmt: skip


def test_run_averages_are_auto_argues_all_rows():
    """The same file's ``all`` rows from those counts: micro = pooled ratios, macro = mean of the topic values,
    f1_micro = F1 of the micro averages, f1_macro = mean of the topic F1 values (every citation supporting)."""
    topics = [TopicScores(n_ok, n, ReportSupport(den, den, ok, den, ok)) for den, ok, n, n_ok in ARGUE_VIZ_TOPICS]
    got = run_averages(topics)
    assert got["sentence_support_micro"] == pytest.approx(0.9543726235741445, abs=1e-12)
    assert got["sentence_support_macro"] == pytest.approx(0.9549052363456795, abs=1e-12)
    assert got["citation_support_micro"] == pytest.approx(0.9543726235741445, abs=1e-12)
    assert got["nugget_coverage_micro"] == pytest.approx(0.7255639097744361, abs=1e-12)
    assert got["nugget_coverage_macro"] == pytest.approx(0.7159860218357855, abs=1e-12)
    assert got["f1_micro"] == pytest.approx(0.8243863007870667, abs=1e-12)
    assert got["f1_macro"] == pytest.approx(0.8108727761893327, abs=1e-12)
    assert run_averages(topics, support=False) == {
        "nugget_coverage_macro": pytest.approx(0.7159860218357855),
        "nugget_coverage_micro": pytest.approx(0.7255639097744361),
    }


def test_citation_relevance_counts_citations_as_auto_argue_does():
    """Auto-ARGUE's ``citations`` / ``relevant_citations`` count one citation per sentence and cited document
    (its judgments file asks CITED_DOCUMENT_RELEVANCE once per citation of each sentence). hltcoe/argue-viz
    assets/example-report.judgments.jsonl (commit ada21228), topic 300: 15 sentences, one document each, 12
    distinct documents (the 8th is cited by sentences 8, 9 and 15, the 6th by 6 and 11), every one judged
    relevant; its scores.tsv says citations 15, relevant_citations 15, citation_relevance 1.0. Documents named
    by their order of first citation here."""
    cited = [["d1"], ["d2"], ["d3"], ["d4"], ["d5"], ["d6"], ["d7"], ["d8"], ["d8"], ["d9"], ["d6"], ["d10"]]
    cited += [["d11"], ["d12"], ["d8"]]
    grades = {f"d{i}": 2 for i in range(1, 13)}
    assert citation_relevance(cited, grades) == (15, 15)
    # the workbench's grades: d8 graded 1 (below RELEVANT_GRADE) costs its three citations, d12 graded 0 one
    assert citation_relevance(cited, {**grades, "d8": 1, "d12": 0}) == (11, 15)
    # a document without a grade is left out of both counts
    del grades["d12"]
    assert citation_relevance(cited, grades) == (14, 14)
    # a document cited twice in one sentence is one citation of it
    assert citation_relevance([["d1", "d1", "d2"]], {"d1": 2, "d2": 0}) == (1, 2)
    # the example run's all rows: every topic's citations (one per sentence) relevant -> micro = macro = 1.0
    topics = [
        TopicScores(n_ok, n, ReportSupport(den, den, ok, den, ok), relevance=(den, den))
        for den, ok, n, n_ok in ARGUE_VIZ_TOPICS
    ]
    got = run_averages(topics)
    assert (got["citation_relevance_micro"], got["citation_relevance_macro"]) == (1.0, 1.0)
    assert sum(den for den, *_ in ARGUE_VIZ_TOPICS) == 263  # the file's all-row citations and relevant_citations


def test_dragun_scores_by_the_tracks_rule():
    """utils/score.py of trec-dragun/resources: per question the positive (negative) judged scores summed,
    divided by the number judged, times the question's weight; over the topic's total weight."""
    weights = {"q1": 4, "q2": 2, "q3": 1}  # A, B, C: W = 7
    # q1: supports + partial -> (1 + 0.5) / 2 * 4 = 3; q2: supports -> 2; q3: contradicts -> 1 contradictory
    alpha = rubric_topic_score(weights, {"q1": [1, 0.5], "q2": [1], "q3": [-1]})
    assert alpha == pytest.approx(RubricScore(5 / 7, 1 / 7))
    # q1: none + contradicts -> 0 supportive, 1/2 * 4 = 2 contradictory; q2: partial -> 0.5 * 2 = 1; q3: none
    beta = rubric_topic_score(weights, {"q1": [0, -1], "q2": [0.5], "q3": [0]})
    assert beta == pytest.approx(RubricScore(1 / 7, 2 / 7))
    # a question left unjudged still counts in W
    assert rubric_topic_score(weights, {"q1": [1]}) == pytest.approx(RubricScore(4 / 7, 0))
    assert mean_scores([alpha, RubricScore(1.0, 0.0)]) == pytest.approx(RubricScore((5 / 7 + 1) / 2, (1 / 7) / 2))
    assert mean_scores([]) is None
    assert rubric_topic_score({}, {}) is None


def test_the_bank_match_answer_is_parsed_with_its_sentences():
    from assess.llm.prompts import parse_bank_match
    from assess.tasks import ParseStatus

    assert parse_bank_match('{"contains": "yes", "sentences": [3, 1, 3]}', sentences=3) == (
        ParseStatus.OK,
        1,
        "sentences: 1, 3",
    )
    assert parse_bank_match('```json\n{"contains": "no", "sentences": []}\n```', sentences=3) == (
        ParseStatus.OK,
        0,
        None,
    )
    assert parse_bank_match("No.", sentences=3) == (ParseStatus.OK, 0, None)
    assert parse_bank_match('{"contains": "yes", "sentences": [4]}', sentences=3) == (
        ParseStatus.UNPARSEABLE,
        None,
        "sentences [4] are not numbers from 1 to 3",
    )
    assert parse_bank_match('{"contains": "maybe"}', sentences=3).status == ParseStatus.UNPARSEABLE


def _not_a_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return True
    return False


_texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1).filter(str.strip)
_answers = st.builds(BankAnswer, _texts, st.lists(_texts, max_size=3).map(tuple), st.none() | st.just({"k": 1}))
_nuggets = st.builds(
    BankNugget,
    _texts,
    st.sampled_from(AGGREGATORS),
    st.lists(_answers, min_size=1, max_size=3).map(tuple),
    # an importance text is a label of printable characters (a numeric one is held to the numbers' range)
    st.none()
    | st.integers(0, 9)
    | st.text(st.characters(categories=("L", "P"), include_characters=" "), min_size=1, max_size=100)
    .filter(str.strip)
    .filter(str.isprintable)
    .filter(_not_a_number),  # "INF", "nan": numeric texts, held to the numbers' range (drawn as integers above)
    st.none() | st.just({"creator": "x"}),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(_nuggets, max_size=4), _texts)
def test_banks_written_and_read_back_are_the_same_records(tmp_path_factory, nuggets, team):
    bank = NuggetBank("t-1", {"team_id": team, "topic_id": "t-1"}, tuple(nuggets))
    path = tmp_path_factory.mktemp("bank") / "b.jsonl"
    path.write_text(write_nugget_banks([bank]), encoding="utf-8")
    (read,) = read_nugget_banks(path)
    assert read[:3] == bank[:3]
    assert write_nugget_banks([read]) == path.read_text(encoding="utf-8")
