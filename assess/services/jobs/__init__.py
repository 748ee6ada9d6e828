"""Pre-judging jobs: which items a task covers, what a run will cost, and running it resumably.

A run is planned first (:func:`plan`): every item the task covers is rendered with the task's
prompt and hashed; items the source already has an answer for (same model, prompt version and
input) are left out, answers another source got from the same model, prompt and input are copied
instead of asked again, and ``limit`` caps what is left. :func:`run` then asks the model with
bounded concurrency and stores each result in its own transaction the moment it arrives, so an
interrupted run loses nothing and the next run picks up exactly the items still missing.

Self-consistency: with ``samples=K`` the model is asked K times about each item (answers numbered 0..K-1,
each an outcome of its own, ``prejudgments.sample``); the label is their :func:`assess.tasks.consensus`
(the most frequent value, a tie by the mean rounded half up), recomputed by the store as each answer
arrives. The temperature is part of the cache key (an answer at 0.7 is not one at 0) and is sent with
every call; a run with a larger K asks only for the answers numbered from the old K on.

No Streamlit and no SQL here: the store functions live in :mod:`store.prejudgments` and :mod:`store.jobs`.

The package holds one concern a module: ``items`` (the item reader of every task: job kinds), ``planning`` (options,
the plan, the cost estimate), ``outcomes`` (the tally, replies and cached copies as stored), ``runner`` (the one job
runner: record, heartbeat, bounded calls, NLI batches) and ``reports`` (listings and captions). Every name is
importable from ``assess.services.jobs``.
"""

from __future__ import annotations

from assess.services.jobs.items import (
    BY_TURN,
    LABEL_TASKS,
    TASKS,
    Item,
    RawItem,
    chat_item,
    chat_settings,
    checked_temperature,
    input_hash,
    ntr_run,
    resolve_nugget_source,
    turn_items,
    turn_prompt_fields,
)
from assess.services.jobs.outcomes import (
    MAX_CONSECUTIVE_ERRORS,
    Tally,
    copied_outcome,
    outcome_of,
    planned_outcome,
    reply_outcome,
    store_copy,
)
from assess.services.jobs.planning import (
    DEFAULT_LATENCY_S,
    MAX_SAMPLES,
    Plan,
    check_not_running,
    default_source,
    describe_estimate,
    estimate,
    estimate_counts,
    measured_latency_s,
    message_chars,
    persona_versions,
    plan,
    prepare,
    setup,
)
from assess.services.jobs.reports import (
    adaptive_metrics,
    adaptive_sources,
    aepd_document,
    describe_adaptive,
    describe_progress,
    describe_stored,
    describe_worker,
    job_listing,
    latest_jobs,
    worker_rows,
)
from assess.services.jobs.runner import (
    Progress,
    ask_all,
    begin,
    nli_batches,
    run,
    run_job,
    run_nli,
    run_with_settings,
    stale_after_s,
)

__all__ = [
    "TASKS",
    "LABEL_TASKS",
    "MAX_SAMPLES",
    "DEFAULT_LATENCY_S",
    "MAX_CONSECUTIVE_ERRORS",
    "Progress",
    "Item",
    "Plan",
    "input_hash",
    "chat_item",
    "chat_settings",
    "checked_temperature",
    "turn_prompt_fields",
    "RawItem",
    "BY_TURN",
    "turn_items",
    "ntr_run",
    "copied_outcome",
    "outcome_of",
    "planned_outcome",
    "resolve_nugget_source",
    "setup",
    "plan",
    "default_source",
    "persona_versions",
    "estimate",
    "message_chars",
    "estimate_counts",
    "describe_estimate",
    "measured_latency_s",
    "Tally",
    "reply_outcome",
    "job_listing",
    "latest_jobs",
    "worker_rows",
    "describe_worker",
    "check_not_running",
    "begin",
    "run_job",
    "ask_all",
    "stale_after_s",
    "run",
    "nli_batches",
    "run_nli",
    "aepd_document",
    "prepare",
    "run_with_settings",
    "describe_adaptive",
    "describe_stored",
    "describe_progress",
    "adaptive_sources",
    "adaptive_metrics",
    "store_copy",
]
