"""The task vocabulary: every kind of label the workbench stores, declared once.

A :class:`LabelKind` says, for one task, which table holds its labels, which columns name an
item, which column holds the value and on which :class:`Scale`, how the history triggers spell
the item, which LLM prompt judges it and how it is exported. The store, the pages, the prompts,
the exports and the crowd rules read this registry instead of keeping maps of their own, so a new
label kind is one entry here, one migration and one page (``docs/architecture.md`` walks through
an example).

The history triggers of the migrations spell items with the registry's :class:`ItemKey` (the one codec
the store and the services read items with); ``tests/store/test_migrations.py`` pins every released script, so a
change here that would alter a shipped migration fails there, and checks that the registry and the schema agree.

Pure logic: no store, no Streamlit, no LLM client.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import NamedTuple

from assess.errors import AssessError, InvalidSpan


class Task(StrEnum):
    """A kind of judgment; the value is the name used on the command line and in the history."""

    PASSAGE = "passage"  # passage relevance for a turn, 0-4
    PTKB = "ptkb"  # relevance of a PTKB statement to a turn
    NTR = "ntr"  # does a response contain a nugget (CONE-RAG NtR)
    RESPONSE = "response"  # a criterion of a generated response (iKAT 2023), -1..4
    NTR_SUPPORT = "ntr-support"  # graded NtR: how far a response supports a nugget (TREC RAG), 0-2
    IMPORTANCE = "importance"  # a gold nugget's importance: vital or okay (TREC RAG AutoNuggetizer)
    CITATION = "citation"  # does a cited passage support a sentence of a generated response, -2..2
    BATTLE = "battle"  # two runs' answers to a topic side by side: which is better (pairwise)
    BANK_MATCH = "bank-match"  # does a run's response contain an answer of a RAGTIME nugget bank, 0/1


class JudgingMode(StrEnum):
    """How a label came about: the study's judging modes plus the modes of labels not typed by an assessor."""

    BLIND = "blind"  # no other source's label is ever shown
    REVEAL = "reveal"  # blind, then other sources are shown after one's own label is written
    SHOWN = "shown"  # other sources are shown before judging
    IMPORT = "import"  # read from a file
    ADJUDICATION = "adjudication"  # an adjudicator's decision between two sources
    LLM = "llm"  # a parsed LLM answer
    CROWD = "crowd"  # a crowd study's aggregate


class Role(StrEnum):
    """What a signed-in account may do (docs/accounts.md). Crowd workers have no role: a study link only."""

    ASSESSOR = "assessor"  # judges their own queue
    ADJUDICATOR = "adjudicator"  # an assessor who may also adjudicate disagreements
    ORGANIZER = "organizer"  # everything: imports, assignments, adjudication, judging mode, accounts


ORGANIZER_ACTIONS: tuple[str, ...] = (
    "account",
    "assignment",
    "adjudication",
    "judging-mode",
    "import",
    "replace",
    "curation",
    "drop-demo",
)
"""The ``label_table`` values of the history rows that record who did an organizer's action (the row's
``source`` is the person, ``item`` what was acted on; ``replace``: a stored text an import rewrote with
``--replace``, old and new content with the labels on the item; ``curation``: a duplicate decision in a
nugget set that is not the actor's own, item ``'duplicate SET TURN A B'``; ``drop-demo``: the embedded demo
removed before real data came in, the rows removed per table)."""


STUDY_MODES: tuple[JudgingMode, ...] = (JudgingMode.BLIND, JudgingMode.REVEAL, JudgingMode.SHOWN)
"""The judging modes an organizer can choose for a study (the rest describe labels' origins)."""


class JobStatus(StrEnum):
    """The life of an LLM pre-judging job."""

    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class ParseStatus(StrEnum):
    """What became of one LLM answer; only ``ok`` and ``repaired`` ever become labels."""

    OK = "ok"
    REPAIRED = "repaired"
    UNPARSEABLE = "unparseable"
    ERROR = "error"


LABELLED_STATUSES: tuple[ParseStatus, ...] = (ParseStatus.OK, ParseStatus.REPAIRED)


# ------------------------------------------------------------------------------------------- scales


