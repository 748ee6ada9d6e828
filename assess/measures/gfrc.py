"""GFRC2 and the original GFRC: group fairness and relevance of generated conversations.

Sakai, Tao, Song (2025), "Evaluating Group Fairness and Relevance in Conversational Search: An
Alternative Formulation", Sections 2-3; docs/measures.md#gfrc2 and docs/measures.md#gfrc.

A conversation is a sequence of words (user and system turns, split on whitespace upstream; the
tokeniser is the caller's choice and should be recorded beside the scores). Each relevant nugget
is a 1-based inclusive word span ``start..end`` with a relevance level ``1..max_level``, the system
turn it occurs in, and one group-membership probability vector per attribute set (given as a group
name, i.e. one-hot, or as an explicit vector).

Scoring is columnar: :func:`nugget_table` turns conversations into flat numpy arrays (one row per
nugget, sorted by conversation then end position) and :func:`gfrc2_scores` / :func:`gfrc_scores`
evaluate every conversation at once, so that 10,000 conversations take well under a second.
"""

from __future__ import annotations

import gc
from collections.abc import Hashable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from assess.errors import FormatError
from assess.measures.divergence import KINDS, default_divergence, distr_sim

#: Number of words a user is assumed to read at most (GFRC Eq. 4, GFRC2 Eq. 14).
DEFAULT_L = 1000


@dataclass(frozen=True)
class Attribute:
    """One attribute set: its groups (in order), the target distribution and the divergence."""

    name: str
    kind: str  # "nominal" or "ordinal"
    groups: tuple[str, ...]
    target: tuple[float, ...]
    divergence: str  # JSD, NMD or RNOD


@dataclass(frozen=True)
class NuggetTable:
    """Relevant nuggets of many conversations as flat arrays, sorted by (conversation, end)."""

    conversation_ids: tuple[Any, ...]
    conv: np.ndarray  # index into conversation_ids
    turn: np.ndarray  # global index of the (conversation, system turn) pair
    turn_conv: np.ndarray  # conversation index of each turn index
    start: np.ndarray
    end: np.ndarray
    level: np.ndarray
    membership: dict[str, np.ndarray]  # attribute name -> (n_nuggets, n_groups)


def _fail(source: str, expected: str, found: str):
    raise FormatError(source, None, expected, found)


def parse_attributes(items: Sequence[Mapping], *, source: str = "<data>") -> list[Attribute]:
    """Validate attribute-set declarations ``{"name", "kind", "groups", "target"?, "divergence"?}``.

    The target defaults to the uniform distribution over the groups; the divergence defaults to
    JSD for nominal and RNOD for ordinal sets (NTCIREVAL README.groupfair; docs/measures.md#divergences).
    """
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        _fail(source, "a list of attribute sets", type(items).__name__)
    attributes: list[Attribute] = []
    for pos, item in enumerate(items):
        where = f"attribute set #{pos + 1}"
        if not isinstance(item, Mapping) or "name" not in item or "groups" not in item:
            _fail(source, f"{where} as an object with name, kind and groups", repr(item)[:80])
        kind = str(item.get("kind", "nominal")).lower()
        if kind not in ("nominal", "ordinal"):
            _fail(source, f"{where} kind nominal or ordinal", repr(kind))
        groups = tuple(str(g) for g in item["groups"])
        if not groups or len(set(groups)) != len(groups):
            _fail(source, f"{where} with distinct, non-empty groups", repr(list(groups)))
        target = item.get("target")
        target = tuple(1.0 / len(groups) for _ in groups) if target is None else tuple(float(x) for x in target)
        if len(target) != len(groups) or min(target) < 0 or abs(sum(target) - 1.0) > 1e-6:
            _fail(source, f"{where} target: {len(groups)} non-negative numbers summing to 1", repr(list(target)))
        divergence = str(item.get("divergence") or default_divergence(kind)).upper()
        if divergence not in KINDS or divergence == "RNSS":
            _fail(source, f"{where} divergence JSD, NMD or RNOD", repr(divergence))
        attributes.append(Attribute(str(item["name"]), kind, groups, target, divergence))
    names = [a.name for a in attributes]
    if len(set(names)) != len(names):
        _fail(source, "distinct attribute-set names", repr(names))
    return attributes


