"""An assessor's queue as plain values: a fixed item order plus the set of items already judged.

The order changes only when the pool or the assignments change, so the app caches it; the
judged set is read fresh on every run. Every operation here is O(judged) or O(distance moved),
never O(queue), so a 20,000-item queue costs nothing per key press.
"""

from __future__ import annotations

from collections import Counter
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
