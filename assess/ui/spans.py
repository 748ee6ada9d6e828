"""The span picker: select text of a passage or response with the mouse and send its offsets to Python."""

from __future__ import annotations

import streamlit as st

from assess.nuggets.spans import segments
from assess.ui.assets import asset
from assess.ui.cursor import keys

_span_picker_component = st.components.v2.component(
    "assess_span_picker", css=asset("span_picker.css"), js=asset("span_picker.js"), isolate_styles=False
)


def span_picker(
    item_id: str,
    text: str,
    spans=(),
    *,
    key: str,
    on_pick,
    button: str = "Add selection as nugget (N)",
    shortcut: str = "n",
    hint: str = "Select text with the mouse, then press N or the button.",
) -> None:
    """Show ``text`` inertly with ``spans`` highlighted; selecting text and pressing ``shortcut`` (or the
    button) calls ``on_pick`` with the selection waiting in :func:`picked_span` (UTF-16 offsets)."""

    bound = keys(shortcut)  # None: the person turned single-key shortcuts off
    if bound is None:
        button = button.replace(f" ({shortcut.upper()})", "")
        hint = hint.replace(f"press {shortcut.upper()} or the button", "press the button")
    data = {"id": item_id, "segments": segments(text, spans), "button": button, "key": bound, "hint": hint}
    _span_picker_component(key=key, data=data, on_span_change=on_pick, height="content")


def picked_span(key: str) -> dict | None:
    """The selection a span picker just sent ({id, start, end, text, units}), inside its callback."""
    value = st.session_state.get(key)
    try:
        picked = value.get("span") if value is not None else None
    except AttributeError:
        return None
    return picked if isinstance(picked, dict) else None
