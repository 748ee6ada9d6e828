"""The NtR judging queue (CONE-RAG nugget-to-response matching) and NtR recall's input from the store.

The labels themselves are written, undone and read through :mod:`store.labels` (task ``ntr``,
item ``(turn_id, nugget_id, run)``); this module knows which items exist and what they show.
"""

from __future__ import annotations

from assess.errors import AssessError, UnknownItem
from assess.nuggets import spans
from assess.queueing import QueueOrder
from assess.tasks import LABEL_KINDS, JudgingMode, Shown, Task
from store import labels
from store.conversations import all_turns
from store.db import Store, column, each, row, tuples
from store.nuggets.gold import nugget, nugget_sources
from store.queue import assessor_scope
from store.screens import topics_version

_KEY = LABEL_KINDS[Task.NTR].key


def item_key(nugget_id: int, run: str) -> str:
    """The queue's item id of an NtR item: ``'<nugget id> <run>'``, the NtR item key without its turn
    (:meth:`assess.tasks.ItemKey.encode_id`; a run name may hold any character)."""
    return _KEY.encode_id((int(nugget_id), run))


def item_parts(item: str) -> tuple[int, str]:
    """(nugget id, run) of an item id written by :func:`item_key`."""
    nid, run = _KEY.decode_id(item)
    return nid, run


def ntr_order(db: Store, assessor: str, nugget_source: str, *, open_mode: bool = True) -> QueueOrder:
    """NtR items (turn, :func:`item_key`) in judging order: conversation, turn, run, nugget key.

    Items are every gold nugget of ``nugget_source`` x every run with a response to that turn, over
    the assessor's assigned turns (or all turns in open mode without assignments).
    """
    where, params = assessor_scope(db, assessor, open_mode)
    # the nuggets of a turn are the same for each of its runs: read the (turn, run) pairs and the turns' nuggets
    # (a row each) and pair them here, not one row per item (417,000 rows, several seconds at ten times iKAT 2024)
    nuggets: dict[str, list[tuple]] = {}
    for turn, nid, key in tuples(
        db, "SELECT turn_id, id, key FROM nuggets WHERE source = :nugget_source", {"nugget_source": nugget_source}
    )[1]:
        nuggets.setdefault(turn, []).append((spans.key_order(key), nid))
    ids = {turn: [str(int(nid)) for _, nid in sorted(found)] for turn, found in nuggets.items()}
    _, pairs = tuples(
        db,
        "SELECT q.turn_id AS turn_id, r.run AS run FROM responses r JOIN (SELECT id AS turn_id FROM turns) q "
        "ON q.turn_id = r.turn_id JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id "
        "WHERE length(trim(r.text)) > 0 AND r.turn_id IN (SELECT turn_id FROM nuggets WHERE source = :nugget_source) "
        f"AND {where} ORDER BY c.rowid, t.position, r.run",
        {**params, "nugget_source": nugget_source},
    )
    # item_key's spelling ('<nugget id> <run>'; a stored run name is never empty), without its per-item checks
    items = [(turn, f"{nid} {run}") for turn, run in pairs for nid in ids[turn]]
    return QueueOrder.of(items)


def ntr_order_version(db: Store, assessor: str, nugget_source: str) -> tuple:
    """Changes whenever :func:`ntr_order`'s result may: the topics, the source's gold nuggets (their number and
    newest id: a nugget's key and turn never change), which responses have text, the assessor's assignments (the
    last two entries: their number and latest time)."""

    found = row(
        db,
        "SELECT (SELECT COUNT(*) FROM nuggets WHERE source = :source) AS nuggets, "
        "(SELECT MAX(id) FROM nuggets WHERE source = :source) AS newest, "
        "(SELECT COUNT(*) FROM responses) AS responses, "
        "(SELECT SUM(CASE WHEN length(trim(text)) > 0 THEN 1 ELSE 0 END) FROM responses) AS answered, "
        "(SELECT COUNT(*) FROM assignments WHERE assessor = :assessor) AS assigned, "
        "(SELECT MAX(assigned_at) FROM assignments WHERE assessor = :assessor) AS assigned_at",
        {"source": nugget_source, "assessor": assessor},
    )
    return (topics_version(db), *found.values())


def _key(db: Store, nugget_id: int, run: str) -> tuple[str, int, str]:
    """The NtR label key (turn, nugget id, run); an error when the run has no response to the nugget's turn."""
    found = row(
        db,
        "SELECT n.turn_id AS turn_id FROM nuggets n JOIN responses r ON r.turn_id = n.turn_id AND r.run = :run "
        "WHERE n.id = :id",
        {"run": run, "id": nugget_id},
    )
    if found is None:
        raise UnknownItem(f"nugget {nugget_id} with a response of run {run} does not exist")
    return found["turn_id"], nugget_id, run


def ntr_item(db: Store, item: str) -> dict:
    """What the NtR screen shows for an item (:func:`item_key`): the response and the gold nugget."""
    nid, run = item_parts(item)
    gold = nugget(db, nid)
    response = row(
        db,
        "SELECT text FROM responses WHERE run = :run AND turn_id = :turn_id",
        {"run": run, "turn_id": gold["turn_id"]},
    )
    if response is None:
        raise UnknownItem(f"run {run} has no response to turn {gold['turn_id']}")
    return {
        "run": run,
        "nugget_id": gold["id"],
        "key": gold["key"],
        "nugget": gold["text"],
        "turn_id": gold["turn_id"],
        "response": response["text"],
    }


