"""Panels of the assessors' own consistency and of planned overlap (/review and /audit): the re-show control,
self-agreement per assessor, the overlap plan form and the human ceiling over planned overlap. Numbers come
from :mod:`assess.services.audit`; names are data and reach markdown only through ``esc``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import audit as service
from assess.services import contents
from assess.services.contents import reshow_rule, set_reshow_rule
from assess.ui.audit import ceiling_rule
from assess.ui.widgets import error, esc


def _ci(ci) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(value) -> float | None:
    return None if value is None else round(float(value), 4)


def reshow_control(database, by: str | None) -> None:
    """The organizer's re-show rule for /judge: share, least gap, seed (docs/judging.md#re-shown-items)."""

    current = reshow_rule(database)
    with st.form("reshow_rule", border=False):
        c1, c2, c3 = st.columns(3)
        share = c1.number_input(
            "Share of judged items re-shown (0: off)",
            min_value=0.0,
            max_value=1.0,
            step=0.01,
            value=current.share if current else 0.0,
            key="reshow_share",
        )
        gap = c2.number_input(
            "At least this many labels later", min_value=1, value=current.gap if current else 10, key="reshow_gap"
        )
        seed = c3.number_input("Seed", min_value=0, value=current.seed if current else 0, key="reshow_seed")
        if st.form_submit_button("Save the re-show rule", key="reshow_save"):
            try:
                set_reshow_rule(database, float(share), gap=int(gap), seed=int(seed), by=by)
                st.success("Re-show rule saved" if share else "Items are no longer re-shown")
            except AssessError as exc:
                error("Not saved: ", exc)
    st.caption(
        "Each block of 1/share new labels of an assessor gives one item, picked at random (seeded), that comes "
        "back blind between the gap and twice the gap labels later. Its second answer is stored apart: the "
        "first label is never replaced and counts alone in qrels and exports."
    )


FEW_RESHOWS = 10
"""Below this many items graded twice, the page says an assessor's self-agreement rests on too few items."""


def self_agreement_panel(database, *, key: str) -> None:
    """Each assessor's agreement with themselves over their answered re-shows, with bootstrap intervals."""
    view = service.self_agreement_view(database, threshold=2)
    statistic = view["statistic"]
    if not view["assessors"]:
        st.info("No re-shown item has been answered yet (set a share above, or `python -m assess reshow`).")
    else:
        frame = pd.DataFrame(
            [
                {
                    "assessor": r["assessor"],
                    "answered": r["answered"],
                    "graded twice": r["n"],
                    "changed": r["changed"],
                    "agreement": _num(r["agreement"]),
                    statistic: _num(r["value"]),
                    "95% interval": _ci(r["ci"]),
                }
                for r in view["assessors"]
            ]
        )
        st.dataframe(frame, hide_index=True, width="stretch", key=f"self_{key}")
        few = [r["assessor"] for r in view["assessors"] if r["n"] < FEW_RESHOWS]
        if few:
            st.caption(
                esc(
                    f"Fewer than {FEW_RESHOWS} items graded twice ({', '.join(few)}): too few for a "
                    "trustworthy figure; the interval only reflects the items there are."
                )
            )
    waiting = [r for r in view["pending"] if r["pending"]]
    if waiting:
        st.caption(esc("Still to come: " + ", ".join(f"{r['assessor']} {r['pending']}" for r in waiting)))


ADAPTIVE_HELP = (
    "The share drawn goes to a second assessor at once; any other item gets the next assessor when its first "
    "grade and the judge's differ by the margin or more, a third when two people's do, and adjudication when "
    "all of them do (docs/judging.md#adaptive-overlap; `python -m assess overlap --adaptive`)."
)


def overlap_form(database, by: str | None) -> None:
    """The organizer's overlap plan: assessors, conversations, share, copies, unit, seed
    (``python -m assess overlap``)."""

    with st.form("overlap_plan", border=False):
        c1, c2 = st.columns(2)
        name = c1.text_input("Plan name (a word)", key="ov_name")
        people = c2.multiselect(
            "Assessors (2 or more)", contents.assessor_names(database), accept_new_options=True, key="ov_people"
        )
        topics = st.multiselect("Conversations", contents.conversation_ids(database), key="ov_topics")
        c3, c4, c5, c6 = st.columns(4)
        share = c3.number_input("Share judged twice or more", 0.01, 1.0, 0.1, step=0.01, key="ov_share")
        copies = c4.radio("Assessors per shared item", (2, 3), horizontal=True, key="ov_copies")
        unit = c5.radio("Draw", ("item", "turn"), horizontal=True, key="ov_unit")
        seed = c6.number_input("Seed", min_value=0, value=0, key="ov_seed")
        a1, a2, a3 = st.columns(3)
        adaptive = a1.checkbox("Adaptive: add assessors where grades disagree", key="ov_adaptive", help=ADAPTIVE_HELP)
        margin = a2.number_input("Margin (grade difference)", 0.5, 4.0, 2.0, step=0.5, key="ov_margin")
        judge = a3.selectbox(
            "Judge compared with (optional)", sorted(contents.source_kinds(database)), None, key="ov_judge"
        )
        if st.form_submit_button("Assign with overlap", key="ov_create"):
            try:
                made = contents.create_overlap_plan(
                    database,
                    name,
                    people,
                    topics=topics,
                    share=float(share),
                    copies=int(copies),
                    unit=unit,
                    seed=int(seed),
                    by=by,
                    margin=float(margin) if adaptive else None,
                    judge=judge if adaptive else None,
                )
                st.success(
                    esc(
                        f"Plan {made['plan']}: {made['chosen']} of {made['population']} {unit}s judged by "
                        f"{made['copies']} assessors; own turns "
                        + ", ".join(f"{a} {n}" for a, n in made["assignments"].items())
                    )
                )
            except AssessError as exc:
                error("No plan made: ", exc)
    st.caption(
        "Turns go round the assessors in queue order; the drawn share also goes to the next one or two "
        "assessors, spread evenly through their queues between their own turns."
    )


def overlap_panel(database, *, key: str) -> None:
    """The human ceiling over planned overlap: each pair of planned assessors and the pooled ceiling."""
    view = service.overlap_view(database, threshold=2)
    if not view["items"]:
        st.info("No overlap is planned yet: plan it on the Review page or with `python -m assess overlap`.")
        return
    statistic = view["statistic"]
    st.caption(
        f"{view['items']} items planned for overlap; {view['judged_by_two']} judged by two assessors, "
        f"{view['judged_by_all']} by all planned. " + ceiling_rule(view["min_shared"], view["below_minimum"])
    )
    entries = [({"a": "human ceiling", "b": "(pooled)"}, view["ceiling"])] if view["ceiling"] else []
    entries += [({"a": p["a"], "b": p["b"]}, p) for p in view["pairs"]]
    if not entries:
        st.info("No two planned assessors have judged a shared item yet.")
        return
    frame = pd.DataFrame(
        [
            {
                **names,
                "n": e["n"],
                statistic: _num(e[statistic]),
                f"{statistic} 95%": _ci(e["ci"][statistic]),
                "alpha": _num(e["alpha"]),
                "alpha 95%": _ci(e["ci"]["alpha"]),
            }
            for names, e in entries
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch", key=f"ov_{key}")
