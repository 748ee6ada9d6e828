"""An assessor's queue as plain values: a fixed item order plus the set of items already judged.

The order changes only when the pool or the assignments change, so the app caches it; the
judged set is read fresh on every run. Every operation here is O(judged) or O(distance moved),
never O(queue), so a 20,000-item queue costs nothing per key press.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

Item = tuple[str, str]  # (turn id, passage id or statement id)


@dataclass(frozen=True)
class QueueOrder:
    """The items of a queue in judging order, with lookups built once."""

    items: tuple[Item, ...]
    index: dict[Item, int] = field(repr=False)
    turn_totals: dict[str, int] = field(repr=False)

    @classmethod
    def of(cls, items) -> QueueOrder:
        items = tuple((str(t), str(i)) for t, i in items)
        return cls(items, {it: n for n, it in enumerate(items)}, dict(Counter(t for t, _ in items)))


@dataclass(frozen=True)
class QueueState:
    """A queue order and the items the assessor has labelled."""

    order: QueueOrder
    done: frozenset[Item]

    def __len__(self) -> int:
        return len(self.order.items)

    def item(self, position: int) -> tuple[str, str, bool]:
        turn, it = self.order.items[position]
        return turn, it, (turn, it) in self.done

    def next_unjudged(self, current: int | None) -> int | None:
        """The next unjudged position after ``current`` (wrapping to the start); None when all are judged."""
        items, n = self.order.items, len(self.order.items)
        if n == 0 or self.judged() >= n:
            return None
        start = -1 if current is None else current
        for step in range(1, n + 1):
            i = (start + step) % n
            if items[i] not in self.done:
                return i
        return None

    def resume(self) -> int | None:
        """Where an assessor resumes: the first unjudged item (the last item when all are judged)."""
        if not self.order.items:
            return None
        found = self.next_unjudged(None)
        return len(self.order.items) - 1 if found is None else found

    def move(self, key: Item | None, action: str | None) -> int | None:
        """Where the cursor goes from ``key`` (the item on screen) after ``action``: None (stay, or resume
        when ``key`` is not in the queue), 'next_unjudged', 'next' or 'prev'."""
        current = self.order.index.get(tuple(key)) if key else None
        if current is None:
            return self.resume()
        if action == "next_unjudged":
            found = self.next_unjudged(current)
            return current if found is None else found
        if action == "next":
            return min(current + 1, len(self.order.items) - 1)
        if action == "prev":
            return max(current - 1, 0)
        return current

    def judged(self) -> int:
        return sum(1 for it in self.done if it in self.order.index)

    def progress(self) -> dict:
        """Judged / total over the queue, per turn and per conversation (turn id before its last '_')."""
        judged_turns = Counter(t for (t, i) in self.done if (t, i) in self.order.index)
        turns = {t: [judged_turns.get(t, 0), total] for t, total in self.order.turn_totals.items()}
        convs: dict[str, list[int]] = {}
        for t, (d, total) in turns.items():
            c = convs.setdefault(t.rsplit("_", 1)[0], [0, 0])
            c[0] += d
            c[1] += total
        return {
            "judged": sum(judged_turns.values()),
            "total": len(self.order.items),
            "turns": turns,
            "conversations": convs,
        }


# ------------------------------------------------------------------------------------------- re-shows
# A share of each assessor's judged items comes back later, blind, as a consistency check. Which ones, and
# when, is decided by a seeded hash of the assessor, the task and a counter, so the same store and seed give
# the same re-shows and nothing needs to be stored before an item is judged.


def unit_draw(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``: the first 8 bytes of SHA-256 of their text joined by NUL, over 2**64."""
    import hashlib

    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class ReshowRule:
    """Re-show ``share`` of an assessor's judged items, each after at least ``gap`` further labels.

    The rule: the assessor's new labels are counted from 0 (``n``: the labels they held before it) and cut
    into blocks of 1/share labels (block j holds the n with ceil(j/share) <= n < ceil((j+1)/share)); in each
    block one label is picked, at the offset ``floor(u * block length)``, u = :func:`unit_draw` (seed,
    assessor, task, 'block', j). A picked item comes back once the assessor holds ``n + 1 + g`` labels,
    g = gap + floor(u' * (gap + 1)), u' = :func:`unit_draw` (seed, assessor, task, 'gap', n): between
    ``gap`` and ``2 * gap`` further labels later, at a random place. So exactly one item per block (the share,
    to within one block) comes back, at positions nobody can foresee without the seed.
    """

    share: float
    gap: int = 10
    seed: int = 0

    def __post_init__(self):
        share, gap = self.share, self.gap
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValueError(f"the re-show share is in (0, 1], not {share!r}")
        if isinstance(gap, bool) or not isinstance(gap, int) or gap < 1:
            raise ValueError(f"the re-show gap is a whole number of labels >= 1, not {gap!r}")

    def _block(self, j: int) -> tuple[int, int]:
        from fractions import Fraction

        s = Fraction(str(self.share))
        start = -((-j * s.denominator) // s.numerator)  # ceil(j / s)
        end = -((-(j + 1) * s.denominator) // s.numerator)
        return start, end

    def picked(self, assessor: str, task: str, n: int) -> int | None:
        """The further labels after which the assessor's new label number ``n`` (0-based) comes back; None
        when it is not picked."""
        from fractions import Fraction

        s = Fraction(str(self.share))
        j = (n * s.numerator) // s.denominator
        start, end = self._block(j)
        if n != start + int(unit_draw(self.seed, assessor, task, "block", j) * (end - start)):
            return None
        return self.gap + int(unit_draw(self.seed, assessor, task, "gap", n) * (self.gap + 1))


# ------------------------------------------------------------------------------------------- planned overlap


@dataclass(frozen=True)
class OverlapPlan:
    """Who judges what: each turn's primary assessor, and each assessor's extra items (blocks of items that
    sit together in their queue: one item, or a whole turn's items)."""

    primary: dict[str, str]
    extra: dict[str, list[tuple[Item, ...]]]
    chosen: int  # items (unit 'item') or turns (unit 'turn') judged by ``copies`` assessors
    population: int


OVERLAP_UNITS = ("item", "turn")


def plan_overlap(
    items: Sequence[Item], assessors: Sequence[str], *, share: float, copies: int = 2, unit: str = "item", seed: int = 0
) -> OverlapPlan:
    """Split ``items`` (in queue order) among ``assessors`` with a share judged by ``copies`` of them.

    The rule: the turns, in the order of their first item, go round the assessors (turn i to assessor
    i mod A: its primary). Of the units (items, or turns with ``unit='turn'``), round(share * units) (half
    up) are drawn without replacement by ``random.Random(seed)``; each drawn unit also goes to the
    ``copies - 1`` assessors after its primary in the given order (wrapping), as extra work in their
    queues (:func:`interleave`). Refused: fewer assessors than copies, an assessor twice, copies outside
    2-3, a share outside (0, 1], an unknown unit.
    """
    import random

    names = list(assessors)
    if len(set(names)) != len(names):
        raise ValueError(f"an assessor is named twice: {names!r}")
    if copies not in (2, 3):
        raise ValueError(f"an overlapping item is judged by 2 or 3 assessors, not {copies!r}")
    if len(names) < copies:
        raise ValueError(f"{copies} assessors per item need at least {copies} assessors; got {len(names)}")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise ValueError(f"the overlap share is in (0, 1], not {share!r}")
    if unit not in OVERLAP_UNITS:
        raise ValueError(f"the overlap unit is one of {', '.join(OVERLAP_UNITS)}, not {unit!r}")
    items = [(str(t), str(i)) for t, i in items]
    turns = list(dict.fromkeys(t for t, _ in items))
    primary = {t: names[n % len(names)] for n, t in enumerate(turns)}
    by_turn: dict[str, list[Item]] = {}
    for it in items:
        by_turn.setdefault(it[0], []).append(it)
    units = [tuple(by_turn[t]) for t in turns] if unit == "turn" else [(it,) for it in items]
    from decimal import ROUND_HALF_UP, Decimal

    count = int((Decimal(str(share)) * len(units)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    chosen = sorted(random.Random(seed).sample(range(len(units)), count))
    extra: dict[str, list[tuple[Item, ...]]] = {name: [] for name in names}
    for u in chosen:
        first = names.index(primary[units[u][0][0]])
        for step in range(1, copies):
            extra[names[(first + step) % len(names)]].append(units[u])
    return OverlapPlan(primary, extra, count, len(units))


def interleave(own: Sequence[Item], blocks: Sequence[Sequence[Item]]) -> list[Item]:
    """An assessor's own items with their extra blocks spread through them: with L own items and E blocks,
    block j (0-based) comes after own item p = floor((j + 1) * L / (E + 1)), moved on to the last own item of
    that item's turn (a turn of one's own is never split; p = 0 only when L = 0). So the blocks are spaced
    evenly, in their order. An extra item already among the own items (or an earlier block) is left where
    it was."""
    own = [tuple(it) for it in own]
    seen = set(own)
    kept = []
    for block in blocks:
        fresh = [tuple(it) for it in block if tuple(it) not in seen]
        seen.update(fresh)
        if fresh:
            kept.append(fresh)
    after: dict[int, list[Item]] = {}
    for j, block in enumerate(kept):
        p = (j + 1) * len(own) // (len(kept) + 1)
        while 0 < p < len(own) and own[p][0] == own[p - 1][0]:
            p += 1
        after.setdefault(p, []).extend(block)
    out = list(after.get(0, []))
    for n, it in enumerate(own, start=1):
        out.append(it)
        out.extend(after.get(n, []))
    return out


ADAPTIVE_STEPS = ("judge", "humans", "disputed")


def adaptive_step(
    answers: Sequence[int | None], given: int, judge: int | None, *, margin: float, copies: int
) -> str | None:
    """The step an item of an adaptive overlap plan is due, from the ``answers`` of the assessors it has gone
    to (``given`` of them; None: 'cannot judge', which compares with nothing) and the judge's grade (None: no
    judge, or it has no grade). Nothing is decided until all ``given`` have answered.

    - 'judge': one assessor so far, whose grade differs from the judge's by at least ``margin``: a second.
    - 'humans': fewer than ``copies`` assessors, every pair of their grades apart by at least ``margin``:
      one more (the third).
    - 'disputed': ``copies`` assessors, every pair of grades apart by at least ``margin``: adjudication.
    """
    from itertools import combinations

    if len(answers) > given:
        raise ValueError(f"{len(answers)} answers from {given} assessors")
    grades = [a for a in answers if a is not None]
    if len(answers) < given:
        return None
    if given == 1:
        return "judge" if grades and judge is not None and abs(grades[0] - judge) >= margin else None
    if len(grades) < 2 or not all(abs(a - b) >= margin for a, b in combinations(grades, 2)):
        return None
    return "humans" if given < copies else "disputed"