@dataclass(frozen=True)
class Scale:
    """An ordered integer scale with a short name (and optionally a definition) for each value.

    The same mapping serves display (key captions, rubric), validation (:meth:`check`), prompts
    and exports. ``missing`` names what a NULL value means, when the task allows one.
    """

    names: Mapping[int, str]
    definitions: Mapping[int, str] = field(default_factory=dict)
    missing: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))
        object.__setattr__(self, "definitions", MappingProxyType(dict(self.definitions)))

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(sorted(self.names))

    @property
    def low(self) -> int:
        return min(self.names)

    @property
    def high(self) -> int:
        return max(self.names)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value in self.names

    def check(self, value: object, *, what: str = "value") -> int | None:
        """Return ``value`` when it is on the scale (or None where the scale allows a missing value); else raise.

        Only true integers pass: ``True``, ``2.0`` and ``"2"`` are refused, never coerced.
        """
        if value is None and self.missing is not None:
            return None
        if value not in self:
            allowed = ", ".join(str(v) for v in self.values)
            extra = f" or none ({self.missing})" if self.missing else ""
            raise AssessError(f"{what} must be one of {allowed}{extra}, not {value!r}")
        return value  # type: ignore[return-value]

    def label(self, value: int | None) -> str:
        """``"3 · Highly meets"``; the missing value's name for None."""
        if value is None:
            return self.missing or "none"
        return f"{value} · {self.names[value]}"


def consensus(values: Sequence[int]) -> int:
    """The label K answers to one input give (an LLM judge asked K times): the most frequent value; on a tie,
    the mean of all K values rounded half up (as the crowd's 'mean' tie rule, CAsT 2022). Every value counts,
    -1 included (on the citation scale it is an answer, "irrelevant", not a missing one)."""
    if not values:
        raise AssessError("a consensus needs at least one value")
    counts = Counter(values)
    top = max(counts.values())
    leaders = [v for v, c in counts.items() if c == top]
    if len(leaders) == 1:
        return leaders[0]
    return math.floor(sum(values) / len(values) + 0.5)


GRADES = Scale(
    names={
        4: "Fully meets",
        3: "Highly meets",
        2: "Moderately meets",
        1: "Slightly meets",
        0: "Fails to meet",
    },
    definitions={
        4: "the passage is about the user's need in this turn and answers it completely; nothing important is missing",
        3: "the passage answers the need well, with a detail missing or a little unrelated material around it",
        2: "the passage answers part of the need, or answers it only with effort or indirectly",
        1: "the passage is on the topic of the turn but does not answer the need; marginal help at best",
        0: "the passage does not help with this turn: off topic, a wrong sense, or empty of content",
    },
    missing="cannot judge",
)
"""The iKAT / CAsT passage relevance scale (names as in the iKAT guidelines, definitions in our words)."""

PTKB_RELEVANCE = Scale(
    names={
        0: "not relevant",
        1: "relevant",
        2: "relevant (graded 2)",
        3: "relevant (graded 3)",
        4: "relevant (graded 4)",
    },
)
"""PTKB statement relevance: assessors give 0 or 1; imported PTKB qrels may carry grades up to 4."""

PTKB_KEYS = Scale(names={0: "not relevant", 1: "relevant"})
"""The two values an assessor gives a PTKB statement by key."""

MATCH = Scale(names={0: "no match", 1: "match"})
"""NtR: the response contains the nugget (1) or not (0)."""

RESPONSE_VALUE = Scale(
    names={-1: "unable to judge", 0: "0", 1: "1", 2: "2", 3: "3", 4: "4"},
)
"""iKAT 2023 response criteria (relevance, completeness, naturalness, conciseness, groundedness); -1 unable to judge."""

NUGGET_RELEVANCE = Scale(names={0: "0", 1: "1", 2: "2", 3: "3", 4: "4"})
"""A gold nugget's relevance grade, when its file gives one."""

SUPPORT = Scale(
    names={2: "support", 1: "partial support", 0: "no support"},
    definitions={
        2: "the response states the nugget's information, fully",
        1: "the response states part of the nugget's information, or states it only vaguely",
        0: "the response does not state the nugget's information",
    },
)
"""Graded NtR (TREC 2024/2025 RAG: support, partial support, no support), stored in ``ntr_support_labels``."""

