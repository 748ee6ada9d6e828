"""The judge audit's services: several sources side by side, system-level agreement, bias and consistency probes,
corrected estimates and budgeted human samples (issue 15), the verdict that combines them, assessors' own
consistency and speed, and the Scores page's views. Each view reads the store once, calls the pure measures
(assess/measures/agreement, systems, bias, ppi, sampling, verdict, speed) and returns plain JSON-serialisable values
for the /audit, /scores and /review pages and `python -m assess audit ...`; no Streamlit and no SQL here.

The package holds one concern a module: ``sources`` (the sources of a task, their kinds, default roles, JSON values),
``groups`` (the topic, depth and personal breakdowns), ``scores`` (the Scores page), ``agreement`` (two sources, the
matrix, the alternative annotator test), ``systems`` (run rankings under two sources), ``probes`` (the judge's bias,
self-consistency and persona sensitivity), ``estimates`` (corrected estimates and their coverage), ``samples``
(budgeted human samples), ``consistency`` (assessors' re-shows and planned overlap), ``speed`` (active time,
rubber-stamping, anchoring) and ``verdict`` (can the judge replace the reference?). Every name is importable from
``assess.services.audit``.
"""

from __future__ import annotations

from assess.services.audit.agreement import GROUP_DRAWS_LIMIT, agreement_from_store, agreement_view, alt_test_view
from assess.services.audit.consistency import headline_statistic, overlap_view, self_agreement_view
from assess.services.audit.estimates import (
    ASSUMED_UNIFORM,
    DRAWN,
    ESTIMATE_MEASURES,
    coverage_view,
    estimate_view,
    reference_sample,
)
from assess.services.audit.groups import (
    BREAKDOWNS,
    DEPTH_RULE,
    PTKB_DEFAULT,
    TOPIC_RULE,
    item_groups,
    personal_turns,
    turn_groups,
)
from assess.services.audit.probes import bias_view, consistency_view, label_kind_values, persona_view
from assess.services.audit.samples import create_sample, sample_plan
from assess.services.audit.scores import DEMO, aepd_view, demo_case, gfrc2_view, ranking_view, read_case
from assess.services.audit.sources import (
    HUMAN_KINDS,
    HUMAN_REFERENCE_KINDS,
    JUDGE_ORDER,
    KIND_NAMES,
    MATRIX_KIND,
    REFERENCE_ORDER,
    audit_sources,
    check_two,
    default_humans,
    default_roles,
    json_safe,
    key_text,
    known_sources,
    label_counts,
    passage_pair,
    pick_roles,
    rank_roles,
    role_label,
    source_kinds,
    stored_kinds,
)
from assess.services.audit.speed import (
    ANCHORING_TASKS,
    TIMED_LABEL_COLUMNS,
    anchoring,
    rubber_stamping,
    speed,
    speed_version,
    timed_labels_csv,
)
from assess.services.audit.systems import systems_view
from assess.services.audit.verdict import OVERLAP_SHARE, verdict_view

__all__ = [
    "HUMAN_KINDS",
    "HUMAN_REFERENCE_KINDS",
    "JUDGE_ORDER",
    "KIND_NAMES",
    "MATRIX_KIND",
    "REFERENCE_ORDER",
    "audit_sources",
    "check_two",
    "default_humans",
    "default_roles",
    "json_safe",
    "key_text",
    "known_sources",
    "label_counts",
    "passage_pair",
    "pick_roles",
    "rank_roles",
    "role_label",
    "source_kinds",
    "stored_kinds",
    "BREAKDOWNS",
    "DEPTH_RULE",
    "PTKB_DEFAULT",
    "TOPIC_RULE",
    "item_groups",
    "personal_turns",
    "turn_groups",
    "DEMO",
    "aepd_view",
    "demo_case",
    "gfrc2_view",
    "ranking_view",
    "read_case",
    "GROUP_DRAWS_LIMIT",
    "agreement_from_store",
    "agreement_view",
    "alt_test_view",
    "systems_view",
    "bias_view",
    "consistency_view",
    "label_kind_values",
    "persona_view",
    "ASSUMED_UNIFORM",
    "DRAWN",
    "ESTIMATE_MEASURES",
    "coverage_view",
    "estimate_view",
    "reference_sample",
    "create_sample",
    "sample_plan",
    "headline_statistic",
    "overlap_view",
    "self_agreement_view",
    "ANCHORING_TASKS",
    "TIMED_LABEL_COLUMNS",
    "anchoring",
    "rubber_stamping",
    "speed",
    "speed_version",
    "timed_labels_csv",
    "OVERLAP_SHARE",
    "verdict_view",
]
