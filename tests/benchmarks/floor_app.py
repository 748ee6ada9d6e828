"""The framework floor for tests/benchmarks/bench_browser.py: a bare Streamlit app with one button whose
keyboard shortcut (N) changes one line of text ("item 17" -> "item 18"), and nothing else: no store, no
page frame. Key press -> changed line here is the least any Streamlit page can take on this machine.

Run: streamlit run tests/benchmarks/floor_app.py
"""

import streamlit as st

if "item" not in st.session_state:
    st.session_state["item"] = 0


def next_item() -> None:
    st.session_state["item"] += 1


st.markdown(f"item {st.session_state['item']}")
st.button("Next", key="next", shortcut="N", on_click=next_item)