MATCH_SUPPORT: Mapping[int, int] = MappingProxyType({1: 2, 0: 0})
"""How a yes/no NtR label (:data:`MATCH`) reads on the :data:`SUPPORT` scale: yes = support, no = no support.
Stored yes/no labels are read this way, never rewritten (:func:`store.labels.ntr_support`)."""

IMPORTANCE = Scale(
    names={1: "vital", 0: "okay"},
    definitions={
        1: "a good answer to the turn must contain this nugget",
        0: "a good answer may contain this nugget; it is useful but not required",
    },
)
"""A gold nugget's importance (TREC RAG AutoNuggetizer: vital / okay)."""

CITATION_CONTRADICTS = -2
"""The citation label "contradicts": the cited passage states the opposite of what the sentence states (TREC
BioGen 2025's contradicting citations); stored since the migration in store/schema/citation_contradicts.py."""

CITATION_SUPPORT = Scale(
    names={
        2: "fully supported",
        1: "partially supported",
        0: "not supported",
        -1: "citation irrelevant",
        CITATION_CONTRADICTS: "contradicts",
    },
    definitions={
        2: "the cited passage supports everything the sentence states",
        1: "the cited passage supports part of what the sentence states",
        0: "the cited passage is about the sentence's topic but does not support what it states",
        -1: "the cited passage has nothing to do with the sentence",
        CITATION_CONTRADICTS: "the cited passage states the opposite of what the sentence states",
    },
    missing="cannot judge",
)
"""Citation support of one response sentence by one passage it cites. Codes: 2 fully, 1 partially, 0 not
supported, -1 irrelevant citation, -2 contradicts (below 0 so that "supported" is always ``value >= 1``: a
contradicting citation never supports); None (stored NULL, schema 14): the assessor cannot judge it (e.g. the
passage has no text), left out of every citation measure."""

CITATION_SUPPORT_WITHOUT_CONTRADICTS = Scale(
    names={v: n for v, n in CITATION_SUPPORT.names.items() if v != CITATION_CONTRADICTS},
    definitions={v: d for v, d in CITATION_SUPPORT.definitions.items() if v != CITATION_CONTRADICTS},
    missing=CITATION_SUPPORT.missing,
)
"""The citation scale before "contradicts": the answers the ``citation-support`` prompt offers (its version and
answers unchanged); the ``contradicts`` prompt variant offers all of :data:`CITATION_SUPPORT`."""


BATTLE_OUTCOME = Scale(
    names={1: "A better", 2: "B better", 0: "tie", -1: "both bad"},
    definitions={
        1: "the answer of run A (shown on the left) is the better one",
        2: "the answer of run B (shown on the right) is the better one",
        0: "the two answers are about as good",
        -1: "neither answer is acceptable (left out of the strengths)",
    },
)
"""A battle's outcome, stored as an integer code: 1 A (the left run) better, 2 B (the right run) better,
0 tie, -1 both bad (below 0, as the citation scale's 'irrelevant': never a preference)."""

BATTLE_WINNERS: Mapping[str, int] = MappingProxyType({"a": 1, "b": 2, "tie": 0, "both_bad": -1})
"""The outcome's spelling in battle files and on the command line (``winner``) and its stored code."""

BATTLE_WINNER_NAMES: Mapping[int, str] = MappingProxyType({code: name for name, code in BATTLE_WINNERS.items()})


# ------------------------------------------------------------------------------------------- item keys


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


# ------------------------------------------------------------------------------------------- label kinds


@dataclass(frozen=True)
class ItemSource:
    """Where a kind's items come from: the rows of a stored ``table``, one item per distinct row of its
    ``columns`` (the table's columns that give the kind's item columns, in order; None: columns of the
    same names). The store reads it and nothing else: :func:`store.labels.items` lists the items,
    :func:`store.labels.check_item` (on every label write: ``save``, ``save_many``, ``save_changed_many`` and the
    imports) refuses a label about anything else.

    ``unknown``: what that refusal says, a format string over the item columns' names (None:
    ``unknown <item name> '<item>'``)."""

    table: str
    columns: tuple[str, ...] | None = None
    unknown: str | None = None


