"""What the Scores page shows, as plain values and plotly figures (no Streamlit here)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from operator import itemgetter
from pathlib import Path
from typing import Any

from assess.errors import AssessError
from assess.tasks import SourceKind

DEMO = Path(__file__).resolve().parents[3] / "assets" / "demo"


def read_case(data: bytes, name: str) -> dict:
    """Parse an uploaded GFRC2 / AEPD input file (JSON), naming the file and line on error."""
    from assess.formats import json_object

    return json_object(data, name)


def demo_case(kind: str) -> tuple[dict, str]:
    """The demo's GFRC2 or AEPD input (assets/demo/gfrc2.json, aepd.json)."""
    path = DEMO / f"{kind}.json"
    return json.loads(path.read_text(encoding="utf-8")), path.name


def gfrc2_view(document: dict) -> dict[str, Any]:
    """Score a GFRC2 document and group it for plotting: {"table": rows, "by_conversation": {conv: {run: result}}}.

    Conversation ids of the form ``run/conversation`` are split so that runs of one conversation share
    a plot; any other id is its own conversation with the id as the run name.
    """
    from assess.measures.gfrc import score_gfrc2_document

    results = score_gfrc2_document(document)
    table, grouped = [], {}
    for cid, res in results.items():
        run, _, conv = cid.partition("/") if "/" in cid else (cid, "", cid)
        grouped.setdefault(conv, {})[run] = res
        table.append(
            {
                "run": run,
                "conversation": conv,
                "EGNP": res["EGNP"],
                "GFRC2": res["GFRC2"],
                **{f"EGF {a}": v for a, v in res["EGF"].items()},
                "GFRC": res["GFRC"]["GFRC"],
            }
        )
    return {"table": table, "by_conversation": grouped}


def aepd_view(document: dict) -> dict[str, Any]:
    """Score an AEPD document; points carry the turn's ``system`` and ``conversation`` when given."""
    from assess.measures.aepd import score_aepd_document

    results = score_aepd_document(document)
    extra = {t.get("id"): t for t in document.get("turns", []) if isinstance(t, dict)}
    points = [
        {
            "id": tid,
            **scores,
            "system": extra.get(tid, {}).get("system", str(tid).partition("/")[0]),
            "conversation": extra.get(tid, {}).get("conversation"),
        }
        for tid, scores in results["turns"].items()
    ]
    return {"points": points, "tradeoff": results["tradeoff"]}


def ranking_view(db, source_a: str, source_b: str, measure: str = "nDCG@3", threshold: int = 2) -> dict[str, Any]:
    """Evaluate the stored runs under two qrels sources; return per-measure means and τ / ρ."""
    from assess.measures.rankings import compare_qrels
    from store.compare import qrels_of, runs_of

    runs = runs_of(db)
    if not runs:
        return {}
    return compare_qrels(qrels_of(db, source_a), qrels_of(db, source_b), runs, threshold=threshold)


def agreement_from_store(db, task: str, a: str, b: str, *, weights: str | None, threshold: float | None) -> dict:
    """The agreement report of two stored sources, with per-topic kappa."""
    from assess.measures.agreement import agreement_report, kappa_by_group
    from store.compare import label_pairs

    pairs = label_pairs(db, task, a, b)
    report = agreement_report(pairs.a, pairs.b, scale=pairs.scale, weights=weights, threshold=threshold)
    report.update(task=task, a=a, b=b)
    report["per_topic"] = (
        kappa_by_group(pairs.a, pairs.b, pairs.topics, scale=pairs.scale, weights=weights) if pairs.a else {}
    )
    return report


# ------------------------------------------------------------------------------------------ the judge audit
# Several sources side by side, system-level agreement, bias and consistency probes, corrected estimates
# and budgeted human samples (issue 15). Each view reads the store once, calls the pure measures
# (assess/measures/agreement, systems, bias, ppi, sampling) and returns plain JSON-serialisable values
# for the /audit page and `python -m assess audit ...`.

# The sources table's kinds (assess.tasks.SourceKind, as recorded: an NLI judge's is 'llm') as the agreement
# matrix groups them. Adjudicated labels are reconciled from the assessors' own, so they are not an independent
# person: kept out of the human ceiling.
MATRIX_KIND = {
    SourceKind.ASSESSOR: "human",
    SourceKind.ORGANIZERS: "human",
    SourceKind.ADJUDICATION: "import",
    SourceKind.IMPORT: "import",
    SourceKind.LLM: "llm",
    SourceKind.CROWD: "crowd",
}
BREAKDOWNS = ("topic", "depth", "personal")
GROUP_DRAWS_LIMIT = 200_000
"""The agreement view gives the per-group figures bootstrap intervals while the (pair, group) matrices present
times the replicates stay at most this (200 groups at 1,000 replicates): their cost grows with that product, about
4 µs of CPU a matrix and replicate (1,517 topic groups of 9 pairs at ten times iKAT 2024: 6.4 s). Above it the
groups get their figures without intervals, and the view says so (``bootstrap.groups`` is 0)."""
PTKB_DEFAULT = "organizers"
ESTIMATE_MEASURES = ("P@k", "nDCG@k", "ntr")
DEPTH_RULE = "turn depth: the turn's position in its conversation, 1 = the first turn"
TOPIC_RULE = "topic: the turn's conversation"


