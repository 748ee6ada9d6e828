"""Citation measures of generated responses from human (or LLM) citation-support labels.

A label says how one cited passage bears on one response sentence (:class:`Support`, the codes of
the task registry's ``citation`` scale): 2 fully supported, 1 partially supported, 0 not supported,
-1 the citation is irrelevant to the sentence. The measures are ALCE's citation recall and precision (Gao, Yen, Yu & Chen 2023,
"Enabling Large Language Models to Generate Text with Citations", EMNLP, section 2.3 and the
``compute_autoais`` function of its code), which ask an NLI model whether a set of passages entails
a sentence. Here the labels answer instead, one (sentence, passage) pair at a time:

- a sentence's citations *jointly support* it when at least one is labelled fully supported
  (strict), or fully or partially supported (lax). Per-pair labels cannot see support that only the
  combination of several passages gives; partial support is what the lax reading counts.
- **citation recall** of a response = supported sentences / all sentences; a sentence citing
  nothing counts 0 (as in ALCE).
- **citation precision** of a response = precise citations / all citations (0 when the response
  cites nothing, as in ALCE). ALCE's rule (``compute_autoais``): when the sentence's citations
  jointly support it, a citation is precise if it supports the sentence alone (condition A) or if
  the others do not support it without it (condition B); when they do not, none is precise. Here
  the labels are the NLI oracle, read strictly (a passage supports when labelled fully supported)
  or laxly (fully or partially), and a set supports when one of its passages does. ALCE's rule then
  gives: strict, a citation is precise exactly when it is labelled fully supported; lax, exactly
  when it is labelled fully or partially supported (it passes condition A), so a partial citation
  beside a full one is precise in the lax reading. This follows ALCE; an earlier version called a
  partial citation beside a full one imprecise under the lax reading, which ALCE's rule does not.
- **supported share** = sentences with at least one supporting citation (strict: fully, lax: fully
  or partially) / all sentences. A run's ``supported`` is its mean per response (the trec_eval / AutoJudge
  convention of a run's ``all`` row: with every sentence judged it equals recall, which counts the same
  sentences); ``supported_micro`` pools the sentences of the run's responses.

Citations of a whole response (the iKAT topics name no sentence): every sentence is labelled
against each of them; for recall they count as citations of every sentence, and for precision each
is one citation, precise when it is precise for at least one sentence.

**Cannot judge** (a label of None: the assessor could not tell, e.g. the passage has no text) is left out,
never read as 0 or as unsupported: such a citation counts as labelled (its response is scored), is
out of precision's numerator and denominator, and a sentence is out of recall and the supported share
exactly when its support depends on it: none of its other citations supports it (in that reading) and
one of its citations cannot be judged. A citation of the whole response is out of precision when it is
precise for no sentence and cannot be judged for one. A response whose every citation is left out has no
precision (None, not ALCE's 0 for a response citing nothing); one whose every sentence is left out has no
recall. ``cannot_judge`` counts the citations of the scored responses labelled so.

**Contradicts** (-2, :data:`assess.tasks.CITATION_CONTRADICTS`: the passage states the opposite of the
sentence) is a judged label that never supports: in recall, precision and the supported share it counts
exactly as "not supported" (0). ``contradicts`` counts the contradicting citations of the scored responses and
``judged_citations`` those with a label other than "cannot judge"; the **contradiction rate** is their ratio
(None without a judged citation), pooled over a run's scored responses. A citation of the whole response is
judged when one of its sentence labels is not "cannot judge", and contradicting when one is "contradicts".

A citation cited twice by one sentence counts once. Unlabelled citations are never counted as
anything: a response with one is not scored (its scores are None) and is counted in
``unlabelled``; ``require_all=True`` refuses it instead. A label of a pair that is not a citation
of the response is refused (:class:`~assess.errors.AssessError`). A response without sentences has
no recall (None). A run's recall and precision are means over its scored responses (None when none
is scored).

A response that cites nothing needs no label and scores 0 (as in ALCE), but in a run it counts only
when every citation of the run is labelled: while a run is partly labelled, its responses without
citations are left out (``uncited_left_out``) with the responses that wait for labels, so a run is
never scored on its uncited responses' zeros beside a few labelled ones (a run of 31 uncited and 2
labelled, fully supported responses would otherwise show recall 0.06). A fully labelled run gets
ALCE's numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from assess.errors import AssessError

CANNOT_JUDGE = None
"""The label of a pair the assessor cannot judge (stored as a NULL support, :data:`assess.tasks.CITATION_SUPPORT`)."""


class Support(IntEnum):
    """How a cited passage bears on a response sentence."""

    CONTRADICTS = -2  # the passage states the opposite of the sentence (never supports it)
    IRRELEVANT = -1  # the passage is not about what the sentence says
    NOT_SUPPORTED = 0  # on the subject, but it does not back the sentence (or contradicts it)
    PARTIAL = 1  # backs part of the sentence
    FULL = 2  # backs the whole sentence


def citation_supports(value: int | None, *, lax: bool = False) -> bool | None:
    """Whether one citation label counts as support: fully supported (lax: also partially); None when the label
    is "cannot judge" or there is none (pass ``labels.get(pair)``): left out, never read as unsupported.

    The one place every measure reading citation support (``score citations``, the leaderboards, the banks'
    sentence support) asks it."""
    if value is CANNOT_JUDGE:
        return None
    return value == Support.FULL or (lax and value == Support.PARTIAL)


@dataclass(frozen=True, slots=True)
class CitationScores:
    """Citation recall, precision and supported share, strict and lax, with what they were computed on."""

    recall: float | None
    precision: float | None
    supported: float | None
    recall_lax: float | None
    precision_lax: float | None
    supported_lax: float | None
    sentences: int  # sentences of the scored responses
    citations: int  # citations of the scored responses (precision's denominator unless some cannot be judged)
    responses: int = 1  # responses scored
    unlabelled: int = 0  # responses (in a run: of all given) left unscored for want of labels
    uncited: int = 0  # responses citing nothing (scored 0 when the run is fully labelled)
    uncited_left_out: int = 0  # of those, left out because other responses of the run wait for labels
    cannot_judge: int = 0  # citations of the scored responses labelled 'cannot judge' (left out of the measures)
    contradicts: int = 0  # citations of the scored responses that contradict their sentence
    judged_citations: int = 0  # citations of the scored responses with a label other than 'cannot judge'
    supported_micro: float | None = None  # a run's supported share pooled over its sentences (None: one response)
    supported_lax_micro: float | None = None

    @property
    def contradiction_rate(self) -> float | None:
        """Contradicting / judged citations (None: no judged citation)."""
        return _ratio(self.contradicts, self.judged_citations)


@dataclass(frozen=True, slots=True)
class _Counts:
    supported: int  # sentences
    precise: int  # citations
    supported_lax: int
    precise_lax: int
    sentences: int
    citations: int
    judged: int  # sentences whose (strict) support is known: recall's denominator
    judged_lax: int
    assessed: int  # citations whose (strict) precision is known: precision's denominator
    assessed_lax: int
    cannot_judge: int  # citations labelled 'cannot judge'
    contradicts: int  # citations labelled 'contradicts' (a whole-response citation: for some sentence)
    judged_citations: int  # citations with a label other than 'cannot judge' (whole-response: for some sentence)


def response_citation_scores(
    sentences: Sequence[Iterable[str]],
    labels: Mapping[tuple[int, str], int | None],
    *,
    response_citations: Iterable[str] = (),
    require_all: bool = False,
) -> CitationScores:
    """Citation recall, precision and supported share of one response (definitions in the module docstring).

    ``sentences``: per sentence (in order) the passage ids it cites; ``labels``: (sentence index,
    passage id) → :class:`Support` value or :data:`CANNOT_JUDGE`; ``response_citations``: passages cited by
    the whole response.
    """
    counts = _counts(sentences, labels, response_citations, require_all)
    if counts is None:
        return CitationScores(None, None, None, None, None, None, 0, 0, responses=0, unlabelled=1)
    return CitationScores(
        recall=_ratio(counts.supported, counts.judged),
        precision=_precision(counts, lax=False),
        supported=_ratio(counts.supported, counts.judged),
        recall_lax=_ratio(counts.supported_lax, counts.judged_lax),
        precision_lax=_precision(counts, lax=True),
        supported_lax=_ratio(counts.supported_lax, counts.judged_lax),
        sentences=counts.sentences,
        citations=counts.citations,
        cannot_judge=counts.cannot_judge,
        contradicts=counts.contradicts,
        judged_citations=counts.judged_citations,
    )


def _precision(counts: _Counts, *, lax: bool) -> float | None:
    """Precise / assessed citations; 0 for a response with sentences citing nothing (ALCE); None without
    sentences, or when every citation was left out as 'cannot judge'."""
    precise, assessed = (counts.precise_lax, counts.assessed_lax) if lax else (counts.precise, counts.assessed)
    if assessed:
        return precise / assessed
    return 0.0 if counts.sentences and not counts.citations else None


def run_citation_scores(
    responses: Mapping[str, tuple[Sequence[Iterable[str]], Iterable[str]]],
    labels: Mapping[str, Mapping[tuple[int, str], int | None]],
    *,
    require_all: bool = False,
) -> CitationScores:
    """The run's citation scores: recall, precision and the supported share are means over its scored
    responses (ALCE averages per response; the leaderboard's ``all`` row is this mean of its response rows);
    ``supported_micro`` / ``supported_lax_micro`` pool the supported share over their sentences.

    ``responses``: response key (e.g. the turn id) → (per sentence the cited passage ids, the
    response's own citations); ``labels``: response key → that response's labels. Labels of a
    response not in ``responses`` are refused.
    """
    unknown = sorted(set(labels) - set(responses))
    if unknown:
        raise AssessError(f"citation labels for {len(unknown)} responses the run does not have, e.g. {unknown[0]!r}")
    per = []
    uncited = []
    unlabelled = 0
    for key, (sentences, own) in responses.items():
        counts = _counts(sentences, labels.get(key, {}), own, require_all, key)
        if counts is None:
            unlabelled += 1
        elif counts.citations == 0 and counts.sentences:
            uncited.append(counts)
        else:
            per.append(counts)
    if not unlabelled:  # fully labelled: the uncited responses' zeros are ALCE's numbers
        per.extend(uncited)
    scored = [c for c in per if c.sentences]

    def known(values: list[float | None]) -> list[float]:
        return [v for v in values if v is not None]

    return CitationScores(
        recall=_mean(known([_ratio(c.supported, c.judged) for c in scored])),
        precision=_mean(known([_precision(c, lax=False) for c in scored])),
        supported=_mean(known([_ratio(c.supported, c.judged) for c in scored])),
        recall_lax=_mean(known([_ratio(c.supported_lax, c.judged_lax) for c in scored])),
        precision_lax=_mean(known([_precision(c, lax=True) for c in scored])),
        supported_lax=_mean(known([_ratio(c.supported_lax, c.judged_lax) for c in scored])),
        sentences=sum(c.sentences for c in per),
        citations=sum(c.citations for c in per),
        responses=len(scored),
        unlabelled=unlabelled,
        uncited=len(uncited),
        uncited_left_out=len(uncited) if unlabelled else 0,
        cannot_judge=sum(c.cannot_judge for c in per),
        contradicts=sum(c.contradicts for c in per),
        judged_citations=sum(c.judged_citations for c in per),
        supported_micro=_ratio(sum(c.supported for c in per), sum(c.judged for c in per)),
        supported_lax_micro=_ratio(sum(c.supported_lax for c in per), sum(c.judged_lax for c in per)),
    )


def _counts(
    sentences: Sequence[Iterable[str]],
    labels: Mapping[tuple[int, str], int | None],
    response_citations: Iterable[str],
    require_all: bool,
    key: str | None = None,
) -> _Counts | None:
    """The response's supported sentences and precise citations, strict and lax; None when a citation is unlabelled."""
    where = f" of response {key!r}" if key is not None else ""
    own = tuple(dict.fromkeys(response_citations))
    cited = [tuple(dict.fromkeys((*passages, *own))) for passages in sentences]
    pairs = {(i, p) for i, passages in enumerate(cited) for p in passages}
    stray = sorted((k for k in labels if k not in pairs), key=repr)
    if stray:
        raise AssessError(
            f"{len(stray)} citation labels{where} for pairs that are not citations, e.g. sentence {stray[0][0]!r} "
            f"and passage {stray[0][1]!r}"
        )
    missing = len(pairs) - len(labels)
    if missing:
        if require_all:
            first = min((k for k in pairs if k not in labels), key=repr)
            raise AssessError(
                f"{missing} citations{where} have no label, e.g. sentence {first[0]} and passage {first[1]!r}"
            )
        return None
    for pair, value in labels.items():
        if value is not CANNOT_JUDGE and (isinstance(value, bool) or value not in Support._value2member_map_):
            raise AssessError(
                f"citation label{where} for {pair!r}: expected one of -2..2 or None (cannot judge), found {value!r}"
            )
    supported = supported_lax = judged = judged_lax = 0
    precise = precise_lax = citations = unknown = contradicting = 0
    contradicting_own: set[str] = set()
    judged_own: set[str] = set()
    precise_own: set[str] = set()
    precise_own_lax: set[str] = set()
    unknown_own: set[str] = set()
    for i, passages in enumerate(cited):
        values = {p: labels[(i, p)] for p in passages}
        full = any(citation_supports(v) for v in values.values())
        lax = full or any(citation_supports(v, lax=True) for v in values.values())
        undecided = any(citation_supports(v) is None for v in values.values())  # could have supported the sentence
        supported += full
        supported_lax += lax
        judged += full or not undecided
        judged_lax += lax or not undecided
        for p, v in values.items():
            strict_ok = citation_supports(v) is True
            lax_ok = citation_supports(v, lax=True) is True  # ALCE condition A under the lax oracle
            if p in own:
                if strict_ok:
                    precise_own.add(p)
                if lax_ok:
                    precise_own_lax.add(p)
                if v is CANNOT_JUDGE:
                    unknown_own.add(p)
                else:
                    judged_own.add(p)
                if v == Support.CONTRADICTS:
                    contradicting_own.add(p)
                continue
            citations += 1
            if v is CANNOT_JUDGE:
                unknown += 1
                continue
            contradicting += v == Support.CONTRADICTS
            precise += strict_ok
            precise_lax += lax_ok
    whole = len(own) if cited else 0
    return _Counts(
        supported=supported,
        precise=precise + len(precise_own),
        supported_lax=supported_lax,
        precise_lax=precise_lax + len(precise_own_lax),
        sentences=len(cited),
        citations=citations + whole,
        judged=judged,
        judged_lax=judged_lax,
        assessed=citations - unknown + (whole and len(set(own) - (unknown_own - precise_own))),
        assessed_lax=citations - unknown + (whole and len(set(own) - (unknown_own - precise_own_lax))),
        cannot_judge=unknown + (whole and len(unknown_own)),
        contradicts=contradicting + (whole and len(contradicting_own)),
        judged_citations=citations - unknown + (whole and len(judged_own)),
    )


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
