"""The framework floor for tests/benchmarks/bench_load.py: a bare Streamlit app that answers the load
benchmark's clients with the same widgets and texts as the workbench (/crowd: consent box, Start, "Item n
of N", Yes / No; /judge: the sign-in form, "Turn T: a / b judged", "Passage `ID` (n of N)", grades 0-4),
and does the least an answer must: one fragment rerun and one SQLite insert (its own file, $FLOOR_DB,
WAL, one committed INSERT per answer). No accounts, no store layer, no page frame, no components.

So bench_load.py's CPU per answer on app.py divided by this app's is what the workbench costs over
Streamlit itself for the same websocket messages.

Run: FLOOR_DB=/tmp/floor.db streamlit run tests/benchmarks/floor_load_app.py
"""

import os
import sqlite3
import time

import streamlit as st

BATCH = 10  # crowd items per batch, as the demo NtR study (bench_load.py's crowd study)
QUEUE = 217  # passages in a judge queue, as the demo pool


@st.cache_resource
def _schema() -> str:
    path = os.environ.get("FLOOR_DB", "floor.db")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS answers (who TEXT, item TEXT, value INTEGER, at REAL)")
    return path


def _connection() -> sqlite3.Connection:
    """One connection per browser session (as the workbench holds one per session)."""
    if "conn" not in st.session_state:
        conn = sqlite3.connect(_schema(), check_same_thread=False, timeout=30, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")
        st.session_state["conn"] = conn
    return st.session_state["conn"]


def _store(who: str, item: str, value: int) -> None:
    _connection().execute(
        "INSERT INTO answers (who, item, value, at) VALUES (?, ?, ?, ?)", (who, item, value, time.time())
    )


def crowd() -> None:
    worker = st.query_params.get("worker", "")
    if not st.session_state.get("consented"):
        st.markdown("Consent: answer ten items.")
        agreed = st.checkbox("I agree", key="crowd_agree")
        st.button(
            "Start",
            key="crowd_start",
            disabled=not agreed,
            on_click=st.session_state.update,
            args=({"consented": True},),
        )
        return
    st.session_state.setdefault("answered", 0)

    def give(value: int) -> None:
        _store(worker, str(st.session_state["answered"]), value)
        st.session_state["answered"] += 1

    @st.fragment
    def panel() -> None:
        done = st.session_state["answered"]
        if done >= BATCH:
            st.rerun(scope="app")
        st.progress(done / BATCH, text=f"Item {done + 1} of {BATCH}")
        st.markdown(f"Response {worker} {done}")
        st.button("Yes", key="crowd_yes", on_click=give, args=(1,))
        st.button("No", key="crowd_no", on_click=give, args=(0,))

    if st.session_state["answered"] >= BATCH:
        st.success("Thank you: you have answered every item of your batch.")
        return
    panel()


def judge() -> None:
    if not st.session_state.get("name"):
        with st.form("account_sign_in_form"):
            name = st.text_input("Account name", key="account_name")
            st.text_input("Password", type="password", key="account_password")
            if st.form_submit_button("Sign in", key="account_sign_in"):
                st.session_state["name"] = name
                st.rerun()
        return
    st.session_state.setdefault("position", 0)

    def grade(value: int) -> None:
        _store(st.session_state["name"], str(st.session_state["position"]), value)
        st.session_state["position"] += 1

    @st.fragment
    def panel() -> None:
        n = st.session_state["position"]
        st.progress(min(n, QUEUE) / QUEUE, text=f"Turn t{n // 10}: {n % 10} / 10 judged")
        st.markdown(f"Passage `p{n}` ({n + 1} of {QUEUE})")
        for g in range(5):
            st.button(str(g), key=f"g{g}", on_click=grade, args=(g,))

    panel()


def home() -> None:
    st.markdown("Floor app: open /judge or /crowd.")


st.navigation(
    [
        st.Page(home, title="Home", default=True),
        st.Page(judge, title="Judge", url_path="judge"),
        st.Page(crowd, title="Study", url_path="crowd"),
    ],
    position="hidden",
).run()
