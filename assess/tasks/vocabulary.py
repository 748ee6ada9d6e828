"""The closed vocabularies: tasks, judging modes, roles, job and parse statuses, duplicate decisions."""

from __future__ import annotations

from enum import StrEnum


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


class DuplicateDecision(StrEnum):
    """An assessor's decision on a suggested pair of gold nuggets (a < b by id)."""

    SAME = "same"
    A_COVERS_B = "a_covers_b"
    B_COVERS_A = "b_covers_a"
    DISTINCT = "distinct"
