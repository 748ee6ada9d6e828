"""Crowd studies in the store: creating a study from stored responses and nuggets, giving batches to
workers, recording answers, progress, and writing the aggregated labels as a label source.

The worker page calls only :func:`get_study`, :func:`bind`, :func:`enter`, :func:`consent`, :func:`screen`
and :func:`answer`; they read the study's own tables plus the task content (turns, responses, gold
nugget texts) and never a label table, so nothing another worker, an assessor or an LLM said can
reach a worker's browser. Known answers are read on that path only inside :func:`enter`'s count
of a batch's slots (which completed assignments QC keeps), which returns a batch id, never them.
Every answer is one transaction, idempotent per (assignment, item): a worker has at most one
assignment per batch and a regular item sits in one batch, so a regular item is answered at most
once per worker.

The package holds one concern a module: ``studies`` (creating and reading studies), ``batches`` (which batch a
worker gets: the slot count under the QC rule), ``answering`` (consent, screen, answer), ``bindings`` (a worker id
bound to a browser), ``reports`` (what organizers read), ``aggregates`` (the crowd label source) and ``imported``
(crowd NtR files as studies). Every name is importable from ``store.crowd``.
"""

from __future__ import annotations

from store.crowd.aggregates import write_aggregate
from store.crowd.answering import AnswerResult, Screen, answer, consent, screen
from store.crowd.batches import Assignment, enter, holding
from store.crowd.bindings import Binding, bind, check_binding, release
from store.crowd.imported import nugget_ids, study_state, write_imported_study
from store.crowd.reports import (
    aggregated_rows,
    answers,
    has_assignments,
    machine_workers,
    ntr_labels_by_text,
    progress,
    raw_rows,
    report,
    study_items,
)
from store.crowd.studies import (
    Study,
    create_demo_study,
    create_study,
    get_study,
    list_studies,
    set_decision,
    set_status,
)

__all__ = [
    "Study",
    "Assignment",
    "Screen",
    "AnswerResult",
    "get_study",
    "list_studies",
    "create_study",
    "create_demo_study",
    "set_status",
    "set_decision",
    "holding",
    "enter",
    "consent",
    "screen",
    "answer",
    "Binding",
    "bind",
    "check_binding",
    "release",
    "answers",
    "study_items",
    "progress",
    "report",
    "aggregated_rows",
    "has_assignments",
    "machine_workers",
    "ntr_labels_by_text",
    "raw_rows",
    "write_aggregate",
    "nugget_ids",
    "study_state",
    "write_imported_study",
]
