"""Typed records passed between layers: a label, what a screen showed, a passage, a turn's context, cited
responses and nugget spans."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from assess.errors import InvalidSpan
from assess.tasks.sources import SourceKind
from assess.tasks.vocabulary import Task


@dataclass(frozen=True, slots=True)
class Label:
    """One source's label of one item, as the store reads it back (:func:`store.labels.get`,
    :func:`store.labels.others`, :func:`store.queue.label_of`, :func:`store.review.item_labels`) and the judging
    services and screens use it (:mod:`assess.services.judging`, :mod:`assess.services.rag`, the /judge,
    /ptkb and /adjudicate pages).

    ``item`` holds the values of the task's :attr:`LabelKind.item_columns`, in order. ``value`` None: the
    label says "cannot judge" (:attr:`missing`). ``note``, ``mode``, ``via``: as stored with the value.
    ``source_kind``: the source's kind, where the reader joined the sources table (:func:`store.labels.others`);
    ``rationale``: an LLM source's raw answer, where the reader fetched it (revealed and adjudicated labels).
    The label's time is left out: no reader's consumer uses it. Bulk reads keep their compact maps
    (:func:`store.labels.values`, :func:`store.labels.labelled`): a run's labels can be hundreds of thousands.
    """

    task: Task
    source: str
    item: tuple
    value: int | None
    note: str | None = None
    mode: str | None = None
    via: str | None = None
    source_kind: SourceKind | None = None
    rationale: str | None = None

    @property
    def missing(self) -> bool:
        """True for a stored "cannot judge" (the scale's missing value): the label exists, its value is None."""
        return self.value is None


@dataclass(frozen=True, slots=True)
class Shown:
    """What a judging screen showed of a source's own label of one item when it drew the item: no label
    (``labelled`` false), or a label of ``value`` (None: "cannot judge"). A key press passes it with the write as
    ``expected`` (:func:`store.labels.save`): a label stored meanwhile from another tab or device that differs
    from it is not replaced silently (:class:`store.labels.StaleLabel`)."""

    labelled: bool
    value: int | None = None

    @classmethod
    def of(cls, label: Label | None) -> Shown:
        """What a screen showing ``label`` (None: no label) showed."""
        return NOTHING_SHOWN if label is None else cls(True, label.value)


NOTHING_SHOWN = Shown(False)
"""A screen that showed no label of its own for the item."""


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage as the judging screens show it and the prompts quote it (:func:`store.conversations.passage`).

    ``text`` None: only the id is known (judged ClueWeb22 texts are licensed, so an iKAT pool often has ids
    only); a screen says so instead of showing a text, and an LLM job skips the item."""

    id: str
    text: str | None = None


class TurnContext(NamedTuple):
    """A turn's context, built once by :func:`store.conversations.turn_contexts`: what a judging screen shows
    beside an item (the conversation so far and the user's PTKB) and what the LLM prompts are given."""

    turn_id: str
    conversation_id: str
    title: str | None  # the conversation's title
    utterance: str | None
    resolved: str | None  # the manually resolved utterance, when the topic file has one
    history: tuple[Mapping, ...]  # earlier turns: {"turn_id", "utterance", "response"}
    ptkb: tuple[Mapping, ...]  # the user's statements: {"id", "text"}

    @property
    def query(self) -> str:
        """The utterance a passage is judged against: the resolved one when there is one."""
        return self.resolved or self.utterance or ""


class CitedSentence(NamedTuple):
    """One sentence of a generated response and the passages it cites, in the order it cites them.

    ``start`` / ``end`` are code-point offsets into the response's text; None: the store finds the
    sentence in the text itself, after the previous sentence (:meth:`CitedResponse.spans`)."""

    text: str
    citations: tuple[str, ...] = ()
    start: int | None = None
    end: int | None = None


class CitedResponse(NamedTuple):
    """A run's generated response to a turn, as sentences with citations (what a reader of response files
    hands the store: :func:`store.responses.add_responses`).

    A response is named by its run and turn (one response per run and turn, as everywhere in the store);
    a file's responses without a run of their own (the iKAT 2025 topics' responses) get a run name from
    their reader. ``text`` None: the sentences joined by single spaces. ``citations``: passages the
    response cites as a whole rather than sentence by sentence (the iKAT 2025 topics), stored as
    sentence 0. ``line``: where the response is in its file, for messages.
    """

    run: str
    turn_id: str
    sentences: tuple[CitedSentence, ...]
    text: str | None = None
    citations: tuple[str, ...] = ()
    line: int | None = None

    @property
    def full_text(self) -> str:
        return self.text if self.text is not None else " ".join(s.text for s in self.sentences)

    def spans(self) -> list[tuple[int, int]]:
        """Each sentence's (start, end) in :attr:`full_text`: the given offsets, checked, or the first place
        at or after the previous sentence's end where the sentence's text occurs. Raises
        :class:`~assess.errors.InvalidSpan` naming the sentence when it is not there."""
        text, out, cursor = self.full_text, [], 0
        for n, sentence in enumerate(self.sentences, start=1):
            if not sentence.text.strip():
                raise InvalidSpan(f"sentence {n} is empty")
            if sentence.start is None or sentence.end is None:
                start = text.find(sentence.text, cursor)
                if start < 0:
                    raise InvalidSpan(
                        f"sentence {n} ({sentence.text[:40]!r}) is not in the response's text after sentence {n - 1}"
                    )
                span = NuggetSpan(start, start + len(sentence.text), sentence.text)
            else:
                span = NuggetSpan(sentence.start, sentence.end, sentence.text)
                try:
                    span.check(text)
                except InvalidSpan as e:
                    raise InvalidSpan(f"sentence {n}: {e}") from None
            out.append((span.start, span.end))
            cursor = span.end
        return out


class NuggetSpan(NamedTuple):
    """A nugget's place in its text: code-point offsets, ``0 <= start < end <= len(text)``, and the exact text there."""

    start: int
    end: int
    text: str

    @classmethod
    def of(cls, source: str, start: int, end: int) -> NuggetSpan:
        """The span ``source[start:end]``, checked."""
        if isinstance(start, bool) or isinstance(end, bool) or not (0 <= start < end <= len(source)):
            raise InvalidSpan(f"span {start}:{end} does not lie inside a text of {len(source)} characters")
        return cls(start, end, source[start:end])

    def check(self, source: str) -> None:
        """Raise :class:`InvalidSpan` unless the span lies inside ``source`` and its text is what is there."""
        if not (0 <= self.start < self.end <= len(source)) or source[self.start : self.end] != self.text:
            raise InvalidSpan(f"span {self.start}:{self.end} does not match its text {self.text[:40]!r}")