@dataclass(frozen=True)
class MenuPage:
    """A page of the app's menu: its script, title, icon and address, and who sees it listed (``role``:
    assessor pages under "Assess" for everyone, organizer pages under "Organize"). A label kind names
    its judging page in the registry (:attr:`LabelKind.page`); ``assess/ui/frame.py`` lists it from there."""

    script: str  # the page's script, from the repository root: "pages/citations.py"
    title: str
    icon: str
    url_path: str
    role: Role = Role.ASSESSOR

    def __post_init__(self) -> None:
        if self.role not in (Role.ASSESSOR, Role.ORGANIZER):
            raise ValueError(f"a menu page is an assessor's or an organizer's page, not an {self.role}'s")


@dataclass(frozen=True)
class LabelKind:
    """One task's labels: where they live, what names an item, what the value means, how they leave.

    ``item_columns`` are the columns that, with ``source``, key a label (the turn first); ``key`` is how
    an item is spelled as text (:class:`ItemKey`: ``integer_columns`` hold integers, ``spaced_column``
    may hold spaces, by default the last).
    """

    task: Task
    table: str
    item_columns: tuple[str, ...]
    value_column: str
    scale: Scale
    item_name: str  # what one item is called in messages ("passage", "statement", ...)
    prompt: str | None  # name of the LLM prompt that judges this task (assess.llm.prompts), if any
    export: str  # how the labels are written out
    description: str
    unique_columns: tuple[str, ...] | None = None  # the table's primary key, when it is not source + item
    integer_columns: tuple[str, ...] = ()
    spaced_column: str | None = None
    missing_column: str | None = None  # a table export's 0/1 column after the value: 1 for a stored missing value
    # Values added to the scale after it shipped: agreement and consistency measures count them only where a
    # label takes one, so that their figures for stores without one stay what they were (:meth:`values_in_use`).
    later_values: tuple[int, ...] = ()
    item_source: ItemSource | None = None  # where its items come from (None: the kind's own store code knows)
    page: MenuPage | None = None  # its judging page, listed in the app's menu
    key: ItemKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", ItemKey(self.item_columns, self.integer_columns, self.spaced_column))
        if self.item_source is not None and len(self.source_columns) != len(self.item_columns):
            raise ValueError(f"the item source of {self.task} gives {self.source_columns}, not {self.item_columns}")

    @property
    def source_columns(self) -> tuple[str, ...]:
        """The columns of :attr:`item_source`'s table that give the item columns, in order."""
        if self.item_source is None:
            return ()
        return self.item_source.columns or self.item_columns

    def unknown_item(self, item: Sequence[object]) -> str:
        """What a refused label about ``item`` (no item of :attr:`item_source`) says."""
        if self.item_source is not None and self.item_source.unknown is not None:
            return self.item_source.unknown.format(**dict(zip(self.item_columns, item, strict=True)))
        return f"unknown {self.item_name} {' '.join(str(p) for p in item)!r}"

    @property
    def key_columns(self) -> tuple[str, ...]:
        return ("source", *self.item_columns)

    @property
    def conflict_columns(self) -> tuple[str, ...]:
        """The columns of the table's primary key (an upsert's conflict target)."""
        return self.unique_columns or self.key_columns

    def history_item(self, *parts: object) -> str:
        """The ``item`` string the history triggers write for a label keyed by ``parts``."""
        if len(parts) != len(self.item_columns):
            raise AssessError(f"a {self.task} label is keyed by {', '.join(self.item_columns)}, got {len(parts)} parts")
        return self.key.encode(parts)

    def values_in_use(self, present: Iterable[object] = ()) -> tuple[int, ...]:
        """The scale as agreement and consistency measures read it (their confusion rows, kappa weights, alpha
        domain): every value, a :attr:`later_values` one only when one of the ``present`` labels takes it."""
        seen = set(present) & set(self.later_values)
        return tuple(v for v in self.scale.values if v not in self.later_values or v in seen)

    def check(self, value: object) -> int | None:
        """Validate a value for this task (see :meth:`Scale.check`)."""
        return self.scale.check(value, what=f"a {self.task} label")


