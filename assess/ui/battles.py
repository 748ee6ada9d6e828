"""The battle page's parts (two answers side by side, identities hidden, the verdict keys) and the Bradley-Terry
tab of /scores. Every text from the data passes through ``esc`` / ``code`` / ``line`` / ``show_passage``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.services import battles
from assess.ui.cursor import keys
from assess.ui.frame import saving
from assess.ui.rag import refused
from assess.ui.widgets import code, conversation, esc, line, ptkb, show_passage

VERDICT_KEYS = (
    ("a", "A · Left is better", "A"),
    ("l", "L · Right is better", "L"),
    ("t", "T · Tie", "T"),
    ("b", "B · Both bad", "B"),
)
"""The verdict buttons: key name, caption, shortcut. ArrowLeft / ArrowRight are the same verdicts as A / L."""

WINNER_OF = {"a": "a", "l": "b", "t": "tie", "b": "both_bad", "left": "a", "right": "b"}
"""Which stored winner a verdict key means (``a``: the left run, ``b``: the right run)."""


def context(screen: battles.BattleScreen) -> None:
    """The topic: the conversation so far and the PTKB of an iKAT turn, a RAG topic's text and narrative."""
    ctx = screen.context
    with st.expander(esc(ctx.title or f"Topic {ctx.turn_id}"), expanded=True):
        conversation(ctx)
        if screen.narrative:
            line("Narrative:", screen.narrative)
        if ctx.ptkb:
            st.markdown("**The user's PTKB**")
            ptkb(ctx)


def answer(place, title: str, found: battles.Answer) -> None:
    """One answer: its sentences, each followed by the passages it cites (as on /citations), then those passages."""
    with place:
        st.markdown(f"**{esc(title)}**")
        if found.sentences:
            for n, (text, cites) in enumerate(found.sentences, start=1):
                line(f"{n}.", text)
                if cites:
                    st.caption("cites " + ", ".join(code(p) for p in cites))
        else:
            line(None, found.text)
        if found.citations:
            st.caption("The answer as a whole cites " + ", ".join(code(p) for p in found.citations))
        if found.passages:
            with st.expander(f"Cited passages ({len(found.passages)})"):
                for passage, text in found.passages.items():
                    st.markdown(code(passage))
                    show_passage(text)


def verdict_buttons(on_click) -> None:
    """The verdict row (A, L, T, B) and the arrow keys for left / right, each storing at once."""
    row = st.container(horizontal=True, gap="small")
    for name, caption, shortcut in VERDICT_KEYS:
        row.button(
            caption,
            key=f"battle_{name}",
            shortcut=keys(shortcut),
            on_click=saving(refused(on_click)),
            args=(WINNER_OF[name],),
            width="stretch",
        )
    arrows = st.container(horizontal=True, gap="small")
    for name, caption, shortcut in (("left", "← Left is better", "Left"), ("right", "→ Right is better", "Right")):
        arrows.button(
            caption,
            key=f"battle_{name}",
            shortcut=keys(shortcut),
            on_click=saving(refused(on_click)),
            args=(WINNER_OF[name],),
            width="stretch",
        )


# ------------------------------------------------------------------------------------------- /scores


# cache_data: the ranking (1,000 bootstrap replicates) is kept until the source's battles change.
@st.cache_data(max_entries=32, show_spinner=False)
def _ranking(_database, target: str, source: str, version: tuple) -> dict:
    return battles.report(_database, source)


def scores_tab(database) -> None:
    """Bradley-Terry strengths with intervals and win rates of one battle source (the figures of
    ``battles rank --json``) and its swapped-order consistency (an LLM judge's position bias)."""
    sources = battles.sources(database)
    if not sources:
        st.info("No battles yet: import a battle file (`python -m assess battles import`) or judge on /battles.")
        return
    source = st.selectbox("Battle source", sources, key="bt_source")
    found = _ranking(database, database.target, source, battles.version(database, source))
    st.caption(esc(found["model"]))
    table = pd.DataFrame(
        [{"run": run, **figures} for run, figures in found["runs"].items()],
        columns=["run", "strength", "low", "high", "win_rate", "battles"],
    )
    st.dataframe(table, hide_index=True, key="bt_table")
    swapped = found["swapped_order"]
    if swapped["pairs"]:
        left = swapped["left_share"]
        st.caption(
            f"Pairs judged in both orders: {swapped['pairs']}, verdict flipped: {swapped['flips']} "
            f"({swapped['flip_share']:.1%}: an LLM judge's position bias)"
            + (f"; left answer chosen in {left:.1%} of decisive verdicts" if left is not None else "")
        )
