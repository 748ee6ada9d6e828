"""Bulk reads for the judge audit (the assess/services/audit package): many sources' labels at once, where each turn
sits in its conversation, the runs' ranked lists and passage texts. One query per call, rows by column name."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from assess.tasks import PTKB_KEYS, Task, label_kind
from store.db import Store, each, rows, tuples


def source_kinds(db: Store) -> dict[str, str]:
    """{source name: its kind in the sources table} ('assessor', 'import', 'llm', 'adjudication', ...)."""
    return {r["name"]: r["kind"] for r in rows(db, "SELECT name, kind FROM sources ORDER BY name")}


def scale_of(task: str, present: Iterable[object] = ()) -> tuple[int, ...]:
    """The values labels of ``task`` take as :func:`task_labels` returns them (PTKB read as relevant or not); a
    value the scale gained later only when one of the ``present`` labels takes it (:meth:`LabelKind.values_in_use`)."""
    kind = label_kind(task)
    return PTKB_KEYS.values if kind.task is Task.PTKB else kind.values_in_use(present)


def task_labels(db: Store, task: str, sources: Sequence[str]) -> dict[str, dict[tuple, int]]:
    """{source: {item: value}} of the given sources' labels of ``task`` ('cannot judge' left out), a bulk read
    per source.

    Items are the task's item columns with the turn first, except NtR, whose items are (turn, nugget text,
    run) so that two nugget sources with the same texts align (as :func:`store.compare.label_pairs`). PTKB
    labels are read as relevant (> 0) or not, since imported PTKB qrels may be graded.
    """
    kind = label_kind(task)
    out: dict[str, dict[tuple, int]] = {s: {} for s in sources}
    if not sources:
        return out
    columns, source_table, value = _label_query(kind)
    sql = f"SELECT {', '.join(columns)}, {value} AS label_value {source_table}"
    width = len(columns)
    read = _value_reader(kind)
    for source in sources:  # one bulk read per source: a range of the label table's primary key
        _, found = tuples(db, sql, {"source": source})
        out[source] = (
            {r[:width]: r[width] for r in found} if read is None else {r[:width]: read(r[width]) for r in found}
        )
    return out


def _value_reader(kind):
    """How a stored value is read for the audit: PTKB as relevant (> 0) or not, the others as stored (None)."""
    return _relevant if kind.task is Task.PTKB else None


def _relevant(value: int) -> int:
    return int(value > 0)


def _label_query(kind) -> tuple[Sequence[str], str, str]:
    """The item columns, the FROM ... WHERE part (one ``:source``, values not null) and the value column."""
    if kind.task is Task.NTR:
        return (
            ("l.turn_id", "n.text", "l.run"),
            "FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id WHERE l.source = :source AND l.match IS NOT NULL",
            "l.match",
        )
    return (
        kind.item_columns,
        f"FROM {kind.table} WHERE source = :source AND {kind.value_column} IS NOT NULL",
        kind.value_column,
    )


PART, ITEM = "\x1f", "\x1e"  # unit and record separators: between an item's parts, between items


def packed_task_labels(db: Store, task: str, sources: Sequence[str]) -> dict[str, dict[str, int]] | None:
    """As :func:`task_labels`, with each item packed into one string: its parts (turn first) joined by PART.

    For the agreement matrix, where items are only matched across sources and grouped by turn
    (``key.partition(PART)[0]``): per source and value, the database joins the items into one text that
    is split here, which reads 500,000 labels in about half the time of row tuples. None when an id
    holds a separator character (ids from files never do; the import checks refuse control characters)
    and for NtR (nugget texts), so that the caller reads :func:`task_labels` instead.
    """
    kind = label_kind(task)
    if kind.task is Task.NTR:  # items hold nugget texts, which two nuggets of a turn may share: row tuples
        return None
    if not sources:
        return {}
    columns, source_table, value = _label_query(kind)
    part, item = ("char(31)", "char(30)") if db.sqlite else ("chr(31)", "chr(30)")
    joined = f" || {part} || ".join(columns)
    aggregate = f"group_concat({joined}, {item})" if db.sqlite else f"string_agg({joined}, {item})"
    sql = f"SELECT {value} AS label_value, COUNT(*) AS n, {aggregate} AS items {source_table} GROUP BY {value}"
    read = _value_reader(kind)
    out: dict[str, dict[str, int]] = {}
    for source in sources:
        labels: dict[str, int] = {}
        for label_value, n, text in tuples(db, sql, {"source": source})[1]:
            keys = text.split(ITEM) if text is not None else []
            if len(keys) != n or text.count(PART) != n * (len(columns) - 1):
                return None  # a separator inside an id (or a part missing): the packing is ambiguous
            labels.update(dict.fromkeys(keys, label_value if read is None else read(label_value)))
        out[source] = labels
    return out


def turn_places(db: Store) -> dict[str, tuple[str, int]]:
    """{turn id: (conversation id, position in the conversation, 0-based)} of every turn."""
    return {
        r["id"]: (r["conversation_id"], r["position"])
        for r in each(db, "SELECT id, conversation_id, position FROM turns")
    }


def ranked_runs(db: Store) -> dict[str, dict[str, list[str]]]:
    """Every stored ranking run as {run: {turn: [passage ids in rank order]}} (ties in rank by passage id)."""
    out: dict[str, dict[str, list[str]]] = {}
    for r in each(db, "SELECT run, turn_id, passage_id FROM rankings ORDER BY run, turn_id, rank, passage_id"):
        out.setdefault(r["run"], {}).setdefault(r["turn_id"], []).append(r["passage_id"])
    return out


def labelled_passage_texts(db: Store, source: str) -> dict[str, str | None]:
    """{passage id: stored text, None when the store has none} of the passages ``source`` gave a grade."""
    return {
        r["id"]: r["text"]
        for r in each(
            db,
            "SELECT DISTINCT p.id AS id, p.text AS text FROM passage_labels l JOIN passages p ON p.id = l.passage_id "
            "WHERE l.source = :source AND l.grade IS NOT NULL",
            {"source": source},
        )
    }


def ntr_gold(db: Store, source: str) -> dict[str, set[int]]:
    """{turn: ids of the gold nuggets} for NtR recall of ``source``'s NtR labels (yes/no or graded): every
    nugget, on each turn, of the nugget sources those labels refer to."""
    out: dict[str, set[int]] = {}
    for r in each(
        db,
        "SELECT n.turn_id AS turn_id, n.id AS id FROM nuggets n WHERE n.source IN ("
        "SELECT m.source FROM nuggets m JOIN ntr_labels l ON l.nugget_id = m.id WHERE l.source = :source "
        "UNION SELECT m.source FROM nuggets m JOIN ntr_support_labels l ON l.nugget_id = m.id WHERE l.source = :source)",
        {"source": source},
    ):
        out.setdefault(r["turn_id"], set()).add(r["id"])
    return out
