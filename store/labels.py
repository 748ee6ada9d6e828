"""Every label of every task: write, note, undo, look up — through the task registry.

A label is keyed by its source and its task's item columns (:mod:`assess.tasks`); its value is
checked against the task's scale before anything is written, and its item against the kind's item source
where the registry names one (:func:`check_item`; :func:`items` lists that source's items). Each
single-label write is its own transaction (:func:`store.db.write`, joined when the caller already holds
one); the history triggers record every change, so undo is a walk back through the history.

Bulk paths (LLM jobs, crowd aggregates) call :func:`save` inside their own transaction, or
:func:`save_many` for many labels at once; imports of label files call :func:`import_labels` or
:func:`import_new_labels`, whose rule for a label stored already is :func:`_import_conflict`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from assess.errors import AssessError, UnknownItem
from assess.tasks import MATCH_SUPPORT, Label, LabelKind, Shown, Task, label_kind, source_kind
from store.bulk import by_keys, insert_rows
from store.db import Store, column, columns, each, now, row, rows, run, run_many, write
from store.rights import check_writer
from store.schema.active_time import TIMED_TABLES
from store.schema.postgres import history_insert_trigger

Item = tuple[str, ...]


def _item(kind: LabelKind, item: Sequence) -> Item:
    if len(item) != len(kind.item_columns):
        raise AssessError(f"a {kind.task} label is keyed by {', '.join(kind.item_columns)}; got {tuple(item)!r}")
    return tuple(item)


def _where(kind: LabelKind) -> str:
    return " AND ".join(f"{c} = :{c}" for c in kind.key_columns)


def _key(kind: LabelKind, source: str, item: Item) -> dict[str, Any]:
    """The parameters of :func:`_where`: the source and the item's columns by name."""
    return dict(zip(kind.key_columns, (source, *item), strict=True))


_GUIDELINE_NOW = "(SELECT MAX(g.version) FROM guidelines g WHERE g.task = :guideline_task)"
"""The version of the task's guideline in force (NULL: none yet), read in the write's own statement."""


def _timed(kind: LabelKind) -> bool:
    """Whether the kind's table records active time and guideline versions (migration 19)."""
    return kind.table in TIMED_TABLES


class StaleLabel(AssessError):
    """A write refused because the source's stored label of the item is not the one the page showed when it drew
    the item (``expected``, see :func:`save`): another tab or device labelled it meanwhile. Carries the stored
    label (``stored``: its value, note, mode, via; None: none), who stored it (``source``: the source, or the
    adjudicator who decided) and its time (``at``); the message says what is stored, by whom and when, then
    ``then``. Pressing again from a screen that shows the stored label replaces it."""

    def __init__(
        self,
        kind: LabelKind,
        source: str,
        stored: Label | None,
        at: str | None,
        *,
        then: str = "press again to replace it",
    ):
        self.task, self.source, self.stored, self.at = kind.task, source, stored, at
        self.value = None if stored is None else stored.value
        if stored is None:
            what = "the label this page showed was removed meanwhile"
        else:
            when = at.replace("T", " ").removesuffix("Z")[:19] + " UTC" if at else "an unknown time"
            what = f"this item was labelled {kind.scale.label(stored.value)} by {source} at {when}"
        super().__init__(f"{what} in another tab or device; {then}")


def _upsert_sql(kind: LabelKind, extra: Sequence[str], expected: Shown | None = None) -> str:
    """The write of one label; with ``expected`` (what the page showed), a stored label is replaced only when it
    is the one shown: the comparison is the statement's own (no read before it), and a refused write changes no
    row."""
    columns = [*kind.key_columns, *extra, kind.value_column, "note", "mode", "via", "updated_at"]
    cells = [":" + c for c in columns]
    updates = [
        f"{kind.value_column} = excluded.{kind.value_column}",
        f"note = COALESCE(excluded.note, {kind.table}.note)",
    ]
    updates += [f"{c} = excluded.{c}" for c in (*extra, "mode", "via", "updated_at")]
    if _timed(kind):  # every write records its own active time (NULL: not timed) and the guideline in force
        columns += ["active_ms", "guideline_version"]
        cells += [":active_ms", _GUIDELINE_NOW]
        updates += ["active_ms = excluded.active_ms", "guideline_version = excluded.guideline_version"]
    conflict = f"ON CONFLICT({', '.join(kind.conflict_columns)}) "
    if expected is not None and not expected.labelled:  # the page showed no label: any stored one is newer
        conflict += "DO NOTHING"
    else:
        conflict += f"DO UPDATE SET {', '.join(updates)}"
        if expected is not None:
            conflict += f" WHERE {kind.table}.{kind.value_column} IS NOT DISTINCT FROM :expected_value"
    return f"INSERT INTO {kind.table} ({', '.join(columns)}) VALUES ({', '.join(cells)}) {conflict}"


