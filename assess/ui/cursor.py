"""The keyboard queue pages (judge, PTKB, NtR): the assessor's cached queue, the item on screen and its keys."""

from __future__ import annotations

import streamlit as st

from assess import settings
from assess.ui.assets import asset
from assess.ui.frame import saving


# cache_resource, not cache_data: the order is immutable and shared, so no per-run copy of 20,000 items.
@st.cache_resource(max_entries=256, show_spinner=False)
def _cached_order(db_file: str, assessor_name: str, task: str, open_mode: bool, version: tuple):
    from store import open_db
    from store import queue as store_queue

    with open_db(db_file, migrate=False) as database:
        return store_queue.queue_order(database, assessor_name, task=task, open_mode=open_mode)


def load_queue(database, assessor_name: str, task: str = "passage"):
    """The assessor's queue; its item order is cached until the pool or their assignments change."""
    from store import queue as store_queue

    version = store_queue.queue_version(database, assessor_name)
    order = _cached_order(str(settings.db_target()), assessor_name, task, settings.open_mode(), version)
    return store_queue.load_queue(database, assessor_name, task=task, order=order)


class Cursor:
    """The item on screen of a keyboard queue page (judge, PTKB, NtR), kept in session state.

    Only the item key and the pending move live in the session; labels are in the store.
    """

    def __init__(self, prefix: str, state):
        self.prefix, self.state = prefix, state
        position = state.move(st.session_state.get(f"{prefix}_key"), st.session_state.pop(f"{prefix}_action", None))
        self.position = position
        self.turn_id, self.item_id, _ = state.item(position)
        st.session_state[f"{prefix}_key"] = (self.turn_id, self.item_id)

    def open(self, turn_id: str, item_id: str) -> None:
        st.session_state[f"{self.prefix}_key"] = (turn_id, item_id)

    def go(self, action: str) -> None:
        """Callback: move 'prev', 'next' or 'next_unjudged' on the next run."""
        st.session_state[f"{self.prefix}_action"] = action

    def undo(self, undo_fn) -> None:
        """Callback: ``undo_fn()`` reverts the assessor's last change and returns the (turn, item) it
        touched, which is then shown."""
        touched = undo_fn()
        if touched:
            self.open(*touched)

    def nav_buttons(self, columns, undo_fn, *, key_prefix: str = "", skip: bool = False) -> None:
        """Previous (Left), Next (Right), Undo (U) and, with ``skip``, Skip (S) buttons in ``columns``."""
        k = key_prefix
        columns[0].button(
            "Previous", key=f"{k}prev", shortcut="Left", on_click=self.go, args=("prev",), width="stretch"
        )
        columns[1].button("Next", key=f"{k}next", shortcut="Right", on_click=self.go, args=("next",), width="stretch")
        columns[2].button(
            "Undo", key=f"{k}undo", shortcut="U", on_click=saving(self.undo), args=(undo_fn,), width="stretch"
        )
        if skip:
            columns[3].button(
                "Skip", key=f"{k}skip", shortcut="S", on_click=self.go, args=("next_unjudged",), width="stretch"
            )


_key_release_component = st.components.v2.component(
    "assess_key_release", js=asset("key_release.js"), isolate_styles=False
)


def release_keys_from_inputs() -> None:
    """Let Enter / Escape in a text field return the keys to the page (call once on keyboard pages)."""
    _key_release_component(key="assess_key_release", data={})
