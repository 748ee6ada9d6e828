"""The RAG assessor parts of the pages: rows of answer keys, a response sentence beside the passage it cites,
nugget importance by key on /nuggets and the RAG tab of /scores. Every name and text from the data passes
through ``ui.esc`` / ``ui.code`` / ``ui.line`` / ``ui.show_passage`` (inert)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.formats.inert_csv import frame_csv
from assess.services import rag
from assess.services.judging import StaleLabel
from assess.tasks import CITATION_CONTRADICTS, CITATION_SUPPORT, IMPORTANCE
from assess.ui.cursor import keys
from assess.ui.frame import saving
from assess.ui.widgets import code, esc, flash, line, set_flash, show_passage
from store.db import StoreUnavailable

CITATION_KEYS = ((2, "2"), (1, "1"), (0, "0"), (-1, "I"), (CITATION_CONTRADICTS, "O"))
"""Citation support by key: 2 fully, 1 partially, 0 not supported, I the citation is irrelevant, O the passage
contradicts the sentence (states the Opposite; -2; C would be the natural key, but Streamlit reserves C and R).
X is "cannot judge", as on /judge: stored as a label without a support value (see pages/citations.py)."""

SUPPORT_KEYS = ((2, "2 · Support"), (1, "1 · Partial support"), (0, "0 · No support"))
"""Graded NtR by key (the shortcut is the value's digit)."""

FLASH = "rag_flash"


def refused(on_click):
    """A key's callback whose refusal (the item is no longer stored, a value off the scale) is said on the
    page, escaped, by :func:`messages` instead of failing; nothing was written. A label stored meanwhile from
    another tab or device, and a store that is busy or cannot be reached, are said by
    :func:`assess.ui.frame.saving`, as on every keyboard page."""

    def guarded(value):
        try:
            on_click(value)
        except (StaleLabel, StoreUnavailable):  # saving() says these (a busy store: kept with Retry)
            raise
        except AssessError as exc:
            set_flash("error", f"Not saved: {exc}", slot=FLASH)

    return guarded


def messages() -> None:
    """The message a key's callback left (see :func:`refused`)."""
    flash(FLASH)


def stale_citation(exc: AssessError) -> None:
    """The item on screen is gone (its response was imported again): say so and read the queue again."""
    _cached_citation_order.clear()
    st.warning(f"This citation is no longer stored ({esc(exc)}): reload the page to see the queue as it is now.")


def turn_progress(state, turn_id: str, done: str) -> None:
    """The progress bar of a keyboard queue: the turn's and the whole queue's items ``done`` (e.g. "labelled")."""
    prog = state.progress()
    done_turn, total_turn = prog["turns"][turn_id]
    st.progress(
        done_turn / total_turn,
        text=f"Turn {esc(turn_id)}: {done_turn} / {total_turn} {done} · all: {prog['judged']} / {prog['total']}",
    )


def _key_of(key_prefix: str, value: int) -> str:
    return f"{key_prefix}{'m' if value < 0 else ''}{abs(value)}"


def timed_keys(options, key_prefix: str) -> dict[str, str | None]:
    """The buttons :func:`key_row` draws for ``options`` ((value, shortcut) pairs) as ``Cursor.shown``'s
    ``timed``: {button key: its shortcut, None when shortcuts are off}."""
    return {_key_of(key_prefix, value): keys(shortcut) for value, shortcut in options}


def key_row(options, on_click, own, *, key_prefix: str) -> None:
    """One horizontal row of answer buttons: ``options`` are (value, caption, shortcut); the assessor's own
    answer is the primary one."""
    row = st.container(horizontal=True, gap="small")
    for value, caption, shortcut in options:
        row.button(
            caption,
            key=_key_of(key_prefix, value),
            shortcut=keys(shortcut),
            on_click=saving(refused(on_click)),
            args=(value,),
            width="stretch",
            type="primary" if own == value else "secondary",
        )


# cache_resource: the order is immutable and shared by every session until a response import changes it.
@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_citation_order(_database, target: str, version: tuple):
    return rag.citation_order(_database)


def citation_order(database):
    """Every stored citation as a queue order, cached until responses are imported again."""
    return _cached_citation_order(database, database.target, rag.citations_version(database))


def citation_rubric() -> None:
    st.markdown(
        "\n".join(
            f"- **{key} · {CITATION_SUPPORT.names[v]}**: {CITATION_SUPPORT.definitions[v]}" for v, key in CITATION_KEYS
        )
        + "\n- **X · cannot judge**: you cannot tell (e.g. the passage has no text); stored as your label and left "
        "out of the citation scores"
    )


def citation_buttons(on_click, own) -> None:
    key_row(
        [(v, f"{key} · {CITATION_SUPPORT.names[v]}", key) for v, key in CITATION_KEYS],
        on_click,
        own,
        key_prefix="cite_",
    )


def citation_view(screen: rag.CitationScreen) -> None:
    """The sentence (or the whole response) on the left, the passage it cites on the right."""
    left, right = st.columns(2, gap="medium")
    with left:
        if screen.sentence == rag.WHOLE:
            st.markdown("**The response as a whole** (its citations name no sentence)")
        else:
            st.markdown(f"**Sentence {screen.sentence} of {screen.sentences}**")
        line(None, screen.sentence_text)
        others = [p for p in screen.cites if p != screen.passage.id]
        if others:
            st.caption("Also cited here: " + ", ".join(code(p) for p in others))
    with right:
        st.markdown(f"**Cited passage** {code(screen.passage.id)}")
        show_passage(screen.passage.text)
    if screen.labelled:
        st.success(f"Your label: {CITATION_SUPPORT.label(screen.own)}")  # None: 'cannot judge'


# ------------------------------------------------------------------------------------------- /nuggets


def importance_keys(database, source: str, turn_id: str, nuggets: dict, select_key: str) -> None:
    """V vital / O okay for the nugget chosen in ``select_key``; then the next nugget without an importance."""
    messages()
    marked = rag.importance_of(database, source, turn_id)
    chosen = st.session_state.get(select_key)
    if chosen not in nuggets:
        return

    def mark(value):
        shown = st.session_state.get(select_key)
        rag.save_importance(database, source, shown, value)
        done = {**marked, shown: value}
        st.session_state[select_key] = rag.next_without_importance(list(nuggets), done, shown)

    row = st.columns([4, 2])
    given = marked.get(chosen)
    row[0].markdown(
        f"Importance of {code(nuggets[chosen]['key'])}: **{IMPORTANCE.names[given] if given is not None else 'not set'}**"
        f" · {len(marked)} of {len(nuggets)} set"
    )
    with row[1]:
        key_row([(1, "V · vital", "V"), (0, "O · okay", "O")], mark, given, key_prefix="nug_importance_")


# ------------------------------------------------------------------------------------------- /scores


def _table(rows: list[dict], name: str, *, key: str) -> None:
    frame = pd.DataFrame(rows)
    st.dataframe(frame, hide_index=True, width="stretch", key=f"{key}_table")
    st.download_button("Download CSV", frame_csv(frame), file_name=f"{name}.csv", mime="text/csv", key=f"{key}_csv")


# The tab runs with every rerun of /scores (a widget of any tab): 300,000 labels take seconds to score, so the
# tables are kept until the sources' labels or the responses change (nugget edits alone: at most 5 minutes).
@st.cache_data(max_entries=32, ttl=300, show_spinner="Scoring…")
def _nugget_scores(_database, target: str, ntr_source: str, nugget_source: str, importance: str | None, version):
    return rag.nugget_scores(_database, ntr_source, nugget_source, importance)


@st.cache_data(max_entries=32, ttl=300, show_spinner="Scoring…")
def _citation_scores(_database, target: str, source: str, version):
    return rag.citation_scores(_database, source)


def scores_tab(database) -> None:
    """NtR recall and All / Vital / Weighted per run, and citation precision / recall per run, from stored labels."""
    sources = rag.score_sources(database)
    chosen = rag.default_score_sources(database, sources)  # gold nuggets and the most labelled sources
    st.subheader("Nugget scores (CONE-RAG NtR recall, TREC RAG All / Vital / Weighted)")
    if not sources["ntr"] or not sources["nuggets"]:
        st.info("No NtR labels (yes/no or graded) on gold nuggets yet.")
    else:
        c1, c2, c3 = st.columns(3)
        ntr_source = c1.selectbox(
            "NtR labels of", sources["ntr"], index=sources["ntr"].index(chosen["ntr"]), key="rag_ntr"
        )
        nugget_source = c2.selectbox(
            "Gold nuggets", sources["nuggets"], index=sources["nuggets"].index(chosen["nuggets"]), key="rag_nuggets"
        )
        # The nugget set's own importance labels by default, as `score nuggets --db` reads them; one widget
        # per nugget set, so choosing another set brings its own default.
        options = [None, *sources["importance"]]
        importance_source = c3.selectbox(
            "Importance labels of",
            options,
            index=options.index(rag.default_importance_source(database, nugget_source)),
            format_func=lambda name: "none (every nugget okay)" if name is None else name,
            key=f"rag_importance:{nugget_source}",
        )
        version = rag.scores_version(database, ntr_source, importance_source)
        scores = _nugget_scores(database, database.target, ntr_source, nugget_source, importance_source, version)
        notes = scores["notes"]
        st.caption(
            f"{notes['labels']} labels of {esc(ntr_source)} on {esc(nugget_source)}; strict: support only, lax: "
            f"partial support counts 0.5 (NtR recall: 1); yes = support, no = no support; "
            f"{notes['unjudged']} unjudged gold nuggets count as no support; "
            f"{notes['without_importance']} gold nuggets without an importance label count as okay; left out: "
            f"{notes['other_set_labels']} labels on other nugget sets, {notes['empty_response_labels']} on empty responses."
        )
        if scores["runs"]:
            _table(scores["runs"], "nugget_scores", key="rag_nug")
            with st.expander("Per turn"):
                _table(scores["per_turn"], "nugget_scores_per_turn", key="rag_nug_turn")
        else:
            st.info("These labels score no run on this nugget set.")
    st.subheader("Citation support (ALCE citation recall and precision)")
    if not sources["citation"]:
        st.info("No citation-support labels yet: label them on the Citation support page.")
        return
    citation_source = st.selectbox(
        "Citation labels of",
        sources["citation"],
        index=sources["citation"].index(chosen["citation"]),
        key="rag_citation",
    )
    version = rag.scores_version(database, citation_source)
    scores = _citation_scores(database, database.target, citation_source, version)
    excluded = sum(r["cannot_judge"] for r in scores)
    st.caption(
        "Recall: supported sentences / sentences, precision: precise citations / citations, means over a run's "
        "responses; supported: share of sentences with a supporting citation, its mean per response (the "
        "leaderboard's all row), supported_micro: pooled over the run's sentences. Strict: fully supported; lax: "
        "partially counts. Responses with an unlabelled citation are left out (column unlabelled), and so, while "
        "a run is partly labelled, are its responses that cite nothing (uncited_left_out; ALCE scores them 0, "
        "counted once every citation of the run is labelled); coverage: the labelled share of the run's citations. "
        f"{excluded} citations labelled 'cannot judge' (column cannot_judge) count as labelled and are left out "
        "of every score, never read as 0 or unsupported."
        + (
            " A citation labelled 'contradicts' counts as not supported; contradiction_rate: contradicting / judged "
            "citations."
            if any("contradicts" in r for r in scores)
            else ""
        )
    )
    _table(scores, "citation_scores", key="rag_cite")