LABEL_KINDS: Mapping[Task, LabelKind] = MappingProxyType(
    {
        Task.PASSAGE: LabelKind(
            task=Task.PASSAGE,
            table="passage_labels",
            item_columns=("turn_id", "passage_id"),
            value_column="grade",
            scale=GRADES,
            item_name="passage",
            prompt="passage",
            export="TREC qrels: turn Q0 passage grade (cannot-judge labels are left out)",
            description="relevance of a pooled passage to a turn, 0-4",
            page=MenuPage("pages/judge.py", "Judge passages", "📝", "judge"),
        ),
        Task.PTKB: LabelKind(
            task=Task.PTKB,
            table="ptkb_labels",
            item_columns=("turn_id", "statement_id"),
            value_column="relevant",
            scale=PTKB_RELEVANCE,
            item_name="statement",
            prompt="ptkb",
            export="PTKB qrels: turn Q0 statement relevance",
            description="relevance of a PTKB statement to a turn",
            page=MenuPage("pages/ptkb.py", "PTKB relevance", "👤", "ptkb"),
        ),
        Task.NTR: LabelKind(
            task=Task.NTR,
            table="ntr_labels",
            item_columns=("turn_id", "nugget_id", "run"),
            value_column="match",
            scale=MATCH,
            item_name="nugget and response",
            prompt="ntr",
            export="CONE-RAG NtR labels: {nugget_id: 0/1} per run and turn",
            description="does a run's response for a turn contain a gold nugget",
            unique_columns=("source", "nugget_id", "run"),
            integer_columns=("nugget_id",),
            page=MenuPage("pages/ntr.py", "Nugget matching (NtR)", "✅", "ntr"),
        ),
        Task.RESPONSE: LabelKind(
            task=Task.RESPONSE,
            table="response_labels",
            item_columns=("turn_id", "run", "criterion"),
            value_column="value",
            scale=RESPONSE_VALUE,
            item_name="response criterion",
            prompt=None,
            export="iKAT 2023 response judgments (JSON)",
            description="a criterion of a run's response for a turn, -1 (unable) or 0-4",
            spaced_column="run",
        ),
        Task.NTR_SUPPORT: LabelKind(
            task=Task.NTR_SUPPORT,
            table="ntr_support_labels",
            item_columns=("turn_id", "nugget_id", "run"),
            value_column="support",
            scale=SUPPORT,
            item_name="nugget and response",
            prompt="ntr-support",
            export="nuggetizer assignments: support / partial_support / not_support per nugget, run and turn",
            description="how far a run's response for a turn supports a gold nugget: 2 support, 1 partial, 0 none",
            unique_columns=("source", "nugget_id", "run"),
            integer_columns=("nugget_id",),
        ),
        Task.IMPORTANCE: LabelKind(
            task=Task.IMPORTANCE,
            table="nugget_importance_labels",
            item_columns=("turn_id", "nugget_id"),
            value_column="importance",
            scale=IMPORTANCE,
            item_name="nugget",
            prompt="importance",
            export="nuggetizer nuggets: importance vital / okay per nugget",
            description="a gold nugget's importance: 1 vital, 0 okay",
            unique_columns=("source", "nugget_id"),
            integer_columns=("nugget_id",),
        ),
        Task.CITATION: LabelKind(
            task=Task.CITATION,
            table="citation_labels",
            item_columns=("turn_id", "run", "sentence", "passage_id"),
            value_column="support",
            scale=CITATION_SUPPORT,
            item_name="cited passage",
            prompt="citation",
            export="JSON: {run: {turn: {sentence: {passage: support}}}}",
            description="does a passage a response sentence cites support it: 2 fully, 1 partially, 0 not, -1 irrelevant, "
            "-2 contradicts",
            integer_columns=("sentence",),
            spaced_column="run",
            missing_column="cannot_judge",
            later_values=(CITATION_CONTRADICTS,),
            item_source=ItemSource(
                table="response_citations",
                unknown="sentence {sentence} of run {run!r}'s response to turn {turn_id} does not cite {passage_id}",
            ),
            page=MenuPage("pages/citations.py", "Citation support", "📎", "citations"),
        ),
        Task.BATTLE: LabelKind(
            task=Task.BATTLE,
            table="battles",
            item_columns=("turn_id", "run_a", "run_b", "occurrence"),
            value_column="outcome",
            scale=BATTLE_OUTCOME,
            item_name="battle",
            prompt="battle",
            export="JSONL: {topic_id, run_a, run_b, winner: a | b | tie | both_bad} (run_a shown on the left)",
            description="two runs' answers to a topic or turn side by side, run_a on the left: which is better",
            integer_columns=("occurrence",),
            spaced_column="run_b",
            page=MenuPage("pages/battles.py", "Battles", "⚔", "battles"),
        ),
        Task.BANK_MATCH: LabelKind(
            task=Task.BANK_MATCH,
            table="bank_matches",
            item_columns=("turn_id", "run", "nugget", "answer"),
            value_column="contains",
            scale=MATCH,
            item_name="bank answer and response",
            prompt="bank-match",
            export="JSONL: {topic_id, run_id, nugget, answer, contains, sentences} (nuggets bank import-matches)",
            description="does a run's response to a topic contain an answer of the topic's nugget bank (with the sentences stating it)",
            integer_columns=("nugget", "answer"),
            spaced_column="run",
            page=MenuPage("pages/banks.py", "Nugget banks", "🏦", "banks"),
        ),
    }
)
"""Every label kind. Nugget decisions (spans, duplicates, gold responses) have their own tables and history kinds."""