def json_safe(value: Any) -> Any:
    """Plain JSON values: NaN and infinities as None, numpy scalars as Python ones, tuples as lists, keys as text."""
    import math

    import numpy as np

    if isinstance(value, dict):
        return {k if isinstance(k, str) else _key_text(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, tuple):
        return " ".join(map(str, key))
    if isinstance(key, bool):
        return "personal" if key else "non-personal"
    return str(key)


def known_sources(db, task: str, names, *, role: str = "source") -> list[str]:
    """The names, each checked to have labels of ``task`` (one error naming the first that has none)."""
    from store.labels import sources

    known = sources(db, task)
    for name in names:
        if name not in known:
            raise AssessError(
                f"{role} {name!r} has no {task} labels; sources with {task} labels: {', '.join(known) or 'none'}"
            )
    return list(names)


def check_two(db, reference: str, other: str, *, task: str = "passage", roles=("reference", "judge")) -> None:
    if reference == other:
        raise AssessError(f"the {roles[0]} and the {roles[1]} are both {reference!r}: compare two different sources")
    known_sources(db, task, [reference], role=roles[0])
    known_sources(db, task, [other], role=roles[1])


def audit_sources(db, task: str = "passage") -> list[str]:
    """Every source with labels of ``task`` (by name): assessors, LLMs, crowd aggregates, imports, adjudication."""
    from store.labels import sources

    return sources(db, task)


def source_kinds(db, names) -> dict[str, str]:
    """{source: "human" | "llm" | "crowd" | "import"} as the agreement matrix groups them (see MATRIX_KIND)."""
    from store.audit import source_kinds as stored

    kinds = stored(db)
    return {name: MATRIX_KIND.get(kinds.get(name, "import"), "import") for name in names}


# What each kind of the sources table is, in words, and the order in which a kind is preferred as the
# reference (a person first) and as the judge (a machine first). Imported qrels without an 'llm:' name are
# taken as human qrels (NIST's); adjudicated labels usually cover only the items that were disputed, so a
# full human set comes before them.
KIND_NAMES = {
    SourceKind.ASSESSOR: "human assessor",
    SourceKind.ORGANIZERS: "organizers (human)",
    SourceKind.IMPORT: "imported human qrels",
    SourceKind.ADJUDICATION: "adjudication",
    SourceKind.CROWD: "crowd",
    SourceKind.LLM: "LLM",
}
REFERENCE_ORDER = (
    SourceKind.ASSESSOR,
    SourceKind.ORGANIZERS,
    SourceKind.IMPORT,
    SourceKind.ADJUDICATION,
    SourceKind.CROWD,
    SourceKind.LLM,
)
JUDGE_ORDER = (
    SourceKind.LLM,
    SourceKind.CROWD,
    SourceKind.IMPORT,
    SourceKind.ADJUDICATION,
    SourceKind.ORGANIZERS,
    SourceKind.ASSESSOR,
)


def stored_kinds(db, names) -> dict[str, str]:
    """{source: its kind in the sources table} for ``names`` (a name the table lacks: 'import')."""
    from store.audit import source_kinds as stored

    kinds = stored(db)
    return {name: kinds.get(name, "import") for name in names}


# The kinds a reference may be a person's labels of: among them the most labels win (a new assessor with a
# handful of labels is no reference against NIST's qrels or the campaign's main assessor).
HUMAN_REFERENCE_KINDS = (SourceKind.ASSESSOR, SourceKind.ORGANIZERS, SourceKind.IMPORT)


def _by_kind(names, kinds: dict[str, str], order: tuple[str, ...], counts=None, *, pooled=()) -> list[str]:
    counts = counts or {}

    def key(name: str):
        kind = kinds.get(name, "import")
        rank = order.index(kind) if kind in order else len(order)
        group = 0 if kind in pooled else rank + 1  # the pooled kinds compete on their number of labels
        return (group, -counts.get(name, 0), rank, name)

    return sorted(names, key=key)


def rank_roles(
    names, kinds: dict[str, str], *, reference: str | None = None, judge: str | None = None, counts=None
) -> tuple[str, str]:
    """The default (reference, judge) among ``names``: the reference the human source (assessor, organizers,
    imported human qrels) with the most labels (``counts``: {source: labels}; then REFERENCE_ORDER and name),
    else the first of the most human kind; the judge the first of the most machine-like kind (JUDGE_ORDER) other
    than the reference, the most labelled of that kind. A role given is kept and the other chosen around it:
    never a source against itself."""
    names = list(dict.fromkeys(names))
    if reference is None:
        candidates = [n for n in names if n != judge]
        if not candidates:
            raise AssessError(f"no source to be the reference; sources: {', '.join(names) or 'none'}")
        reference = _by_kind(candidates, kinds, REFERENCE_ORDER, counts, pooled=HUMAN_REFERENCE_KINDS)[0]
    if judge is None:
        candidates = [n for n in names if n != reference]
        if not candidates:
            raise AssessError(
                f"no source other than the reference {reference!r} to be the judge; sources: {', '.join(names)}"
            )
        judge = _by_kind(candidates, kinds, JUDGE_ORDER, counts)[0]
    return reference, judge


def label_counts(db, names, task: str = "passage") -> dict[str, int]:
    """{source: its labels of ``task``} for ``names``: what the role defaults weigh (:func:`rank_roles`)."""
    from store.labels import counts

    return counts(db, task, list(names))


def default_roles(
    db, names=None, *, task: str = "passage", reference: str | None = None, judge: str | None = None
) -> tuple[str, str]:
    """The reference (default: the human source with the most labels) and judge (default: an LLM) among ``names``
    (default: every source with labels of ``task``), by the kinds of the sources table and the number of labels:
    see :func:`rank_roles`."""
    names = list(names) if names is not None else audit_sources(db, task)
    return rank_roles(
        names, stored_kinds(db, names), reference=reference, judge=judge, counts=label_counts(db, names, task)
    )


def role_label(name: str, kinds: dict[str, str]) -> str:
    """A source's name with its kind in words, for a picker: 'nist (imported human qrels)'."""
    kind = kinds.get(name, "import")
    return f"{name} ({KIND_NAMES.get(kind, kind)})"


def pick_roles(db, reference: str | None, judge: str | None, *, task: str = "passage") -> tuple[str, str]:
    """The reference and judge given, each one left out (None) chosen by kind (:func:`default_roles`)."""
    if reference is not None and judge is not None:
        return reference, judge
    return default_roles(db, task=task, reference=reference, judge=judge)


def _ptkb_source(db, given: str | None) -> str | None:
    from store.labels import sources

    with_ptkb = sources(db, "ptkb")
    if given is not None:
        if given not in with_ptkb:
            raise AssessError(
                f"PTKB source {given!r} has no PTKB labels; sources with PTKB labels: {', '.join(with_ptkb) or 'none'}"
            )
        return given
    if PTKB_DEFAULT in with_ptkb:
        return PTKB_DEFAULT
    return with_ptkb[0] if len(with_ptkb) == 1 else None


def personal_turns(db, ptkb_source: str | None = None) -> dict[str, Any]:
    """Which turns are personal: ``{"source", "rule", "turns": {turn: bool}}``.

    A turn is personal when the PTKB source marks at least one of its conversation's statements relevant
    (label > 0) for the turn, non-personal when it labelled the turn's statements and marked none; turns it
    did not label are unknown (left out of the personal breakdown). The source: ``ptkb_source`` when given,
    else 'organizers' (the topics' PTKB provenance) when it has PTKB labels, else the only source with PTKB
    labels; with none, no turn is known.
    """
    from store.audit import task_labels

    source = _ptkb_source(db, ptkb_source)
    rule = "personal: at least one PTKB statement marked relevant (> 0) for the turn by the PTKB source"
    if source is None:
        return {"source": None, "rule": rule + " (no PTKB source: no turn is known)", "turns": {}}
    turns: dict[str, bool] = {}
    for (turn, _statement), value in task_labels(db, "ptkb", [source])[source].items():
        turns[turn] = turns.get(turn, False) or value > 0
    return {"source": source, "rule": rule, "turns": turns}


def _turn_groups(db, breakdowns, ptkb_source: str | None) -> tuple[dict, dict]:
    """{breakdown: {turn: group}} of every known turn, and how each breakdown is defined."""
    from store.audit import turn_places

    unknown = [b for b in breakdowns if b not in BREAKDOWNS]
    if unknown:
        raise AssessError(f"unknown breakdown {unknown[0]!r}; expected one of {', '.join(BREAKDOWNS)}")
    places = turn_places(db) if {"topic", "depth"} & set(breakdowns) else {}
    groups, rules = {}, {}
    if "topic" in breakdowns:
        groups["topic"] = {turn: conversation for turn, (conversation, _) in places.items()}
        rules["topic"] = TOPIC_RULE
    if "depth" in breakdowns:
        groups["depth"] = {turn: position + 1 for turn, (_, position) in places.items()}
        rules["depth"] = DEPTH_RULE
    if "personal" in breakdowns:
        personal = personal_turns(db, ptkb_source)
        groups["personal"] = dict(personal["turns"])
        rules["personal"] = {"rule": personal["rule"], "ptkb_source": personal["source"]}
    return groups, rules


def _item_groups(db, items, breakdowns, ptkb_source: str | None) -> tuple[dict, dict]:
    """{breakdown: {item: group}} for the items (turn first) and how each breakdown is defined."""
    by_turn, rules = _turn_groups(db, breakdowns, ptkb_source)
    groups = {name: {i: mapping[i[0]] for i in items if i[0] in mapping} for name, mapping in by_turn.items()}
    return groups, rules


def agreement_view(
    db,
    task: str,
    sources=None,
    *,
    threshold: float | None,
    bootstrap: int = 1000,
    seed: int = 0,
    breakdowns=BREAKDOWNS,
    ptkb_source: str | None = None,
    min_shared: int | None = None,
) -> dict[str, Any]:
    """The agreement matrix of the chosen sources (default: every source with labels of ``task``).

    Every pair's observed agreement, Cohen's kappa (unweighted / linear / quadratic), kappa binarised at
    ``threshold`` and Krippendorff's alpha (ordinal), with percentile bootstrap intervals over items; the
    human<->human ceiling pooled over pairs of two human sources (assessors, organizers) that share at least
    ``min_shared`` items (default ``MIN_SHARED``; pairs below it listed in ``ceiling_below_minimum``); every figure per
    topic, turn depth and personal turn (see :func:`personal_turns`). The per-group figures get intervals
    only while their matrices times the replicates stay within GROUP_DRAWS_LIMIT. ``grids``: each
    statistic as a sources x sources grid for a heat map.
    """
    from assess.measures.agreement import MATRIX_STATISTICS, MIN_SHARED, agreement_matrix, matrix_grid
    from store.audit import PART, packed_task_labels, scale_of, task_labels

    chosen = list(sources) if sources is not None else audit_sources(db, task)
    if len(set(chosen)) != len(chosen):
        twice = next(s for s in chosen if chosen.count(s) > 1)
        raise AssessError(f"source {twice!r} is chosen twice: never a source against itself")
    if len(chosen) < 2:
        raise AssessError(
            f"the agreement matrix needs two sources with {task} labels; found {', '.join(chosen) or 'none'}"
        )
    known_sources(db, task, chosen)
    labels = packed_task_labels(db, task, chosen)  # items as strings, the turn first: half the reading time

    def turn_of(item: str) -> str:
        return item.partition(PART)[0]

    if labels is None:
        labels, turn_of = task_labels(db, task, chosen), itemgetter(0)
    groups, rules = _turn_groups(db, tuple(breakdowns), ptkb_source)
    matrix = agreement_matrix(
        labels,
        scale=scale_of(task, {v for by_item in labels.values() for v in by_item.values()}),
        threshold=threshold,
        groups=groups,
        group_key=turn_of,  # breakdowns are per turn
        kinds=source_kinds(db, chosen),
        bootstrap=bootstrap,
        group_draws_limit=GROUP_DRAWS_LIMIT,
        seed=seed,
        min_shared=MIN_SHARED if min_shared is None else min_shared,
    )
    matrix["grids"] = {name: matrix_grid(matrix, name) for name in MATRIX_STATISTICS}
    matrix["task"] = task
    matrix["labels"] = {s: len(labels[s]) for s in chosen}
    matrix["breakdowns"] = rules
    matrix["group_draws_limit"] = GROUP_DRAWS_LIMIT
    return matrix  # plain values already (groups: conversation text, depth int, personal bool)


def _measure(name: str, threshold: int):
    """One ir_measures measure; a binary one without its own ``rel`` counts grades >= ``threshold``."""
    import ir_measures

    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError):
        raise AssessError(f"unknown measure {name!r}; use ir_measures notation such as nDCG@5 or P@10") from None
    if "rel" in measure.SUPPORTED_PARAMS and "rel" not in measure.params:
        measure = measure(rel=int(threshold))
    return measure


