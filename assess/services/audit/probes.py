"""The judge's probes: its bias against the reference, its consistency with itself over K answers, and how
its grades change with the PTKB in the prompt."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from assess.errors import AssessError
from assess.measures.bias import bias_report, persona_sensitivity, self_consistency
from assess.services.audit.groups import item_groups
from assess.services.audit.sources import check_two, json_safe, passage_pair, pick_roles
from assess.tasks import consensus, label_kind
from store.audit import labelled_passage_texts, ranked_runs
from store.prejudgments import answers_by_prompt_version, sample_answers, source_model


def bias_view(db, reference: str | None, judge: str | None, *, k: int = 10) -> dict[str, Any]:
    """Where the judge grades differently from the reference (judge - reference, on the items both graded):
    against passage length (words of the stored text, split on white space; passages without text have an
    unknown length and are left out of that probe, counted in ``length_unknown``), best rank in the stored
    runs, turn depth, personal turns, and per run over each run's top ``k``."""

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    llm, human = passage_pair(db, reference, judge)
    shared = [i for i in llm if i in human]
    texts = labelled_passage_texts(db, reference)
    lengths = {i: len(texts[i[1]].split()) for i in shared if texts.get(i[1])}
    groups, rules = item_groups(db, shared, ("depth", "personal"), None)
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


def label_kind_values(task: str, present: Iterable[object] = ()) -> tuple[int, ...]:
    """The scale of a task's stored labels (as answers are parsed: PTKB as stored, not binarised); a value the
    scale gained later only when one of the ``present`` values takes it (:meth:`LabelKind.values_in_use`)."""

    return label_kind(task).values_in_use(present)


def persona_view(db, source: str, with_version: str, without_version: str, task: str = "passage") -> dict[str, Any]:
    """How the source's grades change when the PTKB statements are in the prompt: the items answered under
    both prompt versions (each version's value the consensus of its answers), how many change, up or down,
    the mean change and the without x with matrix, also per personal vs non-personal turn."""

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
    groups, rules = item_groups(db, both, ("personal",), None)
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