@dataclass(frozen=True)
class PrejudgeTask:
    """A task ``prejudge`` runs: what one of its items is and what becomes of a parsed answer.

    The items themselves are read by :mod:`assess.services.jobs`, one reader per entry here."""

    name: str
    item: str  # what one item is, for people
    labels: bool  # a parsed answer becomes a label of the source (the task is a label kind)
    skipped: str | None = None  # the items left out because they have no text, for people
    nuggets: bool = False  # the items are gold nuggets of one nugget source (--nuggets, --dedup)


PREJUDGE_TASKS: Mapping[str, PrejudgeTask] = MappingProxyType(
    {
        t.name: t
        for t in (
            PrejudgeTask("passage", "a pooled passage of a turn", True, skipped="passages without text"),
            PrejudgeTask("ptkb", "a PTKB statement of a turn", True),
            PrejudgeTask("ntr", "a gold nugget and a run's response", True, nuggets=True),
            PrejudgeTask("ntr-support", "a gold nugget and a run's response", True, nuggets=True),
            PrejudgeTask("importance", "a gold nugget", True, nuggets=True),
            PrejudgeTask(
                "citation", "a passage a response sentence cites", True, skipped="cited passages without text"
            ),
            PrejudgeTask("battle", "two runs' responses to a turn side by side, in both orders", True),
            PrejudgeTask("bank-match", "an answer of a nugget bank and a run's response to its topic", True),
            PrejudgeTask("nuggets", "a passage to extract gold nugget spans from", False, "passages without text"),
            PrejudgeTask(
                "response-nuggets", "a run's response to extract nuggets from (CONE-RAG NtN, step one)", False
            ),
            PrejudgeTask("aepd", "a run's response to find AEPD aspects in", False),
        )
    }
)
"""Every task ``prejudge`` runs, in the order the command offers them: the label kinds a model can judge, then
the annotations a model proposes."""

PREJUDGMENT_TASKS: tuple[str, ...] = (
    *(t.value for t in Task),
    *(name for name, t in PREJUDGE_TASKS.items() if not t.labels),  # nugget spans, response nuggets, AEPD aspects
    "ntn",  # a gold nugget matched against a response's nuggets (CONE-RAG NtN, step two); item as NtR
)
"""The tasks an LLM (or NLI) outcome in ``prejudgments`` may be about: every label kind plus the annotations
a model proposes. The schema's CHECK lists the same names (a test checks that they agree)."""


def label_kind(task: str | Task) -> LabelKind:
    """The registry entry of ``task``; a clear error naming the known tasks otherwise."""
    found = LABEL_KINDS.get(task) if isinstance(task, str) else None  # a Task is found by its value too
    if found is None:
        known = ", ".join(t.value for t in LABEL_KINDS)
        raise AssessError(f"unknown task {task!r}; choose one of {known}")
    return found