def _stale(db: Store, kind: LabelKind, source: str, key: Item) -> StaleLabel:
    """The refusal of a write whose ``expected`` label is not the stored one (read only when refused)."""
    found = row(
        db,
        f"SELECT {_label_columns(kind)}, updated_at FROM {kind.table} WHERE {_where(kind)}",
        _key(kind, source, key),
    )
    return StaleLabel(kind, source, _label(kind, source, found), None if found is None else found["updated_at"])


def _check_active_ms(active_ms: object) -> int | None:
    """An active time in whole milliseconds (>= 0), or None."""
    if active_ms is None:
        return None
    if isinstance(active_ms, bool) or not isinstance(active_ms, int) or active_ms < 0:
        raise AssessError(f"an active time is a whole number of milliseconds >= 0, not {active_ms!r}")
    return active_ms


def _upsert_params(
    kind: LabelKind,
    source: str,
    key: Item,
    extra: Mapping[str, Any],
    value,
    note,
    mode,
    via,
    at: str,
    active_ms: int | None = None,
) -> dict[str, Any]:
    """The parameters of :func:`_upsert_sql` for one label."""
    params = {
        **_key(kind, source, key),
        **extra,
        kind.value_column: value,
        "note": note,
        "mode": mode,
        "via": via,
        "updated_at": at,
    }
    if _timed(kind):
        params.update(active_ms=active_ms, guideline_task=kind.task.value)
    return params


