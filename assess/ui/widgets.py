"""Widgets the pages share: untrusted text shown inertly, the conversation and PTKB panels, pickers,
messages left by callbacks, figures with downloads, tables and the agreement panel."""

from __future__ import annotations

import logging

import streamlit as st

from assess import lazylibs
from assess.errors import AssessError
from assess.services import audit as scoreboard
from assess.services.audit import agreement_from_store, label_counts, rank_roles, ranking_view, role_label, stored_kinds
from assess.services.contents import labels_version, rankings_version, topics_version
from assess.services.contents import turn_context as stored_turn_context
from assess.services.guidelines import current
from assess.tasks import GRADES, TurnContext
from assess.text import code_span, inert_html, inert_markdown, line_html, showable
from assess.ui import plots
from assess.ui.assets import CSS
from assess.ui.plots import figure_html, figure_png

_log = logging.getLogger("assess.ui")


def esc(text: object) -> str:
    """The one way data reaches a Streamlit call that renders markdown: a title, subheader, caption, an
    error / warning / info / success / toast text, an expander, tab, widget, button or metric label, a
    progress text. Conversation titles, ids, run and source names, URL parameters and exception texts
    all pass through here (see :func:`assess.text.inert_markdown`); option labels of a selectbox or
    multiselect are plain text and need nothing."""
    return inert_markdown(text)


def code(text: object) -> str:
    """An id shown verbatim as a markdown code span (``Passage `id```), whatever backticks it holds."""
    return code_span(text)


def error(message: str, detail: object = None, *, container=None) -> None:
    """``st.error(message + detail)`` with ``detail`` (an exception, data) escaped; the detail is logged
    on the server too, so an organizer finds what a user saw."""
    if detail is not None:
        unexpected = isinstance(detail, BaseException) and not isinstance(detail, AssessError)
        _log.warning("%s%s", message, detail, exc_info=detail if unexpected else None)
    (container or st).error(message + ("" if detail is None else esc(detail)))


def upload_name(upload) -> str | None:
    """The base name of an uploaded file, safe to use as a file name and to show; None (with an error
    on the page) for a name that is no file name at all (empty, ``.``, ``..``, control characters)."""
    from pathlib import PurePosixPath

    raw = str(upload.name or "")
    base = PurePosixPath(raw.replace("\\", "/")).name
    if base in ("", ".", "..") or showable(base) != base:
        error("The upload's file name is not usable as a file name: ", repr(raw))
        return None
    return base


def styles() -> None:
    """The inert-text styles, sent once per full run of the app (app.py) and kept by the page: the text
    blocks themselves carry only class names. Style-only HTML takes no room on the page."""
    st.html(CSS)


def show_passage(text: str | None, terms=()) -> None:
    """Render untrusted passage text inertly (escaped), highlighting query terms; say so when text is absent."""
    if text is None:
        st.warning(
            "Passage text not available (only its id is known; judged ClueWeb22 texts are licensed). "
            "Judge from your own copy, or mark it 'cannot judge'."
        )
        return
    st.markdown(inert_html(text, terms), unsafe_allow_html=True)


def inert(text: str) -> None:
    """Show untrusted text (an LLM's raw answer, a response) as inert, escaped text."""
    st.markdown(inert_html(text), unsafe_allow_html=True)


def line(label: str | None, text: str, *, strong: bool = False, resolved: bool = False, container=None) -> None:
    """Show untrusted text (an utterance, a response, a nugget, a statement) inertly after a bold label."""
    css = "inert-resolved" if resolved else "inert-line"
    (container or st).markdown(line_html(label, text, css=css, strong=strong), unsafe_allow_html=True)


def rubric() -> None:
    """The 0-4 grade rubric with its definitions."""
    st.markdown(
        "\n".join(f"- **{GRADES.label(g)}**: {GRADES.definitions[g]}" for g in sorted(GRADES.values, reverse=True))
    )


def guideline(database, task: str) -> None:
    """The task's guideline in force (written by organizers on the review page), as inert text in an expander;
    nothing while the task has none. Labels record its version when they are written."""

    found = current(database, task)
    if found is not None:
        with st.expander(f"Guidelines (version {found['version']})"):
            inert(found["text"])


def conversation(ctx: TurnContext) -> None:
    """The conversation so far, the current utterance and its resolved form (all untrusted text)."""
    for h in ctx.history:
        line("User:", h["utterance"] or "")
        if h["response"]:
            line("System:", h["response"])
    line(f"User (now, {ctx.turn_id}):", ctx.utterance or "")
    if ctx.resolved:
        line("Resolved:", ctx.resolved, resolved=True)


def ptkb(ctx: TurnContext) -> None:
    if not ctx.ptkb:
        st.caption("No PTKB statements for this conversation.")
    for s in ctx.ptkb:
        line(f"{s['id']}.", s["text"])


