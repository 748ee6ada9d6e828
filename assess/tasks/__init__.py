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

The registry itself is this module (the registry's functions read :data:`LABEL_KINDS` here, so a test may patch
one entry in); what its entries are built from lives beside it: the closed vocabularies (``vocabulary``), the
value scales (``scales``), the item-key codec (``keys``), the records passed between layers (``records``) and
the source names (``sources``). Every name is importable from ``assess.tasks``.

Pure logic: no store, no Streamlit, no LLM client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from assess.errors import AssessError
from assess.tasks.keys import (
    ItemKey,
)
from assess.tasks.records import (
    NOTHING_SHOWN,
    CitedResponse,
    CitedSentence,
    Label,
    NuggetSpan,
    Passage,
    Shown,
    TurnContext,
)
from assess.tasks.scales import (
    BATTLE_OUTCOME,
    BATTLE_WINNER_NAMES,
    BATTLE_WINNERS,
    CITATION_CONTRADICTS,
    CITATION_SUPPORT,
    CITATION_SUPPORT_WITHOUT_CONTRADICTS,
    GRADES,
    IMPORTANCE,
    MATCH,
    MATCH_SUPPORT,
    NUGGET_RELEVANCE,
    PTKB_KEYS,
    PTKB_RELEVANCE,
    RESPONSE_VALUE,
    SUPPORT,
    Scale,
    consensus,
)
from assess.tasks.sources import (
    DEFAULT_SOURCES,
    NLI_SOURCE_PREFIXES,
    RESERVED_SOURCE_PREFIXES,
    RESERVED_SOURCES,
    SourceKind,
    reserved_source,
    source_kind,
)
from assess.tasks.vocabulary import (
    LABELLED_STATUSES,
    ORGANIZER_ACTIONS,
    STUDY_MODES,
    DuplicateDecision,
    JobStatus,
    JudgingMode,
    ParseStatus,
    Role,
    Task,
)

# The registry's building blocks live in the submodules; every name stays importable from assess.tasks.
__all__ = [
    "ItemKey",
    "Label",
    "Shown",
    "NOTHING_SHOWN",
    "Passage",
    "TurnContext",
    "CitedSentence",
    "CitedResponse",
    "NuggetSpan",
    "Scale",
    "consensus",
    "GRADES",
    "PTKB_RELEVANCE",
    "PTKB_KEYS",
    "MATCH",
    "RESPONSE_VALUE",
    "NUGGET_RELEVANCE",
    "SUPPORT",
    "MATCH_SUPPORT",
    "IMPORTANCE",
    "CITATION_CONTRADICTS",
    "CITATION_SUPPORT",
    "CITATION_SUPPORT_WITHOUT_CONTRADICTS",
    "BATTLE_OUTCOME",
    "BATTLE_WINNERS",
    "BATTLE_WINNER_NAMES",
    "DEFAULT_SOURCES",
    "RESERVED_SOURCES",
    "RESERVED_SOURCE_PREFIXES",
    "reserved_source",
    "SourceKind",
    "NLI_SOURCE_PREFIXES",
    "source_kind",
    "Task",
    "JudgingMode",
    "Role",
    "ORGANIZER_ACTIONS",
    "STUDY_MODES",
    "JobStatus",
    "ParseStatus",
    "LABELLED_STATUSES",
    "DuplicateDecision",
    "ItemSource",
    "MenuPage",
    "LabelKind",
    "LABEL_KINDS",
    "PrejudgeTask",
    "PREJUDGE_TASKS",
    "PREJUDGMENT_TASKS",
    "label_kind",
    "kind_of_table",
    "AnnotationKind",
    "ANNOTATION_KINDS",
    "EXPORT_TABLES",
    "UNSOURCED_TABLES",
    "NUGGETIZER_FILE_KINDS",
    "RESPONSE_FILE_KINDS",
    "IMPORT_FILE_KINDS",
    "REPLACE_KINDS",
    "TOPIC_KINDS",
    "EXPORT_FILE_KINDS",
]


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

# The names alone, for the command line's parser: the entries that read and write these files live in
# assess/services (loading.IMPORT_KINDS, exports.EXPORTERS), which load the store; `--help` must not.
IMPORT_FILE_KINDS: tuple[str, ...] = (
    "topics",
    "qrels",
    "ptkb-qrels",
    "run",
    "passages",
    "nuggets",
    "responses",
    "rag-topics",
    *RESPONSE_FILE_KINDS,
    "ntr-labels",
    *NUGGETIZER_FILE_KINDS,
)
"""The kinds of file ``import`` (and the Import page) reads, in the order they are offered."""

REPLACE_KINDS: tuple[str, ...] = ("ikat-responses", "rag-answers", "nuggets", "responses", "passages")
"""The imports that may replace stored texts when asked (``--replace``), in the order messages name them."""

TOPIC_KINDS: tuple[str, ...] = ("topics", "rag-topics")
"""The imports that bring conversations of their own (every other kind refers to stored turns)."""

EXPORT_FILE_KINDS: tuple[str, ...] = (
    "qrels",
    "ptkb-qrels",
    "nuggets",
    "table",
    *RESPONSE_FILE_KINDS,
    *NUGGETIZER_FILE_KINDS,
    "leaderboard",
)
"""The kinds ``export`` writes, in the order they are offered."""