def systems_view(
    db,
    reference: str | None,
    other: str | None,
    *,
    measure: str = "nDCG@5",
    threshold: int = 2,
    k=(1, 3, 5),
    correction: str = "holm",
    bootstrap: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The stored runs scored under each source's qrels with one measure, then compared: Kendall tau,
    tau_AP, Spearman, Pearson and top-k overlap with topic-bootstrap intervals, per-topic tau, significance
    preservation (paired t-tests, ``correction`` 'holm' or 'bonferroni') and whether the leader changes.
    Binary measures without ``(rel=...)`` count grades >= ``threshold``."""
    from assess.measures.rankings import evaluate_runs
    from assess.measures.systems import compare_systems
    from store.compare import qrels_of, runs_of

    reference, other = pick_roles(db, reference, other)
    check_two(db, reference, other, roles=("reference", "other source"))
    if correction not in ("holm", "bonferroni"):
        raise AssessError(f"unknown correction {correction!r}; expected 'holm' or 'bonferroni'")
    chosen = _measure(measure, threshold)
    runs = runs_of(db)
    if not runs:
        raise AssessError("the store has no ranking runs to rank: import a run first")
    name = str(chosen)
    scores = {}
    for source in (reference, other):
        evaluated = evaluate_runs(qrels_of(db, source), runs, [chosen], threshold=threshold)
        scores[source] = {run: result["per_query"][name] for run, result in evaluated.items()}
    report = compare_systems(
        scores[reference],
        scores[other],
        ks=tuple(k),
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        correction=correction,
    )
    report.update(reference=reference, other=other, measure=name, threshold=threshold)
    return json_safe(report)


def passage_pair(db, reference: str, judge: str) -> tuple[dict, dict]:
    """The judge's and the reference's passage grades ('cannot judge' left out)."""
    from store.audit import task_labels

    labels = task_labels(db, "passage", [judge, reference])
    return labels[judge], labels[reference]


def bias_view(db, reference: str | None, judge: str | None, *, k: int = 10) -> dict[str, Any]:
    """Where the judge grades differently from the reference (judge - reference, on the items both graded):
    against passage length (words of the stored text, split on white space; passages without text have an
    unknown length and are left out of that probe, counted in ``length_unknown``), best rank in the stored
    runs, turn depth, personal turns, and per run over each run's top ``k``."""
    from assess.measures.bias import bias_report
    from store.audit import labelled_passage_texts, ranked_runs

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    llm, human = passage_pair(db, reference, judge)
    shared = [i for i in llm if i in human]
    texts = labelled_passage_texts(db, reference)
    lengths = {i: len(texts[i[1]].split()) for i in shared if texts.get(i[1])}
    groups, rules = _item_groups(db, shared, ("depth", "personal"), None)
    runs = ranked_runs(db)
    report = bias_report(
        llm,
        human,
        lengths=lengths,
        runs=runs or None,
        depth=groups["depth"],
        personal=groups["personal"],
        k=k,
    )
    report.update(
        reference=reference,
        judge=judge,
        difference="judge grade - reference grade",
        n_shared=len(shared),
        length_unknown=len(shared) - len(lengths),
        length_rule="words of the stored passage text (split on white space); no stored text: unknown length",
        rank_rule="best (smallest) rank of the passage over the stored runs; not retrieved: left out",
        k=k,
        breakdowns=rules,
    )
    return json_safe(report)


def consistency_view(db, source: str, task: str = "passage") -> dict[str, Any]:
    """How well a judge agrees with itself over the K answers stored per item (prejudge --samples K): alpha
    over the items with at least 2 answers, the share unanimous, the mean share of agreeing answer pairs;
    the label stored is the answers' consensus (assess.tasks.consensus: most frequent, ties by the mean
    rounded half up), and ``changed_by_consensus`` counts items whose first answer differs from it."""
    from assess.measures.bias import self_consistency
    from assess.tasks import consensus
    from store.prejudgments import sample_answers

    samples = sample_answers(db, source, task)
    if not samples:
        raise AssessError(f"source {source!r} has no stored answers for task {task!r} (prejudge it first)")
    scale = label_kind_values(task, {v for values in samples.values() for v in values})
    report = self_consistency(samples, scale=scale)
    report.pop("labels")
    sizes: dict[int, int] = {}
    for values in samples.values():
        sizes[len(values)] = sizes.get(len(values), 0) + 1
    report.update(
        source=source,
        task=task,
        items_by_k={str(n): c for n, c in sorted(sizes.items())},
        label_rule="consensus: most frequent answer, ties by the mean rounded half up (the stored label)",
        changed_by_consensus=sum(values[0] != consensus(values) for values in samples.values()),
        scale=list(scale),
    )
    return json_safe(report)


def alt_test_view(
    db,
    humans: list[str],
    judge: str,
    *,
    task: str = "passage",
    epsilon: float | None = None,
    q: float | None = None,
    min_items: int | None = None,
    scoring: str | None = None,
) -> dict[str, Any]:
    """Can ``judge`` replace the human sources? The alternative annotator test (assess.measures.alt_test)
    over the items each human labelled together with the judge (cannot-judge left out, as in agreement).
    Defaults are the measure's (epsilon for expert assessors, q 0.05, 30 items per human)."""
    from assess.measures import alt_test as measure
    from store.compare import label_pairs

    names = list(dict.fromkeys(humans))
    if len(names) < 2:
        raise AssessError(
            f"the alternative annotator test needs at least 2 human sources, got {len(names)}: have a second "
            "assessor judge a share of the same items (the authors recommend 50-100 items per human)"
        )
    if judge in names:
        raise AssessError(f"{judge!r} is both a human and the judge: a source is never tested against itself")
    grades: dict[str, dict[str, int]] = {}
    judged: dict[str, int] = {}
    for name in names:
        pairs = label_pairs(db, task, name, judge)
        for key, human, llm in zip(pairs.items, pairs.a, pairs.b):
            item = _key_text(key)
            grades.setdefault(item, {})[name] = human
            judged[item] = llm
    result = measure.alt_test(
        grades,
        judged,
        epsilon=measure.EPSILON if epsilon is None else epsilon,
        q=measure.Q if q is None else q,
        min_items=measure.MIN_ITEMS if min_items is None else min_items,
        scoring=scoring or measure.SCORING,
    )
    report = result.as_dict()
    report.update(
        task=task,
        judge=judge,
        humans=names,
        shared_items=sum(len(by) >= 2 for by in grades.values()),
        pass_rule=f"winning rate omega >= {measure.PASS_OMEGA} over at least {measure.MIN_HUMANS} tested humans",
        min_humans=measure.MIN_HUMANS,
        too_few_humans=None,
    )
    tested = len(report["annotators"])
    if report["computable"] and tested < measure.MIN_HUMANS:  # omega may reach 0.5, but says too little to pass
        report["passes"] = False
        report["too_few_humans"] = (
            f"{tested} human(s) tested, fewer than {measure.MIN_HUMANS}: omega is shown but does not pass "
            "(have a third assessor judge the shared items: python -m assess overlap ... --copies 3)"
        )
    return json_safe(report)


def label_kind_values(task: str, present: Iterable[object] = ()) -> tuple[int, ...]:
    """The scale of a task's stored labels (as answers are parsed: PTKB as stored, not binarised); a value the
    scale gained later only when one of the ``present`` values takes it (:meth:`LabelKind.values_in_use`)."""
    from assess.tasks import label_kind

    return label_kind(task).values_in_use(present)


def persona_view(db, source: str, with_version: str, without_version: str, task: str = "passage") -> dict[str, Any]:
    """How the source's grades change when the PTKB statements are in the prompt: the items answered under
    both prompt versions (each version's value the consensus of its answers), how many change, up or down,
    the mean change and the without x with matrix, also per personal vs non-personal turn."""
    from assess.measures.bias import persona_sensitivity
    from store.prejudgments import answers_by_prompt_version, source_model

    if with_version == without_version:
        raise AssessError(f"both prompt versions are {with_version!r}: give the version with and the one without PTKB")
    # `prejudge --no-ptkb` stores the variant's answers under a source of their own (llm:MODEL:no-ptkb, so
    # they never overwrite the labels): both versions are read by the source's model.
    model = source_model(db, source)
    answers = answers_by_prompt_version(
        db, task, [with_version, without_version], **({"model": model} if model else {"source": source})
    )
    both = {i: v for i, v in answers.items() if with_version in v and without_version in v}
    if not both:
        raise AssessError(
            f"source {source!r} has no {task} item answered under both {with_version!r} and {without_version!r}"
        )
    groups, rules = _item_groups(db, both, ("personal",), None)
    report = persona_sensitivity(
        {i: v[with_version] for i, v in both.items()},
        {i: v[without_version] for i, v in both.items()},
        scale=label_kind_values(task, {x for v in both.values() for x in v.values()}),
        groups=groups["personal"],
    )
    report.update(
        source=source,
        task=task,
        with_version=with_version,
        without_version=without_version,
        change="grade with PTKB - grade without",
        breakdowns=rules,
    )
    return json_safe(report)


def reference_sample(db, reference: str) -> str | None:
    """The newest stored passage sample given to ``reference`` to judge (its drawn design is then the honest
    default for the estimates); None when there is none."""
    from store.samples import sample_items, samples

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
    from store.samples import inclusion_probabilities, sample_items, samples

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
    from assess.measures import ppi
    from store.audit import ranked_runs

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
    from store.audit import turn_places

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
    from assess.measures import ppi
    from store.audit import ntr_gold
    from store.labels import ntr_support

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
    from assess.measures.ppi import coverage

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    f, y = passage_pair(db, reference, judge)
    return coverage(y, f, threshold=threshold, sample=sample, repeats=repeats, seed=seed, alpha=alpha)


def _designed(db, judge: str, design: str, second: str | None) -> tuple[dict, dict | None]:
    from assess.measures.sampling import DESIGNS

    if design not in DESIGNS:
        raise AssessError(f"unknown design {design!r}; expected one of {', '.join(DESIGNS)}")
    if design == "disagreement" and second is None:
        raise AssessError("the disagreement design needs a second judge (--second SOURCE)")
    if second is not None:
        check_two(db, judge, second, roles=("judge", "second judge"))
        f, g = passage_pair(db, second, judge)
        return f, g
    known_sources(db, "passage", [judge], role="judge")
    return passage_pair(db, judge, judge)[0], None


def _default_judge(db) -> str:
    """The judge a page or command opens on when none is named: the one :func:`default_roles` picks (the
    only source when there is one)."""
    names = audit_sources(db, "passage")
    if len(names) == 1:
        return names[0]
    return default_roles(db, names)[1]


def _budget(budget) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise AssessError(f"a budget is a whole number of items >= 1, found {budget!r}")
    return budget


def sample_plan(
    db,
    judge: str | None,
    *,
    budgets=(100, 200, 500, 1000),
    design: str = "stratified",
    second: str | None = None,
    threshold: float = 2,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Expected interval width of the share at ``threshold`` for each budget, before anyone judges
    (assess.measures.sampling.expected_width: uniform human-only, uniform PPI, stratified by the judge's
    grade, and by disagreement with ``second`` when given). Budgets above the judge's item count are skipped."""
    from assess.measures.sampling import expected_width

    budgets = [_budget(b) for b in budgets]
    if judge is None:
        judge = _default_judge(db)
    f, g = _designed(db, judge, design, second)
    usable = [b for b in budgets if b <= len(f)]
    rows = expected_width(usable, f, second=g, threshold=threshold, alpha=alpha) if usable else []
    return json_safe(
        {
            "judge": judge,
            "second": second,
            "design": design,
            "population": len(f),
            "threshold": threshold,
            "alpha": alpha,
            "prior": "P(human >= t | judge grade g) = 1 / (1 + exp(-(g - t + 0.5))) (docs/estimates.md)",
            "rows": rows,
            "skipped": [b for b in budgets if b > len(f)],
        }
    )


def create_sample(
    db,
    name: str,
    judge: str,
    *,
    budget: int,
    design: str = "stratified",
    second: str | None = None,
    assessor: str,
    seed: int = 0,
    threshold: float = 2,
    by: str | None,
) -> dict[str, Any]:
    """Draw ``budget`` of the judge's graded passages (stratified by its grade with Neyman allocation, or by
    disagreement with ``second``) and store them as sample ``name`` at the head of ``assessor``'s queue,
    each with its inclusion probability (store.samples.create_sample; ``by``'s action in the history)."""
    from assess.measures.sampling import disagreement_sample, stratified_sample
    from store.samples import SampledItem
    from store.samples import create_sample as store_sample

    _budget(budget)
    f, g = _designed(db, judge, design, second)
    if budget > len(f):
        raise AssessError(f"the budget {budget} is larger than the {len(f)} passages {judge!r} graded")
    if design == "disagreement":
        drawn = disagreement_sample(budget, f, g, seed=seed)
    else:
        drawn = stratified_sample(budget, f, threshold=threshold, seed=seed)
    items = [
        SampledItem(turn, passage, drawn.probability[(turn, passage)], str(drawn.stratum[(turn, passage)]), assessor)
        for turn, passage in drawn.items
    ]
    allocation = {str(h): v for h, v in drawn.allocation.items()}
    details = {"judge": judge, "second": second, "seed": seed, "threshold": threshold, "allocation": allocation}
    summary = store_sample(
        db, name, task="passage", design=design, population=len(f), items=items, details=details, by=by
    )
    summary.update(design=design, population=len(f), budget=budget, allocation=allocation, judge=judge)
    return json_safe(summary)


ANCHORING_TASKS = ("passage", "ptkb")


def anchoring(db, task: str = "passage", *, assessor: str | None = None) -> list[dict]:
    """Did assessors move toward the LLM after a reveal? :func:`assess.measures.anchoring.anchoring` over the
    assessors' label history of ``task`` (passage or PTKB labels; one assessor's with ``assessor``) and the
    LLM sources' labels."""
    from assess.measures.anchoring import anchoring as measure
    from assess.tasks import JudgingMode, label_kind
    from store.history import assessor_history
    from store.labels import CANNOT_JUDGE
    from store.prejudgments import llm_values

    kind = label_kind(task)
    if kind.task not in ANCHORING_TASKS:
        raise AssessError(f"anchoring is measured for {' and '.join(ANCHORING_TASKS)} labels, not {task!r}")
    history = assessor_history(db, kind.task, assessor=assessor)
    return measure(
        history,
        llm_values(db, kind.task),
        reveal_mode=JudgingMode.REVEAL,
        cannot_judge=CANNOT_JUDGE,
        decode=kind.key.decode,
    )


# ------------------------------------------------------------------------------------------- active time


def speed(db, *, assessor: str | None = None) -> dict[str, Any]:
    """Each assessor's active time per judgment (:func:`assess.measures.speed.speed_report` over the timed
    label events of the history; one assessor's with ``assessor``) with its rules: {rules, rows, flags}."""
    from assess.measures import speed as measure
    from store.review import timed_events

    report = measure.speed_report(timed_events(db, assessor=assessor))
    rules = {
        "idle_limit_ms": measure.IDLE_LIMIT_MS,
        "fast_median_ms": measure.FAST_MEDIAN_MS,
        "fast_min_labels": measure.FAST_MIN_LABELS,
    }
    return {"rules": rules, "rows": report, "flags": measure.speed_flags(report)}


def speed_version(db) -> tuple:
    """Changes whenever :func:`speed` may answer differently (``store.review.timed_version``)."""
    from store.review import timed_version

    return timed_version(db)


TIMED_LABEL_COLUMNS = ("assessor", "task", "item", "value", "mode", "active_ms", "guideline_version", "at", "length")
"""The columns of the timed label events' CSV (`audit speed --labels`, the review page's download)."""


def timed_labels_csv(db, *, assessor: str | None = None) -> str:
    """Every timed label event (one assessor's with ``assessor``) as CSV, one row each, oldest first; cells
    inert (an item or a name never starts a formula)."""
    from assess.formats.inert_csv import dicts_csv
    from store.review import timed_events

    return dicts_csv(TIMED_LABEL_COLUMNS, timed_events(db, assessor=assessor), lineterminator="\n")


def rubber_stamping(db, task: str = "passage", *, assessor: str | None = None) -> dict[str, Any]:
    """Rubber-stamping of shown LLM labels (:func:`assess.measures.speed.rubber_stamp` over the events written
    with an LLM's label on screen: 'shown' mode, and changes after a reveal) and the anchoring report with the
    active time of the changes after a reveal: {rules, rows, anchoring}."""
    from assess.measures import speed as measure
    from assess.measures.anchoring import anchoring as anchored
    from assess.tasks import JudgingMode, label_kind
    from store.history import assessor_history
    from store.labels import CANNOT_JUDGE
    from store.prejudgments import llm_values

    kind = label_kind(task)
    if kind.task not in ANCHORING_TASKS:
        raise AssessError(f"rubber-stamping is measured for {' and '.join(ANCHORING_TASKS)} labels, not {task!r}")
    history = assessor_history(db, kind.task, assessor=assessor)
    llm = llm_values(db, kind.task)
    events = measure.shown_events(history, shown_mode=JudgingMode.SHOWN, reveal_mode=JudgingMode.REVEAL)
    rows = measure.rubber_stamp(events, llm, cannot_judge=CANNOT_JUDGE, decode=kind.key.decode)
    times = measure.anchoring_times(history, reveal_mode=JudgingMode.REVEAL, cannot_judge=CANNOT_JUDGE)
    anchoring_rows = []
    for r in anchored(history, llm, reveal_mode=JudgingMode.REVEAL, cannot_judge=CANNOT_JUDGE, decode=kind.key.decode):
        t = times.get(r["assessor"], measure.spread([]))
        anchoring_rows.append(
            {
                **r,
                "timed_changes": t["n"],
                "change_median_ms": t["median"],
                "change_q1_ms": t["q1"],
                "change_q3_ms": t["q3"],
            }
        )
    rules = {
        "min_accepted": measure.STAMP_MIN_ACCEPTED,
        "median_ms_below": measure.STAMP_MEDIAN_MS,
        "max_corrected_share": measure.STAMP_MAX_CORRECTED,
        "source": "Potato, docs/advanced/annotation_telemetry.md (Screening flags: rubber_stamping)",
    }
    return {"rules": rules, "rows": rows, "anchoring": anchoring_rows}


# ------------------------------------------------------------------------------------------ the verdict
# "Can J replace R here?" (issue 25 item 6): the separate audits above, run with their own defaults, combined
# by the stated rules of assess/measures/verdict.py. Every figure is copied from the JSON of the `audit`
# command named beside it, so the two always agree.

OVERLAP_SHARE = 0.1


def _command(*args: str) -> str:
    import shlex

    return shlex.join(["python", "-m", "assess", "audit", *args, "--json"])


def _overlap_how(db, reference: str, *, reference_human: bool) -> str:
    """How to get human overlap: a share (OVERLAP_SHARE) of the reference's turns, spread over them, given to a
    second assessor (to two assessors when the reference is not an assessor or the organizers: the human
    ceiling pairs only those kinds, as `audit agreement` does)."""
    from assess.measures.ppi import natural_key
    from store.audit import task_labels

    turns = sorted({item[0] for item in task_labels(db, "passage", [reference])[reference]}, key=natural_key)
    share = max(1, round(len(turns) * OVERLAP_SHARE))
    picked = " ".join(turns[:: max(1, len(turns) // share)][:share])
    who = "a second assessor" if reference_human else "two assessors"
    why = "" if reference_human else f" (the human ceiling pairs assessors or organizers: {reference!r} is not one)"
    return (
        f"plan {OVERLAP_SHARE:.0%} overlap: have {who} judge the same {share} of the {len(turns)} turns "
        f"{reference!r} judged{why}, e.g. python -m assess overlap --name ceiling --assessor A --assessor B --turn "
        f"{picked} --share 1 (docs/judging.md#planned-overlap; the alternative annotator test wants 50-100 shared "
        "items per person), then ask for the verdict again"
    )


def verdict_view(
    db, reference: str | None, judge: str | None, *, epsilon: float | None = None, width: float | None = None
) -> dict[str, Any]:
    """Can ``judge`` replace ``reference`` on this store? Each criterion with its figures, threshold and pass /
    fail, or what is missing and how to get it, and the overall verdict (replace, pre-filter or assist only) by
    the rule of :mod:`assess.measures.verdict`: item agreement against the human ceiling (`audit agreement` of
    the reference, the judge and every other human source), the alternative annotator test (`audit alt-test`,
    the reference and the other human sources as the humans, margin ``epsilon``), system-level agreement
    (`audit systems`), bias (`audit bias`) and, unless the verdict is replace, the corrected-estimate
    alternative (`audit plan` for the human budget reaching ``width``, `audit estimate` for the runs' P@k).
    Passage grades; each command with its defaults."""
    from assess.measures import alt_test as alt
    from assess.measures import verdict as verdict_rules
    from assess.measures.agreement import MIN_SHARED

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    epsilon = float(alt.EPSILON if epsilon is None else epsilon)
    width = verdict_rules.WIDTH if width is None else width
    if isinstance(width, bool) or not isinstance(width, int | float) or not 0 < width <= 1:
        raise AssessError(f"the interval width asked is a number in (0, 1], found {width!r}")
    names = audit_sources(db, "passage")
    kinds = source_kinds(db, names)
    others = [n for n in names if kinds[n] == "human" and n not in (reference, judge)]
    humans = [reference, *others]
    how = _overlap_how(db, reference, reference_human=kinds[reference] == "human")

    chosen = [reference, judge, *others]
    matrix = agreement_view(db, "passage", chosen, threshold=2)
    agreement_command = _command("agreement", *(arg for s in chosen for arg in ("--source", s)))
    criteria = {
        "agreement": verdict_rules.item_agreement(
            matrix, reference, judge, agreement_command, how=how, judge_human=kinds[judge] == "human"
        )
    }

    alt_command = _command(
        "alt-test", *(arg for h in humans for arg in ("--human", h)), "--judge", judge, "--epsilon", repr(epsilon)
    )
    if len(humans) < 2:
        missing = f"the only human source is the reference {reference!r}: the test needs 2 or more humans; {how}"
        criteria["alt_test"] = verdict_rules.alternative_annotator(None, alt_command, missing=missing)
    else:
        report = alt_test_view(db, humans, judge, epsilon=epsilon)
        missing = None if report["computable"] else f"{report['reason']}: {how}"
        criteria["alt_test"] = verdict_rules.alternative_annotator(report, alt_command, missing=missing)

    systems_command = _command("systems", "--reference", reference, "--other", judge)
    try:
        systems = systems_view(db, reference, judge)
    except AssessError as exc:
        systems, missing = None, f"{exc} (python -m assess import run FILE --name RUN, two runs or more)"
    else:
        if systems["n_runs"] < 2 or not systems["n_topics"]:
            missing = (
                f"{systems['n_runs']} run(s) over {systems['n_topics']} topic(s) that both sources judged: the "
                "rankings need 2 or more runs on topics both judged (python -m assess import run FILE --name RUN)"
            )
            systems = None
    criteria["systems"] = verdict_rules.system_level(systems, systems_command, missing=missing)

    bias_command = _command("bias", "--reference", reference, "--judge", judge)
    criteria["bias"] = verdict_rules.bias(bias_view(db, reference, judge), bias_command)

    overall = verdict_rules.combine(criteria)
    criteria["estimate"] = _corrected_alternative(
        db, reference, judge, width, needed=overall["verdict"] != verdict_rules.REPLACE
    )
    return json_safe(
        {
            "reference": reference,
            "judge": judge,
            "task": "passage",
            "humans": humans,
            **overall,
            "settings": {
                "statistic": verdict_rules.STATISTIC,
                "threshold": 2,
                "bootstrap": 1000,
                "seed": 0,
                "epsilon": epsilon,
                "q": alt.Q,
                "min_items": alt.MIN_ITEMS,
                "min_shared": MIN_SHARED,  # the human ceiling's pairs
                "min_humans": alt.MIN_HUMANS,
                "min_items_shared": verdict_rules.MIN_ITEMS,  # judge vs reference, and bias
                "min_runs": verdict_rules.MIN_RUNS,
                "min_topics": verdict_rules.MIN_TOPICS,
                "measure": "nDCG@5",
                "correction": "holm",
                "tau": verdict_rules.TAU,
                "tau_ap": verdict_rules.TAU_AP,
                "significant_kept": verdict_rules.SIGNIFICANT_KEPT,
                "bias_margin": verdict_rules.BIAS_MARGIN,
                "width": width,
                "budgets": list(verdict_rules.BUDGETS),
                "estimate": "P@5 at grade >= 2 (PPI++)",
            },
            "criteria": list(criteria.values()),
        }
    )


def _corrected_alternative(db, reference: str, judge: str, width: float, *, needed: bool) -> dict[str, Any]:
    from assess.measures import verdict as verdict_rules

    budgets = [arg for b in verdict_rules.BUDGETS for arg in ("--budget", str(b))]
    commands = {
        "plan": _command("plan", "--judge", judge, *budgets),
        "estimate": _command("estimate", "--reference", reference, "--judge", judge, "--measure", "P@k"),
    }
    if not needed:
        return verdict_rules.corrected_alternative(None, None, commands, judge=judge, width=width, needed=False)
    plan = sample_plan(db, judge, budgets=verdict_rules.BUDGETS)
    refused = None
    try:
        estimate = estimate_view(db, reference, judge, measures=("P@k",))
    except AssessError as exc:
        estimate, refused = None, f"no corrected estimate from the reference's labels: {exc}"
    return verdict_rules.corrected_alternative(
        plan, estimate, commands, judge=judge, width=width, needed=True, refused=refused
    )


# ------------------------------------------------------------------------------------------ assessors' own consistency
# Re-shown items (store/reshows.py) and planned overlap (store/overlap.py): how far each assessor agrees with
# themselves, and the human ceiling over the items a plan gave to two or three assessors.


def headline_statistic(task: str) -> str:
    """The statistic a consistency figure leads with: quadratic-weighted kappa on a graded scale (more than
    two values, as the agreement matrix's table), unweighted kappa on a yes/no scale."""
    from store.audit import scale_of

    return "kappa_quadratic" if len(scale_of(task)) > 2 else "kappa_unweighted"


def self_agreement_view(
    db,
    task: str = "passage",
    *,
    assessor: str | None = None,
    threshold: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Each assessor's agreement with themselves: their answered re-shows (the second answer against the
    primary label as it stood when it was given), as the agreement matrix computes one pair (observed
    agreement, kappa unweighted / linear / quadratic, binarised at ``threshold``, ordinal alpha, each with a
    seeded percentile bootstrap interval over items). Pairs where either answer is 'cannot judge' are
    counted and left out."""
    from assess.measures.agreement import MATRIX_STATISTICS, agreement_matrix
    from store import reshows
    from store.audit import scale_of

    statistic = headline_statistic(task)
    found: dict[str, list[dict]] = {}
    for r in reshows.answers(db, task, assessor):
        found.setdefault(r["assessor"], []).append(r)
    people = []
    for name, answered in found.items():
        graded = [r for r in answered if r["first"] is not None and r["second"] is not None]
        first = {(r["turn_id"], r["item_id"]): r["first"] for r in graded}
        second = {(r["turn_id"], r["item_id"]): r["second"] for r in graded}
        pair = None
        if graded:
            matrix = agreement_matrix(
                {"first": first, "second": second},
                scale=scale_of(task),
                threshold=threshold,
                bootstrap=bootstrap,
                seed=seed,
            )
            pair = matrix["pairs"][0]
        people.append(
            {
                "assessor": name,
                "answered": len(answered),
                "n": len(graded),
                "cannot_judge": len(answered) - len(graded),
                "changed": sum(first[k] != second[k] for k in first),
                "value": pair[statistic] if pair else None,
                "ci": pair["ci"][statistic] if pair else None,
                **{s: pair[s] if pair else None for s in MATRIX_STATISTICS},
                "intervals": {s: pair["ci"][s] for s in MATRIX_STATISTICS} if pair else None,
            }
        )
    return json_safe(
        {
            "task": task,
            "statistic": statistic,
            "threshold": threshold,
            "bootstrap": {"replicates": bootstrap, "seed": seed, "level": 0.95},
            "rule": "second answer of a re-shown item against the primary label as it stood then; "
            "'cannot judge' on either side left out",
            "assessors": people,
            "pending": [c for c in reshows.counts(db, task) if assessor is None or c["assessor"] == assessor],
        }
    )


def overlap_view(
    db,
    task: str = "passage",
    *,
    plan: str | None = None,
    threshold: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    min_shared: int | None = None,
) -> dict[str, Any]:
    """The human ceiling over planned overlap: the items drawn for overlap (of one plan, or every plan of
    ``task``), each with the labels of the assessors planned to judge it, as the agreement matrix computes
    them (every pair of assessors and the ceiling pooled over those pairs: observed agreement, kappa
    unweighted / linear / quadratic, binarised at ``threshold``, ordinal alpha, each with a seeded percentile
    bootstrap interval over items). Also how far the plan has got: items judged by two and by all of their
    planned assessors. Labels of unplanned items and of other sources are left out ('cannot judge' too). Pairs
    sharing fewer than ``min_shared`` items (default ``MIN_SHARED``) are listed (``below_minimum``), not pooled."""
    from assess.measures.agreement import MIN_SHARED, agreement_matrix
    from store import overlap
    from store.audit import scale_of, task_labels

    judges = overlap.planned_judges(db, task, plan)
    names = sorted({a for people in judges.values() for a in people})
    stored = task_labels(db, task, names)
    labels: dict[str, dict] = {a: {} for a in names}
    judged = {}
    for item, people in judges.items():
        done = [a for a in people if item in stored[a]]
        judged[item] = (len(done), len(people))
        for a in done:
            labels[a][item] = stored[a][item]
    matrix = None
    if len(names) >= 2:
        matrix = agreement_matrix(
            labels,
            scale=scale_of(task),
            threshold=threshold,
            kinds=dict.fromkeys(names, "human"),
            bootstrap=bootstrap,
            seed=seed,
            min_shared=MIN_SHARED if min_shared is None else min_shared,
        )
    statistic = headline_statistic(task)
    ceiling = matrix["ceiling"] if matrix else None
    return json_safe(
        {
            "task": task,
            "plan": plan,
            "plans": [p for p in overlap.plans(db, task) if plan is None or p["name"] == plan],
            "assessors": names,
            "items": len(judges),
            "judged_by_two": sum(done >= 2 for done, _ in judged.values()),
            "judged_by_all": sum(done == planned for done, planned in judged.values()),
            "statistic": statistic,
            "threshold": threshold,
            "value": ceiling[statistic] if ceiling else None,
            "ci": ceiling["ci"][statistic] if ceiling else None,
            "ceiling": {k: v for k, v in ceiling.items() if k != "by"} if ceiling else None,
            "pairs": [{k: v for k, v in p.items() if k != "by"} for p in matrix["pairs"]] if matrix else [],
            "min_shared": MIN_SHARED if min_shared is None else min_shared,
            "below_minimum": matrix["ceiling_below_minimum"] if matrix else [],
            "bootstrap": {"replicates": bootstrap, "seed": seed, "level": 0.95},
        }
    )


HUMAN_KINDS = (SourceKind.ASSESSOR, SourceKind.ORGANIZERS, SourceKind.IMPORT)
"""The kinds whose sources the alternative annotator test takes as humans by default (adjudication repeats
the assessors: not a person)."""


def default_humans(db, task: str, judge: str | None = None) -> list[str]:
    """The human sources of the alternative annotator test when none are named: every source of a human kind
    (:data:`HUMAN_KINDS`: assessors, among them those of an overlap plan; organizers; imported human qrels)
    with labels of ``task``, other than the judge, by name."""
    names = audit_sources(db, task)
    kinds = stored_kinds(db, names)
    return [n for n in names if kinds[n] in HUMAN_KINDS and n != judge]