@st.cache_data(max_entries=512, show_spinner=False)
def _turn_context(_database, target: str, turn_id: str, version: str) -> TurnContext:
    return stored_turn_context(_database, turn_id)  # the store itself is not part of the key (underscore)


def turn_context(database, turn_id: str) -> TurnContext:
    """A turn's conversation so far and PTKB, cached per store and turn until topics are imported again."""

    return _turn_context(database, database.target, turn_id, topics_version(database))


def context_columns(database, turn_id: str) -> tuple[TurnContext, object, object]:
    """The two columns of a judging screen; the left one shows the conversation so far.

    Returns (turn context, left column, right column).
    """
    ctx = turn_context(database, turn_id)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader(esc(ctx.title or f"Conversation {ctx.conversation_id}"))
        conversation(ctx)
    return ctx, left, right


def figure(fig, name: str) -> None:
    """Show a plotly figure with HTML and PNG downloads (PNG only when a headless browser is available)."""

    st.plotly_chart(fig, width="stretch", key=f"chart_{name}")
    c1, c2 = st.columns(2)
    c1.download_button(  # the self-contained HTML (several MB) is built when the button is clicked
        "Download HTML", lambda: figure_html(fig), file_name=f"{name}.html", mime="text/html", key=f"html_{name}"
    )
    if c2.button("Prepare PNG", key=f"png_{name}"):
        png = figure_png(fig)
        if png is None:
            c2.warning("PNG export needs a headless Chromium (Debian package chromium) for kaleido.")
        else:
            c2.download_button("Download PNG", png, file_name=f"{name}.png", mime="image/png", key=f"pngdl_{name}")


def case_input(kind: str, label: str):
    """An uploaded scoring input, or the demo's; returns (document, file name) or (None, None) on bad input."""

    upload = st.file_uploader(label, type=["json"], key=f"upload_{kind}")
    try:
        if upload is None:
            document, name = scoreboard.demo_case(kind)
            st.caption(f"Showing the demo's {esc(name)}; upload a file to score your own.")
            return document, name
        name = upload_name(upload)
        return (None, None) if name is None else (scoreboard.read_case(upload.getvalue(), name), name)
    except AssessError as exc:
        error("Nothing scored. ", exc)
        return None, None


def queue_overview(state, current_turn: str) -> None:
    """An expander with judged / total per topic (conversation) and per turn of the assessor's queue
    (``state``, a :class:`assess.queueing.QueueState`); its tables are built only while it is open."""
    pd = lazylibs.pandas()

    box = st.expander("Your queue: progress per topic and turn", key="queue_overview", on_change="rerun")
    if not box.open:
        return
    progress = state.progress()
    with box:
        topics = pd.DataFrame(
            [
                {"topic": c, "judged": d, "total": t, "done": f"{d / t:.0%}" if t else "-"}
                for c, (d, t) in progress["conversations"].items()
            ]
        )
        st.dataframe(topics, hide_index=True, width="stretch")
        turns = pd.DataFrame(
            [
                {"turn": t, "judged": d, "total": n, "current": "▶" if t == current_turn else ""}
                for t, (d, n) in progress["turns"].items()
            ]
        )
        st.dataframe(turns, hide_index=True, width="stretch", height=220)


def flash(slot: str = "nugget_flash") -> None:
    """Show (once) the message a callback left: ('success' | 'error', text)."""
    kind, text = st.session_state.pop(slot, (None, None))
    if kind == "error":
        st.error(esc(text))
    elif kind:
        st.success(esc(text))


def set_flash(kind: str, text: str, slot: str = "nugget_flash") -> None:
    """Leave a message for :func:`flash` (it may hold data or an exception's text: shown escaped)."""
    if kind == "error":
        _log.info("%s", text)
    st.session_state[slot] = (kind, text)


def pick_turn(turns: list[str], key: str, label: str = "Turn") -> str:
    """A turn selector that follows ``?turn=`` once and remembers the choice in the session."""
    if not turns:
        st.info("No turns to work on yet: import topics (and runs or qrels) first.")
        st.stop()
    return pick(turns, key, label, param="turn")


def pick(options: list, key: str, label: str, *, param: str | None = None, format_func=str):
    """A selectbox whose first value may come from the query parameter ``param`` (a deep link)."""
    wanted = st.query_params.get(param) if param else None
    if wanted is not None and wanted in options and st.session_state.get(f"_{key}_linked") != wanted:
        st.session_state[key] = wanted
        st.session_state[f"_{key}_linked"] = wanted
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]
    return st.selectbox(label, options, key=key, format_func=format_func)