def kind_of_table(table: str) -> LabelKind:
    """The registry entry whose labels live in ``table``."""
    for kind in LABEL_KINDS.values():
        if kind.table == table:
            return kind
    raise AssessError(f"{table!r} is not a label table")


# ------------------------------------------------------------------------------------------- annotations


class DuplicateDecision(StrEnum):
    """An assessor's decision on a suggested pair of gold nuggets (a < b by id)."""

    SAME = "same"
    A_COVERS_B = "a_covers_b"
    B_COVERS_A = "b_covers_a"
    DISTINCT = "distinct"


@dataclass(frozen=True)
class AnnotationKind:
    """A judgment that is not a single value on a scale: its table, item key, value and history kind.

    Nugget decisions (spans, duplicates, gold responses) and crowd answers are declared here, beside
    the label kinds, so every kind of human input the workbench stores has one entry.
    """

    name: str  # the history's ``label_table`` (None: not in the history)
    table: str
    item_columns: tuple[str, ...]
    value: str  # what the value is
    history: bool  # are its changes in label_history?
    description: str
    key: ItemKey | None = None  # how the history triggers spell an item (None: not in the history)


ANNOTATION_KINDS: Mapping[str, AnnotationKind] = MappingProxyType(
    {
        "nugget": AnnotationKind(
            name="nugget",
            table="nuggets",
            item_columns=("source", "turn_id", "key"),
            value="text, relevance (NUGGET_RELEVANCE) and span (passage_id, start_char, end_char)",
            history=True,
            description="a gold nugget, as an exact span of a passage or typed text",
            key=ItemKey(("turn_id", "key")),
        ),
        "nugget-duplicate": AnnotationKind(
            name="nugget-duplicate",
            table="nugget_duplicates",
            item_columns=("turn_id", "nugget_a", "nugget_b"),
            value="decision: " + ", ".join(d.value for d in DuplicateDecision),
            history=True,
            description="whether two gold nuggets of a turn say the same thing",
            key=ItemKey(("turn_id", "nugget_a", "nugget_b"), integers=("nugget_a", "nugget_b")),
        ),
        "gold-response": AnnotationKind(
            name="gold-response",
            table="gold_responses",
            item_columns=("source", "turn_id"),
            value="text and the nuggets it uses",
            history=True,
            description="an assessor's reference response for a turn",
            key=ItemKey(("turn_id",)),
        ),
        "crowd-answer": AnnotationKind(
            name="crowd-answer",
            table="crowd_answers",
            item_columns=("assignment_id", "item_id"),
            value="the study task's scale (MATCH for NtR, RESPONSE_VALUE for response criteria)",
            history=False,  # kept as first given (a trigger refuses updates), so no history is needed
            description="one crowd worker's answer to one item of a study; aggregated into a label source",
        ),
    }
)


# ------------------------------------------------------------------------------------------- records


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


# ------------------------------------------------------------------------------------------- tables

_LABEL_TABLES: tuple[str, ...] = tuple(kind.table for kind in LABEL_KINDS.values())

EXPORT_TABLES: tuple[str, ...] = (
    *_LABEL_TABLES[:2],  # passage_labels, ptkb_labels
    "nuggets",
    *_LABEL_TABLES[2:4],  # ntr_labels, response_labels
    "gold_responses",
    *_LABEL_TABLES[4:],  # ntr_support_labels, nugget_importance_labels, citation_labels and any later kind's
    "label_history",
    "pool",
    "rankings",
    "responses",
    "response_sentences",
    "response_citations",
    "sources",
    "assignments",
)
"""The tables ``export table`` writes out: every label kind's table (from the registry, so a new kind's is
exported without an edit here) among the other tables that hold labels or say where they came from (this
order is the command's ``--table`` choices)."""

UNSOURCED_TABLES: tuple[str, ...] = (
    "pool",
    "rankings",
    "responses",
    "response_sentences",
    "response_citations",
    "assignments",
)
"""Exportable tables without a label source column."""

