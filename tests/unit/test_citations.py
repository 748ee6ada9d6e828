"""Citation recall, precision and supported share (ALCE's definitions read from per-pair labels):
hand-computed cases, the degenerate ones, refusals, and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess import tasks
from assess.errors import AssessError
from assess.measures.citations import Support, response_citation_scores, run_citation_scores

FULL, PARTIAL, NOT, IRRELEVANT = Support.FULL, Support.PARTIAL, Support.NOT_SUPPORTED, Support.IRRELEVANT

# Response A: s0 cites a (full) and b (partial); s1 cites c (partial) and d (not supported); s2 cites nothing.
A_SENTENCES = [["a", "b"], ["c", "d"], []]
A_LABELS = {(0, "a"): FULL, (0, "b"): PARTIAL, (1, "c"): PARTIAL, (1, "d"): NOT}
# Response B: one sentence citing e twice; e is irrelevant to it.
B_SENTENCES = [["e", "e"]]
B_LABELS = {(0, "e"): IRRELEVANT}


def test_codes_are_the_registry_scale():
    scale = getattr(tasks, "CITATION_SUPPORT", None)
    if scale is None:
        pytest.skip("the task registry has no citation scale yet (assess.tasks.CITATION_SUPPORT)")
    assert {s.value for s in Support} == set(scale.names)
    assert scale.names[FULL] == "fully supported" and scale.names[IRRELEVANT] == "citation irrelevant"


def test_one_response_by_hand():
    scores = response_citation_scores(A_SENTENCES, A_LABELS)
    # strict: only s0 has a fully supporting citation; only a is precise (b adds nothing beside a)
    assert scores.recall == pytest.approx(1 / 3)
    assert scores.precision == pytest.approx(1 / 4)
    assert scores.supported == pytest.approx(1 / 3)
    # lax: s1 counts through c; a, b and c are precise (each supports its sentence alone under the lax
    # oracle: ALCE's condition A), d is not
    assert scores.recall_lax == pytest.approx(2 / 3)
    assert scores.precision_lax == pytest.approx(3 / 4)
    assert scores.supported_lax == pytest.approx(2 / 3)
    assert (scores.sentences, scores.citations, scores.responses, scores.unlabelled) == (3, 4, 1, 0)


def test_a_passage_cited_twice_by_one_sentence_counts_once():
    scores = response_citation_scores(B_SENTENCES, B_LABELS)
    assert (scores.recall, scores.precision, scores.citations) == (0.0, 0.0, 1)


def test_a_run_by_hand():
    scores = run_citation_scores({"t1": (A_SENTENCES, ()), "t2": (B_SENTENCES, ())}, {"t1": A_LABELS, "t2": B_LABELS})
    assert scores.recall == pytest.approx((1 / 3 + 0) / 2)  # mean over responses, as ALCE
    assert scores.precision == pytest.approx((1 / 4 + 0) / 2)
    assert scores.supported == pytest.approx((1 / 3 + 0) / 2)  # mean per response (the leaderboard's all row)
    assert scores.supported_micro == pytest.approx(1 / 4)  # pooled over the run's 4 sentences
    assert scores.recall_lax == pytest.approx((2 / 3 + 0) / 2)
    assert scores.precision_lax == pytest.approx((3 / 4 + 0) / 2)
    assert scores.supported_lax == pytest.approx((2 / 3 + 0) / 2)
    assert scores.supported_lax_micro == pytest.approx(2 / 4)
    assert (scores.sentences, scores.citations, scores.responses, scores.unlabelled) == (4, 5, 2, 0)


def test_two_fully_supporting_citations_are_both_precise():
    scores = response_citation_scores([["a", "b"]], {(0, "a"): FULL, (0, "b"): FULL})
    assert (scores.recall, scores.precision, scores.precision_lax) == (1.0, 1.0, 1.0)


def test_partial_citations_alone_are_precise_only_in_the_lax_reading():
    scores = response_citation_scores([["a", "b", "c"]], {(0, "a"): PARTIAL, (0, "b"): PARTIAL, (0, "c"): IRRELEVANT})
    assert (scores.recall, scores.precision) == (0.0, 0.0)
    assert scores.recall_lax == 1.0
    assert scores.precision_lax == pytest.approx(2 / 3)


def _alce_precise(values: dict[str, int], supports) -> dict[str, bool]:
    """ALCE's compute_autoais precision check for one sentence with a label oracle: a passage entails when
    ``supports(label)``, a set of passages when one of them does (princeton-nlp/ALCE eval.py)."""
    joint = any(supports(v) for v in values.values())
    if not joint:
        return dict.fromkeys(values, False)
    if len(values) == 1:
        return dict.fromkeys(values, True)
    out = {}
    for p, v in values.items():
        alone = supports(v)  # condition A
        rest = any(supports(w) for q, w in values.items() if q != p)  # condition B: the others without p
        out[p] = alone or not rest
    return out


def test_lax_precision_follows_alces_rule():
    """Issue 22 item 6: a partial citation beside a full one is precise in the lax reading, as ALCE's own
    rule with the lax oracle (partial counts as entailing) makes it."""
    scores = response_citation_scores([["a", "b"]], {(0, "a"): FULL, (0, "b"): PARTIAL})
    assert (scores.precision, scores.precision_lax) == (0.5, 1.0)
    # every labelling of a 3-citation sentence: our counts equal ALCE's check with each oracle
    values = [FULL, PARTIAL, NOT, IRRELEVANT]
    for x in values:
        for y in values:
            for z in values:
                labels = {(0, "a"): x, (0, "b"): y, (0, "c"): z}
                got = response_citation_scores([["a", "b", "c"]], labels)
                given = {"a": x, "b": y, "c": z}
                strict = _alce_precise(given, lambda v: v == FULL)
                lax = _alce_precise(given, lambda v: v in (FULL, PARTIAL))
                assert got.precision == pytest.approx(sum(strict.values()) / 3), given
                assert got.precision_lax == pytest.approx(sum(lax.values()) / 3), given


def test_citations_of_the_whole_response():
    """iKAT topics: each sentence is labelled against every citation of the response; for precision
    each such citation is one, precise when precise for some sentence."""
    labels = {(0, "p"): FULL, (0, "q"): IRRELEVANT, (1, "p"): NOT, (1, "q"): PARTIAL}
    scores = response_citation_scores([[], []], labels, response_citations=["p", "q", "p"])
    assert (scores.recall, scores.precision) == (0.5, 0.5)
    assert (scores.recall_lax, scores.precision_lax) == (1.0, 1.0)
    assert scores.citations == 2


def test_degenerate_cases():
    nothing_cited = response_citation_scores([[], []], {})
    assert (nothing_cited.recall, nothing_cited.precision, nothing_cited.supported) == (0.0, 0.0, 0.0)
    no_sentences = response_citation_scores([], {})
    assert (no_sentences.recall, no_sentences.precision, no_sentences.sentences) == (None, None, 0)
    empty_run = run_citation_scores({}, {})
    assert (empty_run.recall, empty_run.precision, empty_run.supported, empty_run.responses) == (None, None, None, 0)


def test_unlabelled_citations_are_never_counted():
    partly = {(0, "a"): FULL, (0, "b"): PARTIAL}  # s1's two citations have no label
    scores = response_citation_scores(A_SENTENCES, partly)
    assert (scores.recall, scores.precision, scores.responses, scores.unlabelled) == (None, None, 0, 1)
    run = run_citation_scores({"t1": (A_SENTENCES, ()), "t2": (B_SENTENCES, ())}, {"t1": partly, "t2": B_LABELS})
    assert (run.responses, run.unlabelled, run.recall, run.sentences) == (1, 1, 0.0, 1)  # t2 alone
    with pytest.raises(
        AssessError, match=r"2 citations of response 't1' have no label, e.g. sentence 1 and passage 'c'"
    ):
        run_citation_scores({"t1": (A_SENTENCES, ())}, {"t1": partly}, require_all=True)


def test_labels_of_pairs_that_are_not_citations_are_refused():
    with pytest.raises(AssessError, match=r"not citations, e.g. sentence 2 and passage 'a'"):
        response_citation_scores(A_SENTENCES, {**A_LABELS, (2, "a"): FULL})
    with pytest.raises(AssessError, match=r"responses the run does not have, e.g. 'nope'"):
        run_citation_scores({"t1": (A_SENTENCES, ())}, {"t1": A_LABELS, "nope": {}})


@pytest.mark.parametrize("value", [3, -3, True, 1.5, "2"])  # -2 is 'contradicts' since the scale has it
def test_values_off_the_scale_are_refused(value):
    with pytest.raises(AssessError, match=r"expected one of -2..2"):
        response_citation_scores([["a"]], {(0, "a"): value})


def test_contradicts_is_not_supported_and_counted_by_hand():
    """Sentence 0 cites a (contradicts) and b (full), sentence 1 cites c (cannot judge); w is cited by the whole
    response: contradicts for sentence 0, cannot judge for sentence 1. Citations: a, b, c, w = 4, of which 3 are
    judged (c is not; w is, through sentence 0) and 2 contradict (a, w). Precision strict: b alone of the 2
    assessed (a, b; w is precise for no sentence and cannot be judged for one: out) -> 1/2; recall: sentence 0
    supported, sentence 1 out (its support hangs on c and w) -> 1/1. Reading -2 as 0 gives the same scores."""
    sentences = [["a", "b"], ["c"]]
    labels = {(0, "a"): -2, (0, "b"): 2, (1, "c"): None, (0, "w"): -2, (1, "w"): None}
    got = response_citation_scores(sentences, labels, response_citations=["w"])
    as_zero = response_citation_scores(
        sentences, {k: 0 if v == -2 else v for k, v in labels.items()}, response_citations=["w"]
    )
    assert (got.contradicts, got.judged_citations, got.contradiction_rate) == (2, 3, 2 / 3)
    assert (got.recall, got.precision, got.citations, got.cannot_judge) == (1.0, 0.5, 4, 2)
    assert (as_zero.contradicts, as_zero.contradiction_rate) == (0, 0.0)
    assert [getattr(got, m) for m in ("recall", "precision", "supported", "recall_lax", "precision_lax")] == [
        getattr(as_zero, m) for m in ("recall", "precision", "supported", "recall_lax", "precision_lax")
    ]


_RESPONSE = st.lists(st.lists(st.sampled_from("abcd"), max_size=3), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(sentences=_RESPONSE, data=st.data())
def test_scores_lie_in_0_1_and_lax_is_never_below_strict(sentences, data):
    pairs = sorted({(i, p) for i, ps in enumerate(sentences) for p in ps})
    labels = {pair: data.draw(st.sampled_from(list(Support))) for pair in pairs}
    scores = response_citation_scores(sentences, labels)
    for strict, lax in (
        (scores.recall, scores.recall_lax),
        (scores.precision, scores.precision_lax),
        (scores.supported, scores.supported_lax),
    ):
        assert 0.0 <= strict <= lax <= 1.0
    # the supported share of one response is its recall; full labels everywhere give 1 and 1
    assert scores.supported == scores.recall
    if pairs:
        perfect = response_citation_scores(sentences, dict.fromkeys(pairs, FULL))
        assert perfect.precision == 1.0
        assert perfect.recall == sum(1 for ps in sentences if ps) / len(sentences)


# Response C: s0 cites a (full) and x (cannot judge); s1 cites c (not supported) and y (cannot judge); s2 cites
# d (partial) and z (cannot judge); s3 cites e (not supported).
CANNOT = None
C_SENTENCES = [["a", "x"], ["c", "y"], ["d", "z"], ["e"]]
C_LABELS = {(0, "a"): FULL, (0, "x"): CANNOT, (1, "c"): NOT, (1, "y"): CANNOT, (2, "d"): PARTIAL, (2, "z"): CANNOT}
C_LABELS[(3, "e")] = NOT


def test_cannot_judge_labels_are_left_out_by_hand():
    scores = response_citation_scores(C_SENTENCES, C_LABELS)
    # strict: s0 is supported by a whatever x is; s1 and s2 could be supported by y or z: left out; s3 is not
    # supported -> 1 / 2 (reading 'cannot judge' as not supported would give 1 / 4)
    assert scores.recall == pytest.approx(1 / 2)
    assert scores.supported == pytest.approx(1 / 2)
    # lax: s2 is supported by d (partial); s1 is still left out -> s0, s2 of s0, s2, s3
    assert scores.recall_lax == pytest.approx(2 / 3)
    assert scores.supported_lax == pytest.approx(2 / 3)
    # precision over the four judged citations a, c, d, e (x, y, z out of numerator and denominator):
    # strict a -> 1 / 4, lax a and d -> 2 / 4 (as 0, they would give 1 / 7 and 2 / 7)
    assert scores.precision == pytest.approx(1 / 4)
    assert scores.precision_lax == pytest.approx(2 / 4)
    assert (scores.sentences, scores.citations, scores.cannot_judge, scores.responses) == (4, 7, 3, 1)


def test_a_response_whose_citations_all_cannot_be_judged_has_no_scores_and_a_run_skips_it():
    only = response_citation_scores([["x"]], {(0, "x"): CANNOT})
    assert (only.recall, only.precision, only.recall_lax, only.precision_lax) == (None, None, None, None)
    assert (only.responses, only.unlabelled, only.cannot_judge) == (1, 0, 1)  # labelled: scored, not waiting
    scores = run_citation_scores({"c": (C_SENTENCES, ()), "d": ([["x"]], ())}, {"c": C_LABELS, "d": {(0, "x"): CANNOT}})
    assert scores.recall == pytest.approx(1 / 2) and scores.precision == pytest.approx(1 / 4)  # C's alone
    assert scores.supported == pytest.approx(1 / 2)  # pooled over the judged sentences s0 and s3 of C
    assert (scores.responses, scores.unlabelled, scores.cannot_judge, scores.sentences) == (2, 0, 4, 5)


def test_a_whole_response_citation_that_cannot_be_judged_is_left_out_of_precision():
    # s0 cites a (full); the whole response cites w, which cannot be judged against either sentence
    scores = response_citation_scores(
        [["a"], []], {(0, "a"): FULL, (0, "w"): CANNOT, (1, "w"): CANNOT}, response_citations=["w"]
    )
    assert scores.recall == 1.0  # s1's only citation is w: left out; s0 is supported
    assert scores.precision == 1.0  # a of a (w left out)
    assert (scores.citations, scores.cannot_judge) == (2, 1)
    # precise for one sentence, it counts although it cannot be judged for the other
    mixed = response_citation_scores(
        [["a"], []], {(0, "a"): FULL, (0, "w"): FULL, (1, "w"): CANNOT}, response_citations=["w"]
    )
    assert (mixed.recall, mixed.precision) == (1.0, 1.0)