def _membership_rows(values: list, attribute: Attribute, where, source: str) -> np.ndarray:
    """Turn group names or probability vectors into an (n, k) membership matrix."""
    k = len(attribute.groups)
    index = {g: i for i, g in enumerate(attribute.groups)}
    # -1: unknown name, -2: not a name (a vector, checked below)
    try:
        codes = np.asarray([index.get(v, -1) for v in values], dtype=np.int64)
    except TypeError:  # unhashable values, i.e. lists: probability vectors
        codes = np.asarray([index.get(v, -1) if isinstance(v, Hashable) else -2 for v in values], dtype=np.int64)
    for row in np.flatnonzero(codes == -1).tolist():
        if values[row].__class__ is not str:
            codes[row] = -2
    unknown = np.flatnonzero(codes == -1)
    if unknown.size:
        row = int(unknown[0])
        _fail(source, f"{attribute.name} group in {list(attribute.groups)} for {where(row)}", repr(values[row]))
    matrix = np.zeros((len(values), k))
    named = codes >= 0
    matrix[np.flatnonzero(named), codes[named]] = 1.0
    rows = np.flatnonzero(~named)
    if rows.size:
        block = np.empty((rows.size, k))
        for i, row in enumerate(rows.tolist()):
            value = values[row]
            if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != k:
                _fail(source, f"{attribute.name} group name or {k}-vector for {where(row)}", repr(value)[:80])
            try:
                block[i] = value
            except (TypeError, ValueError):
                _fail(source, f"{attribute.name} membership numbers for {where(row)}", repr(value)[:80])
        sums = block.sum(axis=1)
        bad = np.flatnonzero(~np.isfinite(sums) | (np.abs(sums - 1.0) > 1e-6) | np.any(block < 0, axis=1))
        if bad.size:
            _fail(
                source,
                f"{attribute.name} membership probabilities summing to 1 for {where(int(rows[bad[0]]))}",
                repr(values[int(rows[bad[0]])])[:80],
            )
        matrix[rows] = block
    return matrix


def _find_bad_nugget(conversations, attributes, source: str):
    """Slow path: name the first conversation or nugget that lacks a required field."""
    for ci, conv in enumerate(conversations):
        if not isinstance(conv, Mapping) or "id" not in conv:
            _fail(source, f"conversation #{ci + 1} as an object with an id", repr(conv)[:80])
        nuggets = conv.get("nuggets") or []
        if not isinstance(nuggets, Sequence):
            _fail(source, f"a list of nuggets in conversation {conv['id']!r}", repr(nuggets)[:80])
        for ni, nugget in enumerate(nuggets):
            label = f"conversation {conv['id']!r} nugget #{ni + 1}"
            if not isinstance(nugget, Mapping) or not all(f in nugget for f in ("start", "end", "level", "groups")):
                _fail(source, f"start, end, level and groups in {label}", repr(nugget)[:80])
            for a in attributes:
                if not isinstance(nugget["groups"], Mapping) or a.name not in nugget["groups"]:
                    _fail(source, f"a {a.name} membership in {label}", repr(nugget["groups"])[:80])
    _fail(source, "conversations with nuggets", "an unreadable structure")  # pragma: no cover


