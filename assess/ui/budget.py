"""/audit's budget simulation: how wide the runs' intervals are and how well the estimated ranking holds, per
sampling policy and human budget, before anyone judges (issue 37; :func:`assess.services.budget.simulate_view`,
the numbers of ``python -m assess audit simulate --json``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services.budget import simulate_view
from assess.ui import plots
from assess.ui.audit import table
from assess.ui.widgets import error, esc, figure

POLICIES = ("uniform", "stratified", "disagreement", "active", "active-sequential")
NO_SECOND = "(none)"


def budgets_of(text: str) -> tuple[int, ...]:
    """The budgets of a comma-separated list of whole numbers (what the form's field holds)."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    found = [p for p in parts if not p.isdigit()]
    if found or not parts:
        raise AssessError(f"Budgets: expected whole numbers separated by commas (e.g. 20, 40), found {text!r}")
    return tuple(int(p) for p in parts)


def simulate_panel(database, names: list[str], reference: str, judge: str) -> None:
    """The simulation's form, its result kept for the pair and drawn below it (figure and table)."""
    with st.form("au_sim"):
        c1, c2, c3 = st.columns(3)
        measure = c1.text_input("Measure (P@k or nDCG@k)", "P@5", key="au_sim_m")
        budgets = c2.text_input("Budgets (items, comma-separated)", "10, 20, 40", key="au_sim_b")
        repeats = c3.number_input("Repeats", 1, 10000, 50, key="au_sim_r")
        c1, c2, c3 = st.columns(3)
        policies = c1.multiselect("Policies", POLICIES, ["uniform", "active"], key="au_sim_p")
        second = c2.selectbox("Second judge", [NO_SECOND, *[n for n in names if n not in (reference, judge)]],
                              key="au_sim_2")  # fmt: skip
        seed = c3.number_input("Seed", 0, 2**31 - 1, 0, key="au_sim_s")
        submitted = st.form_submit_button("Simulate budgets")
    asked = (reference, judge, measure, budgets, int(repeats), tuple(policies), second, int(seed))
    if submitted:
        try:
            found = simulate_view(
                database,
                reference,
                judge,
                measure=measure.strip(),
                budgets=budgets_of(budgets),
                policies=tuple(policies),
                repeats=int(repeats),
                seed=int(seed),
                second=None if second == NO_SECOND else second,
            )
        except AssessError as exc:
            st.session_state.pop("au_sim_result", None)
            error("Not simulated: ", exc)
            return
        st.session_state["au_sim_result"] = (asked, found)
    kept = st.session_state.get("au_sim_result")
    if not kept or kept[0] != asked:  # another pair or form since: simulate again
        return
    results = kept[1]["results"]
    st.caption(
        esc(
            f"{reference} (reference) hidden, {judge} (judge) everywhere; {int(repeats)} draws per policy and "
            "budget; coverage of the full-reference value by the 95% intervals."
        )
    )
    figure(plots.budget_curves(results, measure=measure.strip()), "audit_budget")
    table(pd.DataFrame(results), "budget_simulation", key="au_sim_t")