def _extra_columns(db: Store, kind: LabelKind, item: Item, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """Columns a table needs beyond key and value (a PTKB label records its conversation)."""
    out = dict(extra or {})
    if kind.task is Task.PTKB and "conversation_id" not in out:
        conversation = row(db, "SELECT conversation_id FROM turns WHERE id = :id", {"id": item[0]})
        if conversation is None:
            raise UnknownItem(f"unknown turn {item[0]!r}")
        out["conversation_id"] = conversation["conversation_id"]
    return out


def check_item(db: Store, task: str | Task, item: Sequence) -> None:
    """Raise :class:`~assess.errors.UnknownItem` unless ``item`` is one of the kind's items: a row of the table
    its registry entry names as its :class:`~assess.tasks.ItemSource`. A kind that names none is not checked
    here (its own store code knows its items)."""
    kind = label_kind(task)
    _check_items(db, kind, [_item(kind, item)])


def _check_items(db: Store, kind: LabelKind, keys: Iterable[Item]) -> None:
    """:func:`check_item` for many items, a query per :data:`store.bulk.KEYS_PER_QUERY` distinct ones (none for a
    kind without an item source): the first unknown item, in the order given, is refused."""
    if kind.item_source is None:
        return
    wanted = list(dict.fromkeys(keys))
    picked = ", ".join(f"{s} AS {c}" for s, c in zip(kind.source_columns, kind.item_columns, strict=True))
    known = set()
    for match, params in by_keys(kind.source_columns, wanted):
        found = rows(db, f"SELECT DISTINCT {picked} FROM {kind.item_source.table} WHERE {match}", params)
        known |= {tuple(str(r[c]) for c in kind.item_columns) for r in found}
    for key in wanted:
        if tuple(map(str, key)) not in known:
            raise UnknownItem(kind.unknown_item(key))


def items(db: Store, task: str | Task) -> list[Item]:
    """Every item of a kind whose registry entry names its :class:`~assess.tasks.ItemSource`, once each, in
    conversation and turn order, then by its other item columns (a judging page's queue order); items of a
    turn the store does not hold are left out."""
    kind = label_kind(task)
    if kind.item_source is None:
        raise AssessError(f"the {kind.task} kind names no item source: its own store code lists its items")
    given = [f"x.{s}" for s in kind.source_columns]
    picked = ", ".join(f"{g} AS {c}" for g, c in zip(given, kind.item_columns, strict=True))
    found = rows(
        db,
        f"SELECT {picked} FROM {kind.item_source.table} x JOIN turns t ON t.id = {given[0]} "
        f"JOIN conversations c ON c.id = t.conversation_id GROUP BY {', '.join(given)}, c.rowid, t.position "
        f"ORDER BY {', '.join(['c.rowid', 't.position', *given[1:]])}",
    )
    return [tuple(r[c] for c in kind.item_columns) for r in found]


def save(
    db: Store,
    task: str | Task,
    source: str,
    item: Sequence,
    value: object,
    *,
    note: str | None = None,
    mode: str,
    via: str | None,
    extra: Mapping[str, Any] | None = None,
    at: str | None = None,
    active_ms: int | None = None,
    expected: Shown | None = None,
) -> None:
    """Write (insert or replace) one label; a note given as None keeps the label's existing note.

    ``active_ms``: how long the item was on screen and active before the key press (None: not timed); the
    label and its history event also record the version of the task's guideline in force. A label about no
    item of the kind's :class:`~assess.tasks.ItemSource` is refused in the write's transaction (:func:`check_item`).

    ``expected``: what the page showed of the source's label when it drew the item (a key press; None: no check,
    as for the command line and jobs). When the stored label is not that one (another tab or device labelled the
    item meanwhile), nothing is written and :class:`StaleLabel` says what is stored; the comparison is part of the
    write's own statement, in its transaction."""
    kind = label_kind(task)
    key = _item(kind, item)
    checked = kind.check(value)
    timed = _check_active_ms(active_ms)
    with write(db):
        _check_items(db, kind, [key])  # no query for a kind without an item source
        check_writer(db, source)  # an account disabled meanwhile saves nothing (same transaction)
        columns = _extra_columns(db, kind, key, extra)
        params = _upsert_params(kind, source, key, columns, checked, note, mode, via, at or now(), timed)
        if expected is not None and expected.labelled:
            params["expected_value"] = expected.value
        written = run(db, _upsert_sql(kind, tuple(columns), expected), params)
        if expected is not None and not written:
            raise _stale(db, kind, source, key)


def save_many(
    db: Store,
    task: str | Task,
    source: str,
    labels: Iterable[tuple[Sequence, object]],
    *,
    mode: str,
    via: str | None,
    extra: Mapping[str, Any] | None = None,
) -> int:
    """Write many (item, value) labels of one source in one transaction; return how many."""
    kind = label_kind(task)
    at = now()
    batch = []
    for item, value in labels:
        key = _item(kind, item)
        batch.append((key, kind.check(value)))
    with write(db):
        if not batch:
            return 0
        _check_items(db, kind, (key for key, _ in batch))
        check_writer(db, source)
        columns = _extra_columns(db, kind, batch[0][0], extra) if kind.task is not Task.PTKB else None
        if columns is not None:
            run_many(
                db,
                _upsert_sql(kind, tuple(columns)),
                [_upsert_params(kind, source, key, columns, v, None, mode, via, at) for key, v in batch],
            )
        else:
            for key, v in batch:
                cols = _extra_columns(db, kind, key, extra)
                run(db, _upsert_sql(kind, tuple(cols)), _upsert_params(kind, source, key, cols, v, None, mode, via, at))
    return len(batch)


def set_note(db: Store, task: str | Task, source: str, item: Sequence, note: str | None) -> bool:
    """Attach a note to an existing label; False when there is no label yet."""
    kind = label_kind(task)
    key = _item(kind, item)
    with write(db):
        check_writer(db, source)
        changed = run(
            db,
            f"UPDATE {kind.table} SET note = :note, updated_at = :updated_at WHERE {_where(kind)}",
            {"note": note or None, "updated_at": now(), **_key(kind, source, key)},
        )
    return changed > 0


def _label(kind: LabelKind, source: str, found: Mapping[str, Any] | None, **more: Any) -> Label | None:
    """A row holding the item's columns, ``label_value``, note, mode and via as a :class:`Label` (None: no row)."""
    if found is None:
        return None
    item = tuple(found[c] for c in kind.item_columns)
    return Label(kind.task, source, item, found["label_value"], found["note"], found["mode"], found["via"], **more)


def _label_columns(kind: LabelKind, alias: str = "") -> str:
    """The columns :func:`_label` reads, of the table named ``alias`` (none: unqualified)."""
    at = f"{alias}." if alias else ""
    return ", ".join(
        [*(f"{at}{c} AS {c}" for c in kind.item_columns), f"{at}{kind.value_column} AS label_value"]
        + [f"{at}{c} AS {c}" for c in ("note", "mode", "via")]
    )


def get(db: Store, task: str | Task, source: str, item: Sequence) -> Label | None:
    """One label of the source, or None."""
    kind = label_kind(task)
    found = row(
        db,
        f"SELECT {_label_columns(kind)} FROM {kind.table} WHERE {_where(kind)}",
        _key(kind, source, _item(kind, item)),
    )
    return _label(kind, source, found)


def delete(db: Store, task: str | Task, source: str, item: Sequence) -> bool:
    """Remove one label (the history keeps it); False when there was none."""
    kind = label_kind(task)
    with write(db):
        check_writer(db, source)
        return run(db, f"DELETE FROM {kind.table} WHERE {_where(kind)}", _key(kind, source, _item(kind, item))) > 0


def labelled(db: Store, task: str | Task, source: str) -> frozenset[Item]:
    """The items the source has labelled (any value, 'cannot judge' included).

    A compact set, not :class:`~assess.tasks.Label` records: queues and progress read every item of a source."""
    kind = label_kind(task)
    cols = ", ".join(kind.item_columns)
    got = columns(db, f"SELECT {cols} FROM {kind.table} WHERE source = :source", {"source": source})
    return frozenset(zip(*(got[c] for c in kind.item_columns)))


def values(db: Store, task: str | Task, source: str, *, turn_id: str | None = None) -> dict[Item, int | None]:
    """The source's labels as {item: value} (optionally of one turn).

    A compact map, not :class:`~assess.tasks.Label` records: agreement, scoring and exports read whole
    sources this way."""
    kind = label_kind(task)
    cols = ", ".join(kind.item_columns)
    sql = f"SELECT {cols}, {kind.value_column} AS label_value FROM {kind.table} WHERE source = :source"
    params: dict[str, Any] = {"source": source}
    if turn_id is not None:
        sql += " AND turn_id = :turn_id"
        params["turn_id"] = turn_id
    got = columns(db, sql, params)  # a bulk read: a run's labels can be hundreds of thousands
    return dict(zip(zip(*(got[c] for c in kind.item_columns)), got["label_value"]))


def ntr_support(db: Store, source: str, *, turn_id: str | None = None) -> dict[Item, int]:
    """The source's NtR labels on the graded scale (:data:`assess.tasks.SUPPORT`) as {(turn, nugget id, run): value}.

    Graded labels (``ntr-support``) are read as stored; yes/no labels (``ntr``) are read through
    :data:`assess.tasks.MATCH_SUPPORT` (yes = 2 support, no = 0 no support) and never rewritten. Where a
    source holds both for one item, the graded label wins.
    """
    out = {item: MATCH_SUPPORT[v] for item, v in values(db, Task.NTR, source, turn_id=turn_id).items()}
    out.update(values(db, Task.NTR_SUPPORT, source, turn_id=turn_id))
    return out


def sources(db: Store, task: str | Task, *, turn_id: str | None = None) -> list[str]:
    """The sources with at least one label of the task (of one turn, when given), by name."""
    kind = label_kind(task)
    if turn_id is None:  # every label table's key starts with its source: one probe per source, not a scan
        return column(
            db,
            f"SELECT s.name AS source FROM sources s WHERE EXISTS "
            f"(SELECT 1 FROM {kind.table} l WHERE l.source = s.name) ORDER BY s.name",
        )
    return column(
        db, f"SELECT DISTINCT source FROM {kind.table} WHERE turn_id = :turn_id ORDER BY source", {"turn_id": turn_id}
    )


def counts(db: Store, task: str | Task, sources: Sequence[str]) -> dict[str, int]:
    """{source: how many labels of the task it holds} for ``sources`` (0 for none): one grouped count over their
    labels, read through the primary key (it starts with the source)."""
    kind = label_kind(task)
    names = list(dict.fromkeys(str(s) for s in sources))
    params = {f"s{i}": name for i, name in enumerate(names)}
    listed = ", ".join(":" + k for k in params) or "NULL"
    found = dict.fromkeys(names, 0)
    for r in each(
        db, f"SELECT source, COUNT(*) AS n FROM {kind.table} WHERE source IN ({listed}) GROUP BY source", params
    ):
        found[r["source"]] = r["n"]
    return found


def others(db: Store, task: str | Task, item: Sequence, *, kinds: Sequence[str], exclude: str) -> list[Label]:
    """Labels of one item by sources of the given kinds other than ``exclude``, by source name, each with
    its source's kind."""
    kind = label_kind(task)
    key = _item(kind, item)
    if not kinds:
        return []
    marks = ", ".join(f":kind{i}" for i in range(len(kinds)))
    match = " AND ".join(f"l.{c} = :{c}" for c in kind.item_columns)
    found = rows(
        db,
        f"SELECT l.source AS source, s.kind AS kind, {_label_columns(kind, 'l')} FROM sources s "
        f"JOIN {kind.table} l ON l.source = s.name AND {match} "
        f"WHERE s.kind IN ({marks}) AND s.name != :exclude ORDER BY l.source",
        {
            **dict(zip(kind.item_columns, key, strict=True)),
            **{f"kind{i}": str(k) for i, k in enumerate(kinds)},
            "exclude": exclude,
        },
    )
    return [_label(kind, r["source"], r, source_kind=source_kind(r["source"], r["kind"])) for r in found]


# ------------------------------------------------------------------------------------------- undo


def last_change(db: Store, source: str, history_kind: str) -> tuple[str, str | None, str | None, str] | None:
    """The (history item, old value, new value, time) of the source's latest change of one kind that no undo has cancelled.

    Walks the history backwards: each undo row (via 'undo') cancels one earlier change. Bulk imports
    are not undoable. Used inside the undo's own write transaction.
    """
    pending = 0
    for change in each(
        db,
        "SELECT item, old_value, new_value, via, at FROM label_history WHERE source = :source "
        "AND label_table = :label_table AND via IS DISTINCT FROM 'bulk' ORDER BY id DESC",
        {"source": source, "label_table": history_kind},
    ):
        if change["via"] == "undo":
            pending += 1
        elif pending:
            pending -= 1
        else:
            return change["item"], change["old_value"], change["new_value"], change["at"]
    return None


CANNOT_JUDGE = "cannot-judge"
"""How the passage history triggers spell a NULL grade (fixed by the shipped migrations)."""


def _history_value(kind: LabelKind, old: str) -> int | None:
    """A value as the history triggers wrote it back to the table's value ('cannot-judge' is NULL)."""
    return None if old == CANNOT_JUDGE else int(old)


def history_text(task: str | Task, value: int | None) -> str | None:
    """A label value as the history triggers write it (the inverse of reading it back)."""
    kind = label_kind(task)
    if value is None:
        return CANNOT_JUDGE if kind.scale.missing else None
    return str(value)


def get_by_history_item(db: Store, task: str | Task, source: str, history_item: str) -> Label | None:
    """:func:`get` for an item spelled as the history spells it (item columns joined by spaces)."""
    kind = label_kind(task)
    found = row(
        db,
        f"SELECT {_label_columns(kind)} FROM {kind.table} WHERE source = :source AND {kind.key.sql()} = :item",
        {"source": source, "item": history_item},
    )
    return _label(kind, source, found)


def _history_key(db: Store, kind: LabelKind, source: str, history_item: str, new: str | None, at: str) -> Item | None:
    """The key of the label a history item names, read from the label table's own columns.

    The history spells an item as its columns joined by spaces, and an id may hold a space, so the item is
    never split: the row whose joined columns spell it is looked up instead. Of several such rows (ids
    that spell alike), the one the change left behind wins: its value is the change's new value and it was
    written at the change's time. None when no label row spells it any more.
    """
    found = rows(
        db,
        f"SELECT {', '.join(kind.item_columns)}, {kind.value_column} AS label_value, updated_at FROM {kind.table} "
        f"WHERE source = :source AND {kind.key.sql()} = :item",
        {"source": source, "item": history_item},
    )
    if not found:
        return None

    def fit(r: dict) -> tuple[bool, bool]:
        return history_text(kind.task, r["label_value"]) == new, r["updated_at"] == at

    best = max(found, key=fit)
    return tuple(str(best[c]) for c in kind.item_columns)  # as the history spells them


def undo(db: Store, task: str | Task, source: str) -> Item | None:
    """Revert the source's latest change of the task not yet undone; return the item it touched.

    Repeated undos walk further back: each undo write is itself in the history (via 'undo') and
    cancels one earlier change.
    """
    kind = label_kind(task)
    with write(db):
        check_writer(db, source)
        target = last_change(db, source, kind.task.value)
        if target is None:
            return None
        history_item, old, new, at = target
        key = _history_key(db, kind, source, history_item, new, at)
        if key is None:  # the label is gone (deleted outside the history walk): nothing to revert
            return None
        if old is None:
            run(db, f"DELETE FROM {kind.table} WHERE {_where(kind)}", _key(kind, source, key))
        else:
            untimed = ", active_ms = NULL" if _timed(kind) else ""  # an undo is no timed judgment
            run(
                db,
                f"UPDATE {kind.table} SET {kind.value_column} = :label_value, via = 'undo'{untimed}, "
                f"updated_at = :updated_at WHERE {_where(kind)}",
                {"label_value": _history_value(kind, old), "updated_at": now(), **_key(kind, source, key)},
            )
        return key


def save_changed(
    db: Store,
    task: str | Task,
    source: str,
    item: Sequence,
    value: object,
    *,
    mode: str,
    via: str | None,
    extra: Mapping[str, Any] | None = None,
) -> bool:
    """:func:`save`, unless the source's label of the item already holds ``value``: then nothing changes,
    not even its mode or time (re-running an LLM job or a crowd aggregate leaves equal labels alone).
    True when the label was written."""
    with write(db):
        current = get(db, task, source, item)
        if current is not None and current.value == value:
            return False
        save(db, task, source, item, value, mode=mode, via=via, extra=extra)
        return True


def get_many(db: Store, task: str | Task, source: str, items: Iterable[Sequence]) -> dict[Item, Label]:
    """The source's labels of ``items`` (those it has), by item: a few queries for many items."""
    kind = label_kind(task)
    keys = list(dict.fromkeys(_item(kind, item) for item in items))
    found: dict[Item, Label] = {}
    for match, params in by_keys(kind.item_columns, keys):
        sql = f"SELECT {_label_columns(kind)} FROM {kind.table} WHERE source = :source AND {match}"
        for r in rows(db, sql, params | {"source": source}):
            label = _label(kind, source, r)
            found[label.item] = label
    return found


def save_changed_many(
    db: Store,
    task: str | Task,
    source: str,
    labels: Sequence[tuple[Sequence, object]],
    *,
    mode: str,
    via: str | None,
) -> int:
    """:func:`save_changed` for many (item, value) labels of one source, in order, in one transaction and a few
    statements: a label already holding its value is left alone; an item named twice is written as often as its
    value changes (each write a history row, as one call per label gives). The number of writes."""
    kind = label_kind(task)
    pairs = [(_item(kind, item), kind.check(value_)) for item, value_ in labels]
    if not pairs:
        return 0
    at = now()
    with write(db):
        found = get_many(db, kind.task, source, [k for k, _ in pairs])
        current = {tuple(map(str, item)): label.value for item, label in found.items()}
        writes = []
        for key, value_ in pairs:
            name = tuple(map(str, key))
            if name in current and current[name] == value_:
                continue
            current[name] = value_
            writes.append((key, value_))
        if not writes:
            return 0
        _check_items(db, kind, (key for key, _ in writes))
        check_writer(db, source)
        if kind.task is Task.PTKB:  # its rows name their conversation, one lookup per label
            for key, value_ in writes:
                cols = _extra_columns(db, kind, key, None)
                run(
                    db,
                    _upsert_sql(kind, tuple(cols)),
                    _upsert_params(kind, source, key, cols, value_, None, mode, via, at),
                )
        else:
            run_many(
                db,
                _upsert_sql(kind, ()),
                [_upsert_params(kind, source, key, {}, v, None, mode, via, at) for key, v in writes],
            )
    return len(writes)


# ------------------------------------------------------------------------------------------- imports
# Labels read from files (qrels, PTKB provenance, NtR labels) are written here too, under one rule for a
# label the source has already: see _import_conflict.

IMPORT_PROVENANCE = ("via", "batch")
"""Columns an import supplies about where its labels come from; rewritten with the value."""


def _import_conflict(kind: LabelKind, columns: Sequence[str], *, new_source: bool = False) -> str:
    """The ON CONFLICT clause of every label import, the rule stated once: an imported label rewrites the
    source's stored one only when the value differs, and then its value, the import's provenance
    columns it gives (:data:`IMPORT_PROVENANCE`) and ``updated_at``; the mode, the note and the item's
    other columns stay as first written. A source's first import (``new_source``) keeps the first of
    an item given twice (its reader refuses a second value)."""
    conflict = f" ON CONFLICT({', '.join(kind.conflict_columns)}) "
    if new_source:
        return conflict + "DO NOTHING"
    col, table = kind.value_column, kind.table
    rewritten = [col, *(c for c in IMPORT_PROVENANCE if c in columns), "updated_at"]
    return (
        conflict
        + f"DO UPDATE SET {', '.join(f'{c}=excluded.{c}' for c in rewritten)} "
        + f"WHERE {table}.{col} IS DISTINCT FROM excluded.{col}"
    )


def import_labels(
    db: Store, task: str | Task, columns: Sequence[str], records: Iterable[Sequence], *, mode: str = "import"
) -> None:
    """Inside the caller's write transaction: write imported labels, ``records`` holding a value for each
    of ``columns`` (source, the item's columns, the value column, ``updated_at``, any of
    :data:`IMPORT_PROVENANCE`), one statement each (a file may give an item twice, with the same value),
    under :func:`_import_conflict`; the history triggers record each real change. An item its kind's item
    source lacks is refused before anything is written (:func:`check_item`)."""
    kind = label_kind(task)
    if kind.item_source is not None:
        records = list(records)
        at = [list(columns).index(c) for c in kind.item_columns]
        _check_items(db, kind, (tuple(r[i] for i in at) for r in records))
    names = [*columns, "mode"]
    sql = (
        f"INSERT INTO {kind.table} ({', '.join(names)}) VALUES ({', '.join(':' + c for c in names)})"
        + _import_conflict(kind, columns)
    )
    run_many(db, sql, ({**dict(zip(columns, r)), "mode": mode} for r in records))


# A source's first import of a file is one history event: item '*', new_value the number of labels,
# via 'bulk' (the label rows themselves carry via NULL, as every imported label does). Each label's
# imported value stays recoverable: it is the old_value of the item's first
# later history row, or its current value if it never changed (store.history.item_history does this).
BULK_EVENT = (
    "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
    "VALUES (:label_table, :source, '*', NULL, :count, 'import', 'bulk', :at)"
)


def import_staged_labels(db: Store, task: str | Task, table: str, columns: Sequence[str], source: str, at: str) -> None:
    """Inside the caller's write transaction (an import's switch, :func:`store.staging.staging`): write the labels
    of ``source`` staged in ``table`` (``columns``: the label table's columns it holds, one row per item), in
    one INSERT … SELECT in key order under :func:`_import_conflict`; the history triggers record each real
    change, as :func:`import_labels` does row by row. Each row is stamped ``at``, unless the table holds its own
    ``updated_at`` (battles: the file's order)."""
    kind = label_kind(task)
    listed = ", ".join(columns)
    stamped = "" if "updated_at" in columns else ", updated_at"
    run(
        db,
        f"INSERT INTO {kind.table} (source, {listed}{stamped}) SELECT :source, {listed}{stamped and ', :at'} FROM {table} "
        f"WHERE true ORDER BY {', '.join(kind.item_columns)}{_import_conflict(kind, columns)}",
        {"source": source, "at": at},
    )


@contextlib.contextmanager
def _history_trigger_off(db: Store, table: str) -> Iterator[None]:
    """Inside a write transaction: no history row per inserted label for the block. SQLite: drop the
    table's insert-history trigger, then re-create it from its own stored SQL (schema changes are
    transactional, so no other connection ever sees the table without it, and a failure rolls the
    drop back). PostgreSQL: the trigger skips the table named in a transaction-local setting (no
    lock, so readers carry on during the import)."""
    if not db.sqlite:
        run(db, history_insert_trigger(table, enabled=False))
        yield
        run(db, history_insert_trigger(table, enabled=True))
        return
    name = f"{table}_history_insert"
    sql = row(db, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = :name", {"name": name})["sql"]
    run(db, f"DROP TRIGGER {name}")
    yield
    run(db, sql)


class NewLabels:
    """One source's labels of one task imported block by block (see :func:`import_new_labels`)."""

    def __init__(self, db: Store, kind: LabelKind, source: str, at: str, first: bool):
        self.db, self.kind, self.source, self.at, self.first = db, kind, source, at, first
        cells = ("?",) * len(kind.item_columns)
        self._head = (
            f"INSERT INTO {kind.table} (source, {', '.join(kind.item_columns)}, {kind.value_column}, mode, via, "
            "updated_at)"
        )
        self._cells = (":source", *cells, "?", "'import'", "NULL", ":stamp")
        self._tail = _import_conflict(kind, ("via",), new_source=first)

    def write(self, records: Iterable[Sequence]) -> None:
        """Write a block of (item columns..., value) records, many per statement, in the order given (a block
        never gives an item twice: PostgreSQL refuses to update a row twice in one statement). An item its kind's
        item source lacks is refused (:func:`check_item`)."""
        if self.kind.item_source is not None:
            records = list(records)
            _check_items(self.db, self.kind, (tuple(r[: len(self.kind.item_columns)]) for r in records))
        insert_rows(self.db, self._head, self._cells, self._tail, records, {"source": self.source, "stamp": self.at})

    def write_staged(self, table: str, columns: str) -> None:
        """Write the labels staged in ``table`` (``columns``: its item columns and value, in that order; one row
        per item), in one INSERT … SELECT in key order (an import's switch, :func:`store.staging.staging`)."""
        params = {"source": self.source, "stamp": self.at}
        run(
            self.db,
            f"{self._head} SELECT :source, {columns}, 'import', NULL, :stamp FROM {table} WHERE true "
            f"ORDER BY {', '.join(self.kind.item_columns)}{self._tail}",
            params,
        )

    def record(self, count: int) -> None:
        """A first import of ``count`` labels: its one history event (:data:`BULK_EVENT`)."""
        if self.first and count:
            run(
                self.db,
                BULK_EVENT,
                {"label_table": self.kind.task.value, "source": self.source, "count": str(count), "at": self.at},
            )


@contextlib.contextmanager
def import_new_labels(db: Store, task: str | Task, source: str, at: str) -> Iterator[NewLabels]:
    """Inside the caller's write transaction: import labels of ``source`` block by block (mode 'import', via
    NULL, stamped ``at``). A source that has never had a label of the task (none now, none in the history)
    gets its labels without a history row each, and :meth:`NewLabels.record` writes the one event that
    stands for them, so a source has at most one bulk event and every label's trail can be rebuilt from
    it; a later import rewrites labels under :func:`_import_conflict`, each real change in the history."""
    kind = label_kind(task)
    first = row(
        db,
        f"SELECT NOT EXISTS (SELECT 1 FROM {kind.table} WHERE source = :source) AND NOT EXISTS "
        "(SELECT 1 FROM label_history WHERE source = :source AND label_table = :label_table) AS first",
        {"source": source, "label_table": kind.task.value},
    )["first"]
    labels = NewLabels(db, kind, source, at, bool(first))
    with _history_trigger_off(db, kind.table) if labels.first else contextlib.nullcontext():
        yield labels