def nugget_table(
    conversations: Sequence[Mapping],
    attributes: Sequence[Attribute],
    *,
    max_level: int | None = None,
    source: str = "<data>",
) -> NuggetTable:
    """Validate conversations ``[{"id", "nuggets": [{"turn", "start", "end", "level", "groups"}]}]``.

    Positions are 1-based inclusive word counts; nuggets of one conversation must not overlap;
    ``level`` is an integer in 1..max_level (default: no upper bound); ``groups`` maps each
    attribute-set name to a group name or a membership vector. A missing ``turn`` puts the nugget
    in one unnamed system turn of its conversation.
    """
    # Fast path: column-wise comprehensions; any structural problem falls back to a slow scan
    # that names the offending conversation or nugget.
    try:
        conv_ids = [conv["id"] for conv in conversations]
        per_conv = [conv.get("nuggets") or [] for conv in conversations]
        flat = [n for nuggets in per_conv for n in nuggets]
        counts = [len(nuggets) for nuggets in per_conv]
        start_col = [n["start"] for n in flat]
        end_col = [n["end"] for n in flat]
        level_col = [n["level"] for n in flat]
        turn_col = [n.get("turn") for n in flat]
        groups_col = [n["groups"] for n in flat]
        values = {a.name: [g[a.name] for g in groups_col] for a in attributes}
    except (KeyError, TypeError, AttributeError):
        _find_bad_nugget(conversations, attributes, source)
    try:
        distinct = len(set(conv_ids)) == len(conv_ids)
    except TypeError:
        distinct = False
    if not distinct:
        _fail(source, "distinct conversation ids (strings or numbers)", "a repeated or unhashable id")
    conv = np.repeat(np.arange(len(conv_ids), dtype=np.int64), counts)
    try:
        turn_values = {t: i for i, t in enumerate(dict.fromkeys(turn_col))}
    except TypeError:
        _fail(source, "turn ids as strings or numbers", "an unhashable turn")
    turn_value = np.asarray([turn_values[t] for t in turn_col], dtype=np.int64)
    # One index per (conversation, turn) pair.
    turn_conv, turn = np.unique(conv * max(len(turn_values), 1) + turn_value, return_inverse=True)
    turn_conv = turn_conv // max(len(turn_values), 1)
    offsets = np.concatenate(([0], np.cumsum(counts)))

    def where(row: int) -> str:
        ci = int(np.searchsorted(offsets, row, side="right") - 1)
        return f"conversation {conv_ids[ci]!r} nugget #{row - int(offsets[ci]) + 1}"

    def integers(column: list, name: str) -> np.ndarray:
        try:
            arr = np.asarray(column, dtype=float)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.shape != (len(column),):
            bad = next(i for i, v in enumerate(column) if not isinstance(v, (int, float)) or isinstance(v, bool))
            _fail(source, f"an integer {name} in {where(bad)}", repr(column[bad])[:40])
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            _fail(source, f"an integer {name} in {where(int(bad[0]))}", repr(column[bad[0]]))
        return arr.astype(np.int64)

    start = integers(start_col, "start")
    end = integers(end_col, "end")
    level = integers(level_col, "level")
    for check, expected, found in (
        (start < 1, "start >= 1", start),
        (end < start, "end >= start", end),
        (level < 1, "level >= 1", level),
        (
            level > (max_level if max_level is not None else np.iinfo(np.int64).max),
            f"level <= max_level {max_level}",
            level,
        ),
    ):
        bad = np.flatnonzero(check)
        if bad.size:
            _fail(source, f"{expected} in {where(int(bad[0]))}", repr(int(found[bad[0]])))
    order = np.lexsort((end, conv))
    membership = {a.name: _membership_rows(values[a.name], a, where, source)[order] for a in attributes}
    start, end, level, conv, turn = start[order], end[order], level[order], conv[order], turn[order]
    same = conv[1:] == conv[:-1]
    overlap = np.flatnonzero(same & (start[1:] <= end[:-1]))
    if overlap.size:
        i = int(overlap[0])
        _fail(
            source,
            f"non-overlapping nugget spans in {where(int(order[i + 1]))}",
            f"{start[i + 1]}-{end[i + 1]} overlapping a span ending at {end[i]}",
        )
    return NuggetTable(tuple(conv_ids), conv, turn, turn_conv, start, end, level, membership)


def _segment_first(conv: np.ndarray) -> np.ndarray:
    """For each row, the row index where its conversation's block starts."""
    n = conv.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = conv[1:] != conv[:-1]
    return np.maximum.accumulate(np.where(new, np.arange(n), 0))