NUGGETIZER_FILE_KINDS: tuple[str, ...] = ("nuggetizer-nuggets", "nuggetizer-assignments")
"""The import (and ``export``) kinds of the ``nuggetizer`` package's layouts (TREC RAG AutoNuggetizer): gold
nuggets with their importance, and graded NtR assignments of runs' answers (assess/services/nuggetizer_files.py)."""

RESPONSE_FILE_KINDS: tuple[str, ...] = ("ikat-responses", "rag-answers")
"""The import kinds of generated responses with citations (sentences and cited passages; also ``export``
kinds): the iKAT topics' responses and TREC RAG answer files (docs/responses.md)."""

DEFAULT_SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "qrels": "nist",
        "ptkb-qrels": "nist",
        "nuggets": "human",
        "ntr-labels": "crowd:mturk",
        "nuggetizer-nuggets": "human",
    }
)
"""The label source an imported file's labels go to when none is named."""

RESERVED_SOURCES: frozenset[str] = frozenset(
    {*DEFAULT_SOURCES.values(), "nist", "human", "gold", "adjudication", "organizers"}
)
"""Label source names the workbench itself writes to (default imports, adjudication, the topics' PTKB
provenance, gold nuggets): nobody can sign in under one of them, in any letter case."""

RESERVED_SOURCE_PREFIXES: tuple[str, ...] = ("crowd:", "llm:")
"""Prefixes of the crowd aggregates' and LLM judges' source names, reserved like :data:`RESERVED_SOURCES`."""


def reserved_source(name: str) -> bool:
    """True when ``name`` (compared case-insensitively) is one of the workbench's own source names."""
    folded = name.strip().casefold()
    return folded in RESERVED_SOURCES or folded.startswith(RESERVED_SOURCE_PREFIXES)


class SourceKind(StrEnum):
    """What gave a label source's labels. The value is the ``kind`` the sources table records, except for
    :attr:`NLI`: an NLI judge's source is recorded as ``llm`` (:attr:`stored`) and told apart by its name."""

    ASSESSOR = "assessor"  # a person judging in the app
    ORGANIZERS = "organizers"  # the organizers themselves (e.g. the topics' PTKB provenance)
    IMPORT = "import"  # labels read from a file: NIST's qrels, a crowd platform's export, ...
    ADJUDICATION = "adjudication"  # an adjudicator's decisions between two sources
    CROWD = "crowd"  # a crowd study's aggregate
    LLM = "llm"  # a chat model's parsed answers
    NLI = "nli"  # a local NLI model's entailment decisions

    @property
    def stored(self) -> str:
        """The ``kind`` the sources table records for a source of this kind (its CHECK knows no ``nli``)."""
        return SourceKind.LLM.value if self is SourceKind.NLI else self.value


NLI_SOURCE_PREFIXES: tuple[str, ...] = ("nli:", "nli-ntn:")
"""Prefixes of the names an NLI judge's labels get by default (``nuggets match --backend nli``)."""


def source_kind(name: str, stored: str | None = None) -> SourceKind:
    """The kind of the source ``name``: the one place a source's kind is decided.

    ``stored``: the kind the sources table records for it, which wins (an ``llm`` source whose name starts
    with an NLI prefix is :attr:`SourceKind.NLI`). Without it the name decides, and only a reserved spelling
    says anything (anyone may name an import or sign in as ``nli:x``): ``llm:…`` an LLM, ``crowd:…`` the crowd,
    ``adjudication…`` adjudication, ``organizers`` the organizers; any other name is an import.
    """
    if stored is not None:
        try:
            kind = SourceKind(stored)
        except ValueError:
            raise AssessError(f"{stored!r} is not a kind of label source") from None
        if kind is SourceKind.LLM and name.startswith(NLI_SOURCE_PREFIXES):
            return SourceKind.NLI
        return kind
    if name.startswith("llm:"):
        return SourceKind.LLM
    if name.startswith("crowd:"):
        return SourceKind.CROWD
    if name.startswith("adjudication"):
        return SourceKind.ADJUDICATION
    if name == "organizers":
        return SourceKind.ORGANIZERS
    return SourceKind.IMPORT