def save_label(
    db: Store,
    source: str,
    nugget_id: int,
    run: str,
    match: int,
    *,
    mode: str = JudgingMode.BLIND,
    via: str = "ui",
    active_ms: int | None = None,
    expected: Shown | None = None,
) -> None:
    """Write one assessor's NtR label (1 = the nugget is covered by the response) in its own transaction;
    ``expected``: what the page showed of the label (:func:`store.labels.save`: a stale view is refused)."""
    key = _key(db, nugget_id, run)
    labels.save(db, Task.NTR, source, key, match, mode=mode, via=via, active_ms=active_ms, expected=expected)


def label_of(db: Store, source: str, nugget_id: int, run: str) -> int | None:
    """The source's NtR label of a nugget and a run's response, or None."""
    found = labels.get(db, Task.NTR, source, _key(db, nugget_id, run))
    return None if found is None else found.value


def undo(db: Store, source: str) -> tuple[str, str] | None:
    """Revert the source's latest NtR label change; return the queue position (turn, :func:`item_key`) it touched."""
    touched = labels.undo(db, Task.NTR, source)
    if touched is None:
        return None
    turn_id, nid, run = touched
    return turn_id, item_key(nid, run)


def ntr_scoring_input(
    db: Store, ntr_source: str, *, nugget_source: str | None = None, ptkb_source: str | None = None
) -> dict:
    """What NtR recall of ``ntr_source`` needs, read from the store as plain values.

    - ``matches``: ``{run: {turn: {nugget id: captured}}}`` over the labels of ``ntr_source`` on
      nuggets of the gold set; a (run, turn) is present when the source labelled at least one of
      its gold nuggets (as a line of the NtR TSV does). Labels on a stored response that is empty
      or only white space are left out (CONE-RAG skips empty responses) and counted.
    - ``gold`` / ``gold_dedup``: ``{turn: {nugget ids}}`` of the nugget set (``nugget_source``, or
      the one set the labels refer to) and of its de-duplicated subset (``in_dedup = 1``);
      the de-duplicated set is the one ``export nuggets --dedup`` writes. ``dedup_unknown_turns``:
      turns with nuggets whose status is unknown (imported without ``--dedup`` and never decided on
      the Duplicates page); they are not in the de-duplicated set.
    - ``personal``: with ``ptkb_source``, the turns with at least one statement it labelled relevant.
    """
    sources = labels.sources(db, Task.NTR)
    if ntr_source not in sources:
        raise UnknownItem(
            f"no NtR labels of source {ntr_source!r}; sources with NtR labels: {', '.join(sources) or 'none'}"
        )
    labelled_sets = column(
        db,
        "SELECT DISTINCT n.source AS source FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id "
        "WHERE l.source = :source ORDER BY n.source",
        {"source": ntr_source},
    )
    if nugget_source is None:
        if len(labelled_sets) != 1:
            raise AssessError(
                f"the labels of {ntr_source} refer to the nugget sets {', '.join(labelled_sets)}: "
                f"name one with --nugget-source"
            )
        nugget_source = labelled_sets[0]
    elif nugget_source not in nugget_sources(db):
        raise UnknownItem(
            f"no nuggets of source {nugget_source!r}; nugget sources: {', '.join(nugget_sources(db)) or 'none'}"
        )
    gold: dict[str, set[int]] = {}
    gold_dedup: dict[str, set[int]] = {}
    status: dict[str, set] = {}
    for n in each(db, "SELECT id, turn_id, in_dedup FROM nuggets WHERE source = :source", {"source": nugget_source}):
        gold.setdefault(n["turn_id"], set()).add(n["id"])
        status.setdefault(n["turn_id"], set()).add(n["in_dedup"])
        if n["in_dedup"] == 1:
            gold_dedup.setdefault(n["turn_id"], set()).add(n["id"])
    matches: dict[str, dict[str, dict[int, bool]]] = {}
    counts = {"labels": 0, "other_set_labels": 0, "empty_response_labels": 0}
    for r in each(
        db,
        "SELECT l.nugget_id AS nugget_id, l.run AS run, l.turn_id AS turn_id, l.match AS match, "
        "n.source = :nugget_source AS in_set, length(trim(r.text)) = 0 AS empty "
        "FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id JOIN turns t ON t.id = l.turn_id "
        "JOIN conversations c ON c.id = t.conversation_id "
        "LEFT JOIN responses r ON r.run = l.run AND r.turn_id = l.turn_id WHERE l.source = :ntr_source "
        "ORDER BY l.run, c.rowid, t.position, l.nugget_id",
        {"nugget_source": nugget_source, "ntr_source": ntr_source},
    ):
        if not r["in_set"]:
            counts["other_set_labels"] += 1
        elif r["empty"]:
            counts["empty_response_labels"] += 1
        else:
            counts["labels"] += 1
            matches.setdefault(r["run"], {}).setdefault(r["turn_id"], {})[r["nugget_id"]] = bool(r["match"])
    personal = None
    if ptkb_source is not None:
        ptkb_sources = labels.sources(db, Task.PTKB)
        if ptkb_source not in ptkb_sources:
            raise UnknownItem(
                f"no PTKB labels of source {ptkb_source!r}; PTKB label sources: {', '.join(ptkb_sources) or 'none'}"
            )
        personal = set(
            column(
                db,
                "SELECT DISTINCT turn_id FROM ptkb_labels WHERE source = :source AND relevant > 0",
                {"source": ptkb_source},
            )
        )
    return {
        "ntr_source": ntr_source,
        "nugget_source": nugget_source,
        "ptkb_source": ptkb_source,
        "matches": matches,
        "gold": gold,
        "gold_dedup": gold_dedup,
        "dedup_unknown_turns": [t for t in all_turns(db) if None in status.get(t, ())],
        "personal": personal,
        **counts,
    }
