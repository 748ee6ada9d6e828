"""The crowd worker page (pages/crowd.py): a crowd link (?study=NAME plus the platform's worker
parameters) shows that page alone: no sign-in box, no organizer page, no navigation."""

from __future__ import annotations

import streamlit as st

from assess.text import inert_html
from assess.ui.assets import CSS
from assess.ui.widgets import line


def crowd_frame() -> None:
    """In app.py, before sign-in: with ``?study=`` in the URL run only the crowd page (hidden navigation)."""
    from assess.crowd.rules import STUDY_PARAM

    if STUDY_PARAM not in st.query_params:
        return
    st.session_state["_frame"] = True
    crowd_page = st.Page("pages/crowd.py", title="Study", icon=":material/groups:", url_path="crowd")

    def start():  # the default page answers at "/" (a default page has no url path of its own)
        st.switch_page(crowd_page, query_params=st.query_params.to_dict())

    st.navigation([st.Page(start, title="Study", default=True), crowd_page], position="hidden").run()
    st.stop()


def crowd_query() -> dict:
    """The crowd page's query parameters (study, platform ids)."""
    from assess.crowd.rules import ENTRY_PARAMS

    return {key: st.query_params.get(key) for key in ENTRY_PARAMS}


def crowd_text(text: str | None, label: str) -> None:
    """One block of untrusted text (a response, a nugget, an utterance), rendered inertly under a label."""
    st.markdown(f"**{label}**")
    st.markdown(inert_html(text or ""), unsafe_allow_html=True)


def crowd_guideline(guide: dict, config) -> None:
    """The study's instructions, worked examples and (response studies) the rating scales."""
    from assess.crowd.rules import CRITERIA

    st.markdown(guide.get("instructions", ""))
    for criterion in config.criteria:
        st.markdown(f"**{criterion.capitalize()}**: {CRITERIA[criterion]['question']}")
        st.markdown("\n".join(f"- **{v}** {text}" for v, text in CRITERIA[criterion]["scale"].items()))
    examples = guide.get("examples") or []
    if examples:
        st.markdown("**Worked examples**")
    for n, ex in enumerate(examples, start=1):
        first = "Response" if config.task == "ntr" else "Example"
        second = "Nugget" if config.task == "ntr" else "Criterion"
        line(f"{n}. {first}:", str(ex.get("response", "")))
        line(f"{second}:", str(ex.get("nugget", "")))
        line("Answer:", f"{ex.get('answer', '')}: {ex.get('why', '')}")


def crowd_item(view) -> None:
    """One item's content: the conversation so far (response studies), the response, the nugget."""
    st.markdown(CSS, unsafe_allow_html=True)
    if view.task == "response":
        for utterance, response in view.history:
            crowd_text(utterance, "User")
            if response:
                crowd_text(response, "Assistant")
        crowd_text(view.utterance, "User (last question)")
    crowd_text(view.response, "Response")
    if view.task == "ntr":
        crowd_text(view.nugget, "Nugget")


def crowd_completion(code: str | None, config, entry) -> None:
    """The end of a batch: the completion code, Prolific's return link, or the MTurk submit form."""
    from assess.crowd.rules import PROLIFIC_COMPLETE, mturk_form_html

    st.success("Thank you: you have answered every item of your batch.")
    if entry.platform == "prolific" and config.prolific_code:
        st.markdown(f"Your Prolific completion code: **{config.prolific_code}**")
        st.link_button("Return to Prolific", PROLIFIC_COMPLETE + config.prolific_code, type="primary")
    st.markdown("Your completion code (keep it; paste it where the platform asks for it):")
    st.code(code or "", language=None)
    if entry.platform == "mturk" and entry.submit_to and entry.session:
        st.markdown(mturk_form_html(entry.submit_to, entry.session, code or ""), unsafe_allow_html=True)