def nugget_table(rows: list[dict], *, key: str) -> None:
    """The nuggets of a turn as one table (fast for hundreds of rows)."""
    pd = lazylibs.pandas()

    if not rows:
        st.caption("No nuggets yet for this turn.")
        return
    frame = pd.DataFrame(
        [
            {
                "key": r["key"],
                "text": r["text"],
                "passage": r["passage_id"] or "",
                "start": r["start_char"],
                "end": r["end_char"],
                "kept (dedup)": {1: "yes", 0: "no"}.get(r["in_dedup"], "?"),
                "relevance": r["relevance"],
            }
            for r in rows
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch", key=key)


AGREEMENT_TASKS = ("passage", "ptkb", "ntr")
"""The label kinds whose sources can be compared (one value per item on an integer scale)."""


def agreement_panel(database, task: str, names: list[str], *, key: str, audit: bool = False):
    """Compare two label sources of ``task``: pickers, the agreement metrics, the confusion matrix and
    per-topic kappa. Returns (source A, source B, report).

    Source A defaults to a human source and source B to an LLM (by the sources' kinds:
    :func:`assess.services.audit.default_roles`), each shown with its kind. The Scores page
    (``audit=False``) offers unweighted kappa and always draws; the judge audit (``audit=True``) shows
    plain and weighted kappa side by side and draws only when the two sources share items.
    """

    kinds = stored_kinds(database, names)
    first, second = rank_roles(names, kinds, counts=label_counts(database, names, task))
    c1, c2, c3, c4 = st.columns(4)

    def kind_label(name: str) -> str:
        return role_label(name, kinds)

    a = c1.selectbox("Source A", names, index=names.index(first), format_func=kind_label, key=f"{key}_a")
    if audit:
        b = c2.selectbox(
            "Source B (e.g. the LLM)", names, index=names.index(second), format_func=kind_label, key=f"{key}_b"
        )
        weights = c3.selectbox("Weights", ["linear", "quadratic"], key=f"{key}_w")
    else:
        b = c2.selectbox("Source B", names, index=names.index(second), format_func=kind_label, key=f"{key}_b")
        weights = c3.selectbox("Weights", ["none", "linear", "quadratic"], key=f"{key}_w")
    threshold = c4.number_input("Binarise at ≥", 0, 4, 2 if task == "passage" else 1, key=f"{key}_t")
    report = agreement_from_store(
        database, task, a, b, weights=None if weights == "none" else weights, threshold=threshold
    )
    if audit:
        shown = {
            "n": "n",
            "agreement": "agreement",
            "kappa_unweighted": "κ unweighted",
            f"kappa_{weights}": f"κ {weights}",
            "kappa_binary": f"κ binary (≥ {threshold})",
        }
    else:
        shown = {name: name for name in ("n", "agreement", "kappa", "kappa_binary")}
    for col, (name, label) in zip(st.columns(len(shown)), shown.items()):
        value = report.get(name)
        col.metric(label, "n/a" if value is None else (f"{value:,}" if name == "n" else f"{value:.3f}"))
    if report["n"] or not audit:
        prefix = "audit_" if audit else ""
        figure(plots.confusion_heatmap(report, names=(a, b)), f"{prefix}confusion")
        figure(plots.kappa_bars(report["per_topic"], weights=report.get("weights")), f"{prefix}kappa_per_topic")
    return a, b, report


@st.cache_resource(max_entries=16, show_spinner=False)
def _ranking_view(_database, target: str, a: str, b: str, version: tuple) -> dict:
    return ranking_view(_database, a, b)


def ranking_panel(database, a: str, b: str, *, key: str, name: str, empty: str, table: bool = False) -> None:
    """The runs ranked by a measure under label sources ``a`` and ``b``: a scatter with Kendall's tau
    (and, with ``table``, the scores themselves); ``empty`` is shown when the store holds no runs. The figures are
    kept until the runs or either source's passage labels change (50 runs of 2,300 turns: seconds to evaluate)."""
    pd = lazylibs.pandas()

    version = (
        rankings_version(database),
        labels_version(database, "passage", a),
        labels_version(database, "passage", b),
    )
    view = _ranking_view(database, database.target, a, b, version)
    if not view:
        st.info(empty)
        return
    measure = st.selectbox("Measure", list(view), key=key)
    scores = view[measure]
    if table:
        st.dataframe(pd.DataFrame({a: scores["a"], b: scores["b"]}), width="stretch")
    labels = (f"{measure} under {a}", f"{measure} under {b}")
    figure(plots.ranking_scatter(scores["a"], scores["b"], scores["kendall_tau"], labels=labels), name)


def grade_text(value) -> str:
    """A 0-4 grade with its name, or the "cannot judge" text."""
    return GRADES.missing if value is None else f"{value} ({GRADES.names[value]})"


def source_cards(labels: list[dict], *, per_row: int = 4) -> None:
    """Each source's grade, note and rationale as cards side by side (``shown_as``: its name or letter)."""
    for start in range(0, len(labels), per_row):
        for column, label in zip(st.columns(per_row), labels[start : start + per_row]):
            with column.container(border=True):
                line(None, label["shown_as"], strong=True)
                st.markdown(f"**{grade_text(label['grade'])}**")
                if label["note"]:
                    line("Note:", label["note"])
                if label["rationale"]:
                    with st.expander("Rationale"):
                        inert(label["rationale"])
