"""The item-key codec: how a kind spells one item as text (the history's ``item``, a pre-judgment's ``item_id``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assess.errors import AssessError


@dataclass(frozen=True)
class ItemKey:
    """How a kind spells one item as text: the values of its item columns, turn first, joined by single spaces.

    This spelling is the label history's ``item`` (written by the history triggers, whose SQL :meth:`sql`
    builds), and, without the turn, a pre-judgment's ``item_id`` and a queue's item id (:meth:`encode_id`).
    One column, ``spaced``, may hold spaces (a run name may hold any character); every other column is an
    id without spaces (the id rule of :mod:`assess.formats.reading`) or an integer (``integers``), so the
    text splits back unambiguously: from the left up to the spaced column, from the right after it.
    """

    columns: tuple[str, ...]
    integers: tuple[str, ...] = ()
    spaced: str | None = None  # the column that may hold spaces; None: the last one

    def __post_init__(self) -> None:
        if not self.columns or not set(self.integers) <= set(self.columns):
            raise ValueError(f"an item key needs columns, integers among them: {self.columns}, {self.integers}")
        if self.spaced is not None and (self.spaced not in self.columns or self.spaced in self.integers):
            raise ValueError(f"the spaced column {self.spaced!r} is not a text column of {self.columns}")

    @property
    def _free(self) -> int:
        """The index of the column that may hold spaces."""
        return len(self.columns) - 1 if self.spaced is None else self.columns.index(self.spaced)

    def encode(self, item: Sequence[object]) -> str:
        """The text of ``item`` (one value per column, turn first); an item it could not read back is refused."""
        return _encode(self.columns, self.integers, self._free, item)

    def decode(self, text: str) -> tuple:
        """The item ``text`` spells (integer columns as int), the inverse of :meth:`encode`."""
        return _decode(self.columns, self.integers, self._free, text)

    def encode_id(self, parts: Sequence[object]) -> str:
        """The item without its turn (the values of the columns after the first): a pre-judgment's ``item_id``."""
        return _encode(self.columns[1:], self.integers, self._free - 1, parts)

    def decode_id(self, text: str) -> tuple:
        """The values of the columns after the turn that an :meth:`encode_id` text names (the inverse)."""
        return _decode(self.columns[1:], self.integers, self._free - 1, text)

    def sql(self, row: str = "") -> str:
        """The SQL expression of the item's text over a row's columns (``row``: ``NEW.``, ``X.``, an alias):
        the spelling :meth:`encode` writes, as the history triggers of both engines write it."""
        return " || ' ' || ".join(f"{row}{c}" for c in self.columns)


def _encode(columns: tuple[str, ...], integers: tuple[str, ...], free: int, item: Sequence[object]) -> str:
    if len(item) != len(columns):
        raise AssessError(f"an item of {', '.join(columns)} has {len(columns)} parts, not {len(item)}: {item!r}")
    parts = []
    for n, (column, part) in enumerate(zip(columns, item)):
        if column in integers:
            try:
                if isinstance(part, bool) or not isinstance(part, int | str):
                    raise ValueError
                parts.append(str(int(part)))
            except ValueError:
                raise AssessError(f"{column} is an integer, not {part!r}") from None
            continue
        text = str(part)
        if not text or (n != free and " " in text):
            raise AssessError(f"{column} is an id without spaces, not {text!r}")
        parts.append(text)
    return " ".join(parts)


def _decode(columns: tuple[str, ...], integers: tuple[str, ...], free: int, text: str) -> tuple:
    if not columns:  # a key of the turn alone: nothing after it
        if text:
            raise AssessError(f"{text!r} names more than a turn")
        return ()
    *head, rest = text.split(" ", free) if free > 0 else [text]
    tail = rest.rsplit(" ", len(columns) - 1 - free) if len(columns) - 1 > free else [rest]
    parts = [*head, *tail]
    if len(parts) != len(columns) or not all(parts):
        raise AssessError(f"{text!r} does not name an item of {', '.join(columns)}")
    try:
        return tuple(int(p) if c in integers else p for c, p in zip(columns, parts))
    except ValueError:
        raise AssessError(f"{text!r} does not name an item of {', '.join(columns)} (an integer expected)") from None