def _segment_cumsum(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    total = np.cumsum(x, axis=0)
    return total - (total[first] - x[first])


def gfrc2_scores(
    table: NuggetTable, attributes: Sequence[Attribute], *, L: int = DEFAULT_L, weights: Sequence[float] | None = None
) -> dict[str, Any]:
    """Compute GFRC2, EGNP and EGF for every conversation of ``table`` (GFRC2 paper Eqs. 11-21).

    At the end wc of each relevant nugget (one user cluster, Eq. 13):
    GNP(wc) = GWCrel / (WCnonrel + GWCrel) with GWCrel = sum_l l * WCrel_l (linear level weight,
    Eqs. 15-16); D^m(wc) = mean membership vector over the relevant nuggets ending by wc, cumulative
    across turns (Eq. 18); GF^m(wc) = 1 - divergence(D^m(wc) || D*^m) (Eq. 17);
    Experience = w_0 GNP + sum_m w_m GF^m with w_m = 1/(M+1) by default (Eqs. 12, 19).
    Prob(wc) = 1/L for nugget ends wc <= L, else 0 (Eq. 14), so GFRC2 = (1/L) sum I(wc) Experience,
    EGNP = (1/L) sum I(wc) GNP (Eq. 20), EGF^m = (1/L) sum I(wc) GF^m (Eq. 21).
    Degenerate: a conversation without relevant nuggets scores 0 on all three; nuggets ending
    after word L still get a cluster row (GNP, GF) but weigh nothing (Prob = 0).

    Returns per-nugget arrays ``GWCrel, WCnonrel, GNP, D (attr -> rows), GF (attr -> array),
    Experience`` (rows of ``table``) and per-conversation arrays ``EGNP, EGF (attr -> array), GFRC2``.
    """
    if L < 1:
        raise FormatError("<arguments>", None, "L >= 1", repr(L))
    m = len(attributes)
    w = np.full(m + 1, 1.0 / (m + 1)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (m + 1,) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
        raise FormatError("<arguments>", None, f"{m + 1} non-negative weights summing to 1", repr(weights))
    n_conv = len(table.conversation_ids)
    first = _segment_first(table.conv)
    length = table.end - table.start + 1
    rel_words = _segment_cumsum(length, first)
    gwcrel = _segment_cumsum(length * table.level, first)
    wcnonrel = table.end - rel_words
    gnp = gwcrel / (wcnonrel + gwcrel)
    count = (np.arange(table.conv.shape[0]) - first + 1)[:, None]
    weight = (table.end <= L) / L  # Prob(wc), Eq. 14
    egnp = np.bincount(table.conv, weights=gnp * weight, minlength=n_conv)
    experience = w[0] * gnp
    achieved: dict[str, np.ndarray] = {}
    gf: dict[str, np.ndarray] = {}
    egf: dict[str, np.ndarray] = {}
    for wm, a in zip(w[1:], attributes):
        achieved[a.name] = _segment_cumsum(table.membership[a.name], first) / count
        gf[a.name] = np.clip(distr_sim(achieved[a.name], a.target, a.divergence, check=False), 0.0, 1.0)
        egf[a.name] = np.bincount(table.conv, weights=gf[a.name] * weight, minlength=n_conv)
        experience = experience + wm * gf[a.name]
    gfrc2 = np.bincount(table.conv, weights=experience * weight, minlength=n_conv)
    return {
        "GWCrel": gwcrel,
        "WCnonrel": wcnonrel,
        "GNP": gnp,
        "D": achieved,
        "GF": gf,
        "Experience": experience,
        "EGNP": egnp,
        "EGF": egf,
        "GFRC2": gfrc2,
    }


def gfrc_scores(
    table: NuggetTable, attributes: Sequence[Attribute], *, L: int = DEFAULT_L, max_level: int | None = None
) -> dict[str, Any]:
    """Compute the original GFRC (R, GF per attribute set, total) of every conversation.

    R = (2/(L+1)) sum_n pw(n) g(n) with pw(n) = max(0, 1 - (wc(n) - 1)/L), wc(n) the nugget's END
    position (GFRC2 paper Eqs. 4-6; Eq. 6, not the FairWeb-2 implementation's Eq. 7), and gain
    g = (2^l - 1) / 2^max_level (ERR-style reading of the paper's "(2^2 - 1)/l_max = 3/4";
    only g(L2) = 0.75 with max_level 2 is confirmed by Table 4).
    GF^m = mean over system turns with >= 1 relevant nugget of 1 - divergence(D^m(S) || D*^m), where
    D^m(S) averages the memberships of that turn's nuggets only; 0 if no turn has a nugget (Eq. 10).
    GFRC = (R + sum_m GF^m) / (M + 1), the plain mean reported in Table 5 (Eq. 3 with alpha = 1/(M+1)).
    ``max_level`` defaults to the highest level in the table (1 if empty).
    """
    n_conv = len(table.conversation_ids)
    highest = int(table.level.max()) if table.level.size else 1
    top = highest if max_level is None else int(max_level)
    if highest > top:
        raise FormatError("<arguments>", None, f"levels <= max_level {top}", repr(int(table.level.max())))
    pw = np.maximum(0.0, 1.0 - (table.end - 1) / L)
    gain = (np.exp2(table.level) - 1.0) / 2.0**top
    r = 2.0 / (L + 1) * np.bincount(table.conv, weights=pw * gain, minlength=n_conv)
    n_turns = table.turn_conv.shape[0]
    per_turn = np.bincount(table.turn, minlength=n_turns).astype(float)
    has = per_turn > 0
    turns_per_conv = np.bincount(table.turn_conv[has], minlength=n_conv)
    gf: dict[str, np.ndarray] = {}
    total = r.copy()
    for a in attributes:
        mem = table.membership[a.name]
        k = mem.shape[1]
        sums = np.column_stack([np.bincount(table.turn, weights=mem[:, j], minlength=n_turns) for j in range(k)])
        sim = np.zeros(n_turns)
        if has.any():
            sim[has] = np.clip(distr_sim(sums[has] / per_turn[has, None], a.target, a.divergence, check=False), 0, 1)
        summed = np.bincount(table.turn_conv[has], weights=sim[has], minlength=n_conv)
        gf[a.name] = np.divide(summed, turns_per_conv, out=np.zeros(n_conv), where=turns_per_conv > 0)
        total = total + gf[a.name]
    return {"R": r, "GF": gf, "GFRC": total / (len(attributes) + 1), "max_level": top}


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while building many small result dicts.

    Hundreds of thousands of fresh containers trigger repeated collections that cost more than
    the scoring itself; none of them form cycles, so pausing is safe.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def score_gfrc2_document(data: Mapping, *, source: str = "<data>") -> dict[Any, dict]:
    """Score every conversation of a GFRC2 case document with GFRC2 and the original GFRC.

    ``data`` has ``attributes`` (see :func:`parse_attributes`), ``conversations`` (see
    :func:`nugget_table`), optional ``L`` (default 1000) and ``max_level`` (GFRC gain only).
    Returns ``{conversation id: {"EGNP", "EGF": {attr: v}, "GFRC2", "GFRC": {"R", "GF": {attr: v},
    "GFRC"}, "clusters": [{"wc", "GWCrel", "WCnonrel", "GNP", "GF": {attr: v}, "Experience"}]}}``;
    clusters list every relevant nugget in order, including those past word L (weight 0).
    """
    if not isinstance(data, Mapping):
        _fail(source, "a JSON object with attributes and conversations", type(data).__name__)
    L = data.get("L", DEFAULT_L)
    if not isinstance(L, int) or isinstance(L, bool) or L < 1:
        _fail(source, "L as a positive integer", repr(L))
    max_level = data.get("max_level")
    if max_level is not None and (not isinstance(max_level, int) or max_level < 1):
        _fail(source, "max_level as a positive integer", repr(max_level))
    attributes = parse_attributes(data.get("attributes", []), source=source)
    conversations = data.get("conversations")
    if not isinstance(conversations, Sequence) or isinstance(conversations, (str, bytes)):
        _fail(source, "a list of conversations", type(conversations).__name__)
    with _gc_paused():
        return _score_table(
            nugget_table(conversations, attributes, max_level=max_level, source=source), attributes, L, max_level
        )


def _score_table(table: NuggetTable, attributes: Sequence[Attribute], L: int, max_level: int | None) -> dict:
    two = gfrc2_scores(table, attributes, L=L)
    one = gfrc_scores(table, attributes, L=L, max_level=max_level)
    names = [a.name for a in attributes]
    gf_rows = (
        [dict(zip(names, sims)) for sims in zip(*(two["GF"][n].tolist() for n in names))]
        if names
        else [{} for _ in range(table.end.shape[0])]
    )
    rows = [
        {"wc": wc, "GWCrel": g, "WCnonrel": nr, "GNP": u, "GF": sims, "Experience": e}
        for wc, g, nr, u, sims, e in zip(
            table.end.tolist(),
            two["GWCrel"].tolist(),
            two["WCnonrel"].tolist(),
            two["GNP"].tolist(),
            gf_rows,
            two["Experience"].tolist(),
        )
    ]
    bounds = np.searchsorted(table.conv, np.arange(len(table.conversation_ids) + 1)).tolist()
    egnp, gfrc2 = two["EGNP"].tolist(), two["GFRC2"].tolist()
    egf = {n: two["EGF"][n].tolist() for n in names}
    r, total = one["R"].tolist(), one["GFRC"].tolist()
    gf = {n: one["GF"][n].tolist() for n in names}
    return {
        cid: {
            "EGNP": egnp[i],
            "EGF": {n: egf[n][i] for n in names},
            "GFRC2": gfrc2[i],
            "GFRC": {"R": r[i], "GF": {n: gf[n][i] for n in names}, "GFRC": total[i]},
            "clusters": rows[bounds[i] : bounds[i + 1]],
        }
        for i, cid in enumerate(table.conversation_ids)
    }
