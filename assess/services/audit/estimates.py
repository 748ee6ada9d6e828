"""Corrected estimates (PPI++) of the runs' measures and the topics' shares from the judge's labels and a
human sample, beside the human-only ones, and how often their intervals hold (docs/estimates.md)."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from assess.measures import ppi
from assess.measures.ppi import coverage
from assess.services.audit.sources import check_two, json_safe, passage_pair, pick_roles
from store.audit import ntr_gold, ranked_runs, turn_places
from store.labels import ntr_support
from store.samples import inclusion_probabilities, sample_items, samples

ESTIMATE_MEASURES = ("P@k", "nDCG@k", "ntr")


def reference_sample(db, reference: str) -> str | None:
    """The newest stored passage sample given to ``reference`` to judge (its drawn design is then the honest
    default for the estimates); None when there is none."""

    for found in samples(db):  # newest first
        if found["task"] == "passage" and any(i["assessor"] == reference for i in sample_items(db, found["name"])):
            return found["name"]
    return None


ASSUMED_UNIFORM = "assumed-uniform"
DRAWN = "drawn"


def _assumed_uniform(chosen: int, population: int, what: str) -> str:
    return (
        f"assumed: the reference's {chosen:,} labels were not drawn by the workbench's sampler; they are taken "
        f"as a uniform random sample of the judge's {population:,} {what}, and the estimates hold only if that "
        "is true (a pool judged to a depth, or the items someone chose to judge, is not a random sample)"
    )


def _outside_refusal(reference: str, judge: str, outside: list, what: str) -> AssessError:
    return AssessError(
        f"the reference {reference!r} labelled {len(outside):,} {what} the judge {judge!r} did not label (e.g. "
        f"{' '.join(map(str, outside[0]))}): its labels were not drawn from the judge's items, so they cannot be "
        "taken as a uniform random sample of them; draw a sample of the judge's items (audit sample, or the "
        "Budgeted sample tab), have it graded and estimate from it"
    )


def _human_sample(
    db, sample: str | None, judge: dict, human: dict, names: tuple[str, str]
) -> tuple[dict, dict | None, dict | None, dict]:
    """The human labels of the sample, their inclusion probabilities and strata, and how they were chosen
    (``design``: its ``kind`` is 'drawn' or 'assumed-uniform', its ``statement`` says so in words).

    A stored sample (drawn by the workbench's sampler, which stored each item's inclusion probability): its
    items the reference has graded, each with its stratum; items drawn but not graded yet are treated as
    missing at random within their stratum, so a stratum with m of its n drawn items graded gets probability
    m / N_h (N_h = n / the stored probability). A stratum with none graded, or a judge whose items are not
    the population the sample was drawn from, is refused: the estimate is not estimable. Without a sample:
    every item the reference graded, *assumed* to be a uniform sample of the judge's items (n / N each);
    refused when the reference graded an item the judge did not (then its labels cannot be such a sample).
    """

    reference, judge_name = names
    if sample is None:
        outside = [i for i in human if i not in judge]
        if outside:
            raise _outside_refusal(reference, judge_name, sorted(outside), "passages")
        design = {
            "kind": ASSUMED_UNIFORM,
            "statement": _assumed_uniform(len(human), len(judge), "passages"),
            "rule": "every item the reference graded, taken as a uniform random sample of the judge's items",
            "drawn": len(human),
            "graded": len(human),
        }
        return dict(human), None, None, design
    stored = {s["name"]: s for s in samples(db)}
    if sample not in stored:
        raise AssessError(f"no sample named {sample!r}; samples: {', '.join(sorted(stored)) or 'none'}")
    found = stored[sample]
    if found["task"] != "passage":
        raise AssessError(f"sample {sample!r} is of task {found['task']!r}, not passage")
    drawn = inclusion_probabilities(db, sample)
    stratum = {(r["turn_id"], r["item_id"]): r["stratum"] or "all" for r in sample_items(db, sample)}
    outside = [i for i in drawn if i not in judge]
    if outside:
        raise AssessError(f"sample {sample!r} holds {outside[0]!r}, which the judge did not grade: not its sample")
    if found["population"] != len(judge):
        drawn_from = (found["details"] or {}).get("judge") or "its judge"
        raise AssessError(
            f"sample {sample!r} was drawn from the {found['population']:,} passages of {drawn_from}; the judge "
            f"{judge_name!r} graded {len(judge):,}: its inclusion probabilities are not those of this population"
        )
    graded = {i: human[i] for i in drawn if i in human}
    drawn_in: dict[Any, int] = {}
    graded_in: dict[Any, int] = {}
    for i in drawn:
        drawn_in[stratum[i]] = drawn_in.get(stratum[i], 0) + 1
        if i in graded:
            graded_in[stratum[i]] = graded_in.get(stratum[i], 0) + 1
    empty = sorted(h for h in drawn_in if h not in graded_in)
    if empty:
        raise AssessError(
            f"not estimable: the reference {reference!r} has graded none of the {drawn_in[empty[0]]} items drawn "
            f"in stratum {empty[0]!r} of sample {sample!r} (nothing sampled there says what its items are); "
            "grade at least 2 items of every stratum"
        )
    probability = {i: drawn[i] * graded_in[stratum[i]] / drawn_in[stratum[i]] for i in graded}
    design = {
        "kind": DRAWN,
        "statement": f"sample {sample!r}, drawn by the workbench's sampler ({found['design']}): each graded item "
        "weighed by its stored inclusion probability; items not graded yet taken as missing at random within "
        "their stratum",
        "sample": sample,
        "design": found["design"],
        "rule": "the sample's graded items; ungraded ones missing at random within their stratum",
        "drawn": len(drawn),
        "graded": len(graded),
    }
    return graded, probability, {i: stratum[i] for i in graded}, design


def estimate_view(
    db,
    reference: str | None,
    judge: str | None,
    *,
    sample: str | None = None,
    threshold: int = 2,
    k: int = 5,
    measures=ESTIMATE_MEASURES,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, Any]:
    """Corrected estimates (prediction-powered inference, power-tuned) beside the human-only ones from the
    same sample: each stored run's P@k at ``threshold`` and nDCG@k, CONE-RAG NtR recall (the runs' NtR
    labels: captured = full support, i.e. yes), and each topic's (conversation's) share of items at or
    above ``threshold``. The human sample and its ``design`` (drawn by the workbench's sampler, or an
    assumed uniform sample, refused where it cannot be one): see :func:`_human_sample`. A topic or run whose
    figure no sampled item informs is not estimable (``estimable`` false, no interval); every estimate is a
    share, reported inside [0, 1]. Asked for NtR recall alone, the two sources need NtR labels only (every
    NtR item the reference labelled is the assumed uniform sample; passage grades and topic shares are not
    involved). A reference or judge left out (None) is chosen by kind (:func:`default_roles`).
    Formulas: docs/estimates.md."""

    unknown = [m for m in measures if m not in ESTIMATE_MEASURES]
    if unknown:
        raise AssessError(f"unknown measure {unknown[0]!r}; expected some of {', '.join(ESTIMATE_MEASURES)}")
    ntr_only = set(measures) == {"ntr"}
    reference, judge = pick_roles(db, reference, judge, task="ntr" if ntr_only else "passage")
    report: dict[str, Any] = {
        "reference": reference,
        "judge": judge,
        "threshold": threshold,
        "k": k,
        "alpha": alpha,
        "estimator": "PPI++ (power-tuned lambda in [0, 1]); human_only = lambda 0 on the same sample",
    }
    if ntr_only:  # NtR recall alone: the sources need NtR labels, not passage grades
        if sample is not None:
            raise AssessError("a stored sample holds passages: NtR recall is estimated without --sample")
        ntr = _ntr_estimate(db, reference, judge, alpha, required=True)
        report["design"] = ntr.pop("design")
        report["ntr"] = ntr
        return json_safe(report)
    check_two(db, reference, judge)
    f, y = passage_pair(db, reference, judge)
    human, probability, strata, design = _human_sample(db, sample, f, y, (reference, judge))
    design.update(population=len(f))
    if len(human) < 2:
        raise AssessError(
            f"the reference {reference!r} graded {len(human)} of the judge's items: an estimate needs at least 2"
        )

    places = turn_places(db)
    report["design"] = design
    report["topic_shares"] = ppi.corrected_shares(
        f, human, probability, threshold=threshold, topic_of=lambda i: places[i[0]][0], strata=strata, alpha=alpha
    )
    runs = ranked_runs(db) if {"P@k", "nDCG@k"} & set(measures) else {}
    if "P@k" in measures:
        report["P@k"] = ppi.corrected_precision(
            runs, f, human, probability, k=k, threshold=threshold, strata=strata, alpha=alpha
        )
    if "nDCG@k" in measures:
        report["nDCG@k"] = ppi.corrected_ndcg(runs, f, human, probability, k=k, strata=strata, alpha=alpha, seed=seed)
    if "ntr" in measures:
        try:
            ntr = _ntr_estimate(db, reference, judge, alpha)
        except AssessError as exc:  # NtR labels that cannot be a sample: said, the passage estimates kept
            ntr = None
            report["refused"] = {"ntr": str(exc)}
        if ntr is not None:
            report["ntr_design"] = ntr.pop("design")
        report["ntr"] = ntr
    return json_safe(report)


def _ntr_estimate(db, reference: str, judge: str, alpha: float, *, required: bool = False) -> dict[str, Any] | None:
    """NtR recall per run from the judge's NtR labels on every item and the reference's on some (assumed a
    uniform sample of them: refused when the reference labelled an item the judge did not); None when either
    has no NtR label or the reference fewer than 2 (an error when ``required``)."""

    if reference == judge:
        raise AssessError(f"the reference and the judge are both {reference!r}: compare two different sources")
    graded_judge, graded_ref = ntr_support(db, judge), ntr_support(db, reference)
    for role, name, found in (("judge", judge, graded_judge), ("reference", reference, graded_ref)):
        if required and not found:
            raise AssessError(f"{role} {name!r} has no NtR labels (yes/no or graded)")
    if not graded_judge or not graded_ref:
        return None
    f = {(run, turn, nugget): float(v == 2) for (turn, nugget, run), v in graded_judge.items()}
    y = {(run, turn, nugget): float(v == 2) for (turn, nugget, run), v in graded_ref.items()}
    outside = sorted(i for i in y if i not in f)
    if outside:
        raise _outside_refusal(reference, judge, outside, "NtR items (run, turn, nugget)")
    if len(y) < 2:
        if required:
            raise AssessError(
                f"the reference {reference!r} labelled {len(y)} of the judge's NtR items: an estimate needs at least 2"
            )
        return None
    return {
        "rule": "captured = full support (2, a yes); gold = every nugget of the labels' nugget sources on the turn; "
        "the reference's NtR labels taken as a uniform sample of the judge's",
        "design": {
            "kind": ASSUMED_UNIFORM,
            "statement": _assumed_uniform(len(y), len(f), "NtR items"),
            "rule": "every NtR item the reference labelled, taken as a uniform random sample of the judge's",
            "drawn": len(y),
            "graded": len(y),
            "population": len(f),
        },
        "runs": ppi.corrected_ntr(ntr_gold(db, judge), f, y, None, alpha=alpha),
    }


def coverage_view(
    db,
    reference: str | None,
    judge: str | None,
    *,
    threshold: float = 2,
    sample: int,
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """How honest the intervals are, over the items both sources graded (assess.measures.ppi.coverage):
    exactly ``{"n_items", "sample", "repeats", "nominal", "true_value", "ppi": {"coverage", "mean_width"},
    "human_only": {...}}``."""

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    f, y = passage_pair(db, reference, judge)
    return coverage(y, f, threshold=threshold, sample=sample, repeats=repeats, seed=seed, alpha=alpha)
