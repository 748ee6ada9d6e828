"""The battle page's parts (two answers side by side, identities hidden, the verdict keys) and the Bradley-Terry
tab of /scores. Every text from the data passes through ``esc`` / ``code`` / ``line`` / ``show_passage``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import battle_analysis as analysis
from assess.services import battles
from assess.ui import plots
from assess.ui.audit import download_csv
from assess.ui.cursor import keys
from assess.ui.frame import saving
from assess.ui.rag import refused
from assess.ui.widgets import code, conversation, error, esc, figure, line, ptkb, show_passage

VERDICTS = (
    ("left", "Left is better", ("Left", "A"), "a"),
    ("tie", "Tie", ("T",), "tie"),
    ("neither", "Neither is good (both bad)", ("N",), "both_bad"),
    ("right", "Right is better", ("Right", "L"), "b"),
)
"""The verdicts in the order of their buttons: name, caption, keys (the first on the button, the others on a
small button of their own) and the stored winner (``a``: the run on the left, ``b``: the run on the right).
No key of "both bad" is a letter a person could read as "right" (``B`` would read as answer B)."""

KEY_HELP = (
    ("← or A", "left is better"),
    ("→ or L", "right is better"),
    ("T", "tie"),
    ("N", "neither is good (both bad)"),
    ("U", "undo the last verdict"),
)
"""The battle page's keys as its help line and docs/battles.md's table show them (a test keeps them equal)."""

ANSWER_HEIGHT = 350
"""The height in pixels of each answer's box (it scrolls inside): at 1280x800 the question, both answers and the
verdict row fit the window, however long the conversation before the turn."""


def question(screen: battles.BattleScreen) -> None:
    """What the answers answer, in a line or two: the current utterance (a RAG topic's text) and its resolved form."""
    ctx = screen.context
    line(f"Question ({ctx.turn_id}):", ctx.utterance or "", strong=True)
    if ctx.resolved:
        line("Resolved:", ctx.resolved, resolved=True)


def context(screen: battles.BattleScreen) -> None:
    """The rest of the topic, collapsed below the verdict keys: the conversation so far and the PTKB of an iKAT
    turn, a RAG topic's narrative."""
    ctx = screen.context
    parts = [f"{len(ctx.history)} earlier turns" if ctx.history else None]
    parts.append(f"{len(ctx.ptkb)} PTKB statements" if ctx.ptkb else None)
    parts.append("narrative" if screen.narrative else None)
    what = ", ".join(p for p in parts if p) or "nothing more"
    title = esc(ctx.title or f"Topic {ctx.turn_id}")
    with st.expander(f"Context: {title} ({what})", expanded=False):
        conversation(ctx)
        if screen.narrative:
            line("Narrative:", screen.narrative)
        if ctx.ptkb:
            st.markdown("**The user's PTKB**")
            ptkb(ctx)


def answer(place, title: str, found: battles.Answer, *, key: str) -> None:
    """One answer in a box of its own height (it scrolls inside): its sentences, each followed by the passages it
    cites (as on /citations), then those passages. ``key``: one per battle, so each battle's box opens at its top."""
    with place.container(border=True, height=ANSWER_HEIGHT, key=key):
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


def key_help() -> str:
    """The one line of key help under the verdict buttons."""
    return " · ".join(f"**{k}** {what}" for k, what in KEY_HELP)


def verdict_buttons(on_click) -> None:
    """The verdict row (left, tie, neither, right: each where it points) and the letter keys A / L beside it,
    each storing at once; then the key help."""
    row = st.container(horizontal=True, gap="small")
    spare = []
    for name, caption, shortcuts, winner in VERDICTS:
        first = shortcuts[0]
        row.button(
            caption,
            key=f"battle_{name}",
            shortcut=keys(first),
            on_click=saving(refused(on_click)),
            args=(winner,),
            width="stretch",
        )
        spare += [(name, caption, k, winner) for k in shortcuts[1:]]
    letters = st.container(horizontal=True, gap="small", vertical_alignment="center")
    for name, caption, shortcut, winner in spare:
        letters.button(
            caption,
            key=f"battle_{name}_{shortcut.lower()}",
            shortcut=keys(shortcut),
            on_click=saving(refused(on_click)),
            args=(winner,),
            type="tertiary",
        )
    letters.caption("Keys: " + key_help())


# ------------------------------------------------------------------------------------------- /scores


# cache_data: the ranking (1,000 bootstrap replicates) is kept until the source's battles change.
@st.cache_data(max_entries=32, show_spinner=False)
def _ranking(_database, target: str, source: str, version: tuple) -> dict:
    return battles.report(_database, source)


@st.cache_data(max_entries=32, show_spinner=False)
def _analysis(_database, target: str, source: str, controls: tuple, version: tuple) -> dict:
    """The controlled ranking (None without controls) and the top run's fragility under the same model."""
    return {
        "controlled": analysis.controlled(_database, source, controls) if controls else None,
        "fragility": analysis.fragility(_database, source, controls),
    }


@st.cache_data(max_entries=8, show_spinner=False)
def _sway(_database, target: str, versions: tuple) -> dict:
    return analysis.sway(_database)


def sway_table(database, sources: list[str]) -> None:
    """Citation count, supported-citation share and length effects per source, people and LLM judges side by
    side, with each source's position bias (share of decisive verdicts for the left answer)."""
    found = _sway(database, database.target, tuple(battles.version(database, s) for s in sources))
    rows = []
    for source, s in found["sources"].items():
        row = {"source": source, "kind": s["kind"], "battles": s["battles"]}
        for name, c in s["controls"].items():
            row.update({name: c and c["coef"], f"{name}_low": c and c["low"], f"{name}_high": c and c["high"]})
        row["left_chosen"] = s["position"]["left_share"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    st.dataframe(_rounded(frame), hide_index=True, key="bt_sway")
    download_csv(frame, "battles_sway", key="bt_sway_csv")
    st.caption(
        "Log-odds of a win per standard deviation of each difference, fitted together per source; n/a: the "
        "source's battles have no such feature. left_chosen: an LLM judge's position bias."
    )


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """Figures for people: three decimals (the CSV keeps them exact)."""
    return frame.round(3).replace(-0.0, 0.0)


def scores_tab(database) -> None:
    """Bradley-Terry strengths with intervals and win rates of one battle source (the figures of
    ``battles rank --json``), the same controlled for answer features side by side in a forest plot, the
    controls' coefficients, the top run's fragility, provisional ranks and the swapped-order consistency."""
    sources = battles.sources(database)
    if not sources:
        st.info("No battles yet: import a battle file (`python -m assess battles import`) or judge on /battles.")
        return
    most = battles.default_source(database, sources)  # the most battles, not the first name
    source = st.selectbox("Battle source", sources, index=sources.index(most), key="bt_source")
    controls = st.multiselect("Control for", list(analysis.FEATURES), key="bt_controls")
    version = battles.version(database, source)
    found = _ranking(database, database.target, source, version)
    try:
        extra = _analysis(database, database.target, source, tuple(controls), version)
    except AssessError as exc:
        error("", str(exc))
        extra = {"controlled": None, "fragility": None}
    st.caption(esc(found["model"]))
    weak = set(analysis.provisional(found["runs"]))
    shown = extra["controlled"]
    rows = []
    for run, figures in found["runs"].items():
        row = {"run": run, **figures, "provisional": run in weak}
        if shown:
            c = shown["runs"][run]
            row.update({"controlled": c["strength"], "controlled_low": c["low"], "controlled_high": c["high"]})
        rows.append(row)
    frame = pd.DataFrame(rows)
    st.dataframe(_rounded(frame), hide_index=True, key="bt_table")
    download_csv(frame, f"battles_{source}", key="bt_csv")
    if weak:
        st.caption(f"Provisional (fewer than {analysis.MIN_BATTLES} battles): {esc(', '.join(sorted(weak)))}")
    points = [
        {"name": run, "series": "uncontrolled", "value": f["strength"], "low": f["low"], "high": f["high"]}
        for run, f in found["runs"].items()
    ]
    if shown:
        points += [
            {"name": run, "series": "controlled", "value": f["strength"], "low": f["low"], "high": f["high"]}
            for run, f in shown["runs"].items()
        ]
        coefs = pd.DataFrame([{"control": name, **c} for name, c in shown["controls"].items()])
        st.markdown("**Controls** (log-odds of a win per standard deviation of the difference)")
        st.dataframe(_rounded(coefs), hide_index=True, key="bt_controls_table")
    figure(
        plots.interval_plot(points, title="Strengths with intervals", axis="log-strength", reference=0.0), "bt_forest"
    )
    top = (extra["fragility"] or {}).get("top")
    if top:
        st.caption(
            f"Fragility: removing {top['count']} of the battles ({top['share']:.2%}) puts {esc(top['runs'][1])} "
            f"ahead of {esc(top['runs'][0])} (verified by refitting)"
        )
    with st.expander("Do citations sway the verdicts? (every source side by side)"):
        try:
            sway_table(database, sources)
        except AssessError as exc:
            error("", str(exc))
    swapped = found["swapped_order"]
    if swapped["pairs"]:
        left = swapped["left_share"]
        st.caption(
            f"Pairs judged in both orders: {swapped['pairs']}, verdict flipped: {swapped['flips']} "
            f"({swapped['flip_share']:.1%}: an LLM judge's position bias)"
            + (f"; left answer chosen in {left:.1%} of decisive verdicts" if left is not None else "")
        )
