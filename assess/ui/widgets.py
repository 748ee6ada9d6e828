"""Widgets the pages share: untrusted text shown inertly, the conversation and PTKB panels, pickers,
messages left by callbacks, figures with downloads, tables and the agreement panel."""

from __future__ import annotations

import streamlit as st

from assess.errors import AssessError
from assess.tasks import GRADES, TurnContext
from assess.text import inert_html, line_html
from assess.ui.assets import CSS


def plain(text: str) -> str:
    """Escape markdown so a user-given string shows as typed."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|$<>~" else c for c in text)


def show_passage(text: str | None, terms=()) -> None:
    """Render untrusted passage text inertly (escaped), highlighting query terms; say so when text is absent."""
    st.markdown(CSS, unsafe_allow_html=True)
    if text is None:
        st.warning(
            "Passage text not available (only its id is known; judged ClueWeb22 texts are licensed). "
            "Judge from your own copy, or mark it 'cannot judge'."
        )
        return
    st.markdown(inert_html(text, terms), unsafe_allow_html=True)


def inert(text: str) -> None:
    """Show untrusted text (an LLM's raw answer, a response) as inert, escaped text."""
    st.markdown(CSS, unsafe_allow_html=True)
    st.markdown(inert_html(text), unsafe_allow_html=True)


def line(label: str | None, text: str, *, strong: bool = False, resolved: bool = False, container=None) -> None:
    """Show untrusted text (an utterance, a response, a nugget, a statement) inertly after a bold label."""
    css = "inert-resolved" if resolved else "inert-line"
    (container or st).markdown(CSS + line_html(label, text, css=css, strong=strong), unsafe_allow_html=True)


def rubric() -> None:
    """The 0-4 grade rubric with its definitions."""
    st.markdown(
        "\n".join(f"- **{GRADES.label(g)}**: {GRADES.definitions[g]}" for g in sorted(GRADES.values, reverse=True))
    )


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


def context_columns(database, turn_id: str) -> tuple[TurnContext, object, object]:
    """The two columns of a judging screen; the left one shows the conversation so far.

    Returns (turn context, left column, right column).
    """
    from store.conversations import turn_context

    ctx = turn_context(database, turn_id)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader(ctx.title or f"Conversation {ctx.conversation_id}")
        conversation(ctx)
    return ctx, left, right


def figure(fig, name: str) -> None:
    """Show a plotly figure with HTML and PNG downloads (PNG only when a headless browser is available)."""
    from assess.ui.plots import figure_html

    st.plotly_chart(fig, width="stretch", key=f"chart_{name}")
    c1, c2 = st.columns(2)
    c1.download_button(
        "Download HTML", figure_html(fig), file_name=f"{name}.html", mime="text/html", key=f"html_{name}"
    )
    if c2.button("Prepare PNG", key=f"png_{name}"):
        from assess.ui.plots import figure_png

        png = figure_png(fig)
        if png is None:
            c2.warning("PNG export needs a headless Chromium (Debian package chromium) for kaleido.")
        else:
            c2.download_button("Download PNG", png, file_name=f"{name}.png", mime="image/png", key=f"pngdl_{name}")


def case_input(kind: str, label: str):
    """An uploaded scoring input, or the demo's; returns (document, file name) or (None, None) on bad input."""
    from assess.services import audit as scoreboard

    upload = st.file_uploader(label, type=["json"], key=f"upload_{kind}")
    try:
        if upload is None:
            document, name = scoreboard.demo_case(kind)
            st.caption(f"Showing the demo's {name}; upload a file to score your own.")
            return document, name
        return scoreboard.read_case(upload.getvalue(), upload.name), upload.name
    except AssessError as exc:
        st.error(f"Nothing scored. {exc}")
        return None, None


def queue_overview(progress: dict, current_turn: str) -> None:
    """An expander with judged / total per topic (conversation) and per turn of the assessor's queue."""
    import pandas as pd

    with st.expander("Your queue: progress per topic and turn"):
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
        st.error(text)
    elif kind:
        st.success(text)


def set_flash(kind: str, text: str, slot: str = "nugget_flash") -> None:
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
    import pandas as pd

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
