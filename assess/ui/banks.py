"""The "Banks & rubrics" tab of /scores: RAGTIME nugget coverage (AND / OR, optionally importance-weighted),
sentence support and F1 per run, and DRAGUN's supportive and contradictory scores per run."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import banks
from assess.ui.widgets import error


def _table(result: dict, measures: list[str]) -> None:
    frame = pd.DataFrame(
        [{"run": run, "topics": s["topics"], **{m: s.get(m) for m in measures}} for run, s in result["runs"].items()]
    )
    st.dataframe(frame, hide_index=True, width="stretch")


def scores_tab(database) -> None:
    sources = banks.score_sources(database)
    chosen = banks.default_sources(database, sources)  # the most matches / judgments, not the first name
    st.subheader("Nugget banks (RAGTIME): coverage, sentence support, F1")
    if not sources["matches"]:
        st.info("No bank matches yet: mark them on /banks, import them or run the bank-match task.")
    else:
        c1, c2, c3 = st.columns(3)
        source = c1.selectbox(
            "Matches of", sources["matches"], index=sources["matches"].index(chosen["matches"]), key="bank_src"
        )
        citations = c2.selectbox(
            "Citation support of", [None, *sources["citations"]], format_func=lambda s: s or "none", key="bank_cit"
        )
        weighted = c3.toggle("Importance-weighted", key="bank_weighted")
        try:
            result = banks.bank_scores(database, source, weighted=weighted, citation_source=citations)
            _table(result, banks.score_columns(result))
        except AssessError as exc:
            error("", exc)
    st.subheader("Rubrics (DRAGUN): supportive and contradictory scores")
    if not sources["rubrics"]:
        st.info("No rubric judgments yet: import them (python -m assess rubrics import-judgments).")
    else:
        source = st.selectbox(
            "Judgments of", sources["rubrics"], index=sources["rubrics"].index(chosen["rubrics"]), key="rubric_src"
        )
        try:
            _table(banks.rubric_scores(database, source), ["supportive", "contradictory"])
        except AssessError as exc:
            error("", exc)
