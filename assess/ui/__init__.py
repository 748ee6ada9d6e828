"""The Streamlit front end's shared parts; the one package outside pages/ that imports Streamlit.

Pages call ``ui.<name>``: the names below are re-exported from the modules that hold them
(frame, widgets, cursor, spans, crowd; plots for the figures).
"""

from assess.ui.crowd import crowd_completion, crowd_frame, crowd_guideline, crowd_item, crowd_query, crowd_text
from assess.ui.cursor import Cursor, load_queue, release_keys_from_inputs
from assess.ui.frame import (
    assessor,
    db,
    ensure_started,
    entailment_judge,
    frame_guard,
    is_organizer,
    require_assessor,
    sidebar_sign_in,
    sign_in_from_query,
)
from assess.ui.spans import picked_span, span_picker
from assess.ui.widgets import (
    AGREEMENT_TASKS,
    agreement_panel,
    case_input,
    context_columns,
    conversation,
    figure,
    flash,
    inert,
    line,
    nugget_table,
    pick,
    pick_turn,
    ptkb,
    queue_overview,
    ranking_panel,
    rubric,
    set_flash,
    show_passage,
)

__all__ = [
    "AGREEMENT_TASKS",
    "agreement_panel",
    "Cursor",
    "assessor",
    "case_input",
    "context_columns",
    "conversation",
    "crowd_completion",
    "crowd_frame",
    "crowd_guideline",
    "crowd_item",
    "crowd_query",
    "crowd_text",
    "db",
    "ensure_started",
    "entailment_judge",
    "figure",
    "flash",
    "frame_guard",
    "inert",
    "is_organizer",
    "line",
    "load_queue",
    "nugget_table",
    "pick",
    "pick_turn",
    "picked_span",
    "ptkb",
    "queue_overview",
    "ranking_panel",
    "release_keys_from_inputs",
    "require_assessor",
    "rubric",
    "set_flash",
    "show_passage",
    "sidebar_sign_in",
    "sign_in_from_query",
    "span_picker",
]
