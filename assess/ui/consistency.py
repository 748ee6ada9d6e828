"""Panels of the assessors' own consistency and of planned overlap (/review and /audit): the re-show control,
self-agreement per assessor, the overlap plan form and the human ceiling over planned overlap. Numbers come
from :mod:`assess.services.audit`; names are data and reach markdown only through ``esc``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import audit as service
from assess.ui.widgets import error, esc


def _ci(ci) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(value) -> float | None:
    return None if value is None else round(float(value), 4)


def reshow_control(database, by: str | None) -> None:
    """The organizer's re-show rule for /judge: share, least gap, seed (docs/judging.md#re-shown-items)."""
    from store import reshows

    current = reshows.rule(database)
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
                reshows.set_rule(database, float(share), gap=int(gap), seed=int(seed), by=by)
                st.success("Re-show rule saved" if share else "Items are no longer re-shown")
            except AssessError as exc:
                error("Not saved: ", exc)
    st.caption(
        "Each block of 1/share new labels of an assessor gives one item, picked at random (seeded), that comes "
        "back blind between the gap and twice the gap labels later. Its second answer is stored apart: the "
        "first label is never replaced and counts alone in qrels and exports."
    )


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
    waiting = [r for r in view["pending"] if r["pending"]]
    if waiting:
        st.caption(esc("Still to come: " + ", ".join(f"{r['assessor']} {r['pending']}" for r in waiting)))
