"""What every audit view shares: the sources with labels of a task and their kinds, the default reference and
judge among them, the human sources, and plain JSON values."""

from __future__ import annotations

from typing import Any

from assess import lazylibs
from assess.errors import AssessError
from assess.tasks import SourceKind
from store.audit import source_kinds as stored
from store.audit import task_labels
from store.labels import counts, sources

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


def json_safe(value: Any) -> Any:
    """Plain JSON values: NaN and infinities as None, numpy scalars as Python ones, tuples as lists, keys as text."""
    import math

    np = lazylibs.numpy()

    if isinstance(value, dict):
        return {k if isinstance(k, str) else key_text(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def key_text(key: Any) -> str:
    if isinstance(key, tuple):
        return " ".join(map(str, key))
    if isinstance(key, bool):
        return "personal" if key else "non-personal"
    return str(key)


def known_sources(db, task: str, names, *, role: str = "source") -> list[str]:
    """The names, each checked to have labels of ``task`` (one error naming the first that has none)."""

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

    return sources(db, task)


def source_kinds(db, names) -> dict[str, str]:
    """{source: "human" | "llm" | "crowd" | "import"} as the agreement matrix groups them (see MATRIX_KIND)."""

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


def passage_pair(db, reference: str, judge: str) -> tuple[dict, dict]:
    """The judge's and the reference's passage grades ('cannot judge' left out)."""

    labels = task_labels(db, "passage", [judge, reference])
    return labels[judge], labels[reference]


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
