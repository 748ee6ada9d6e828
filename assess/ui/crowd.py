"""The crowd worker page (pages/crowd.py): a crowd link (?study=NAME plus the platform's worker
parameters) shows that page alone: no sign-in box, no organizer page, no navigation."""

from __future__ import annotations

import streamlit as st

from assess.text import inert_html
from assess.ui.assets import asset
from assess.ui.widgets import esc, line

CROWD_COOKIE = "assess_crowd"
CROWD_COOKIE_SECONDS = 7 * 24 * 3600

_crowd_mark = st.components.v2.component("assess_crowd_mark", js=asset("crowd_mark.js"), isolate_styles=False)


def crowd_link() -> dict[str, str] | None:
    """The crowd link this browser came with: the entry parameters of ``?study=…`` in the URL, else those
    this session or this browser (cookie) entered with; None for a visitor who never followed one."""
    from urllib.parse import parse_qsl, unquote

    from assess.crowd.rules import ENTRY_PARAMS, STUDY_PARAM

    given = {key: st.query_params.get(key) for key in ENTRY_PARAMS if key in st.query_params}
    if STUDY_PARAM in given:
        return given
    if saved := st.session_state.get("_crowd_link"):
        return saved
    cookie = st.context.cookies.get(CROWD_COOKIE) or ""
    remembered = {k: v for k, v in parse_qsl(unquote(cookie)) if k in ENTRY_PARAMS}
    return remembered if STUDY_PARAM in remembered else None


def crowd_page():
    """The crowd worker page (pages/crowd.py at /crowd)."""
    return st.Page("pages/crowd.py", title="Study", icon="👥", url_path="crowd")


def crowd_frame() -> None:
    """In app.py, before sign-in: a visitor who came with a crowd link (now or earlier in this session or
    browser) gets the crowd page of that study alone (hidden navigation, no sign-in, no other page), even
    after dropping or editing ``?study=`` in the URL."""
    from urllib.parse import urlencode

    link = crowd_link()
    if link is None:
        return
    st.session_state["_frame"] = True
    st.session_state["_crowd_link"] = link
    if st.query_params.to_dict() != link:
        st.query_params.from_dict(link)  # the crowd page reads the link from the URL
    _crowd_mark(
        key="assess_crowd_mark", data={"name": CROWD_COOKIE, "link": urlencode(link), "max_age": CROWD_COOKIE_SECONDS}
    )
    page = crowd_page()

    def start():  # the default page answers at "/" and at any other path (a default page has no url path)
        st.switch_page(page, query_params=link)

    st.navigation([st.Page(start, title="Study", default=True), page], position="hidden").run()
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
    if view.task == "response":
        for utterance, response in view.history:
            crowd_text(utterance, "User")
            if response:
                crowd_text(response, "Assistant")
        crowd_text(view.utterance, "User (last question)")
    crowd_text(view.response, "Response")
    if view.task == "ntr":
        crowd_text(view.nugget, "Nugget")


def crowd_keys(item, config, give) -> None:
    """The question and answer buttons of one item, each calling ``give(value, graded)``: Y / N on a
    yes/no NtR study (graded False), 2 / 1 / 0 on a graded one (graded True; captions and help from
    the registry's support scale), 0-3 and X "unable" per criterion on a response study (graded None)."""
    from assess.crowd.rules import CRITERIA, NTR_GRADED_QUESTION, NTR_QUESTION, UNABLE, answer_caption
    from assess.tasks import SUPPORT

    if item.task == "ntr" and config.graded:
        st.subheader(NTR_GRADED_QUESTION)
        keys = st.container(horizontal=True, gap="small")
        for value in sorted(SUPPORT.values, reverse=True):
            keys.button(
                SUPPORT.label(value),
                key=f"crowd_s{value}",
                shortcut=str(value),
                on_click=give,
                args=(value, True),
                width="stretch",
                help=SUPPORT.definitions[value],
            )
        return
    if item.task == "ntr":
        st.subheader(NTR_QUESTION)
        keys = st.container(horizontal=True, gap="small")
        keys.button("Yes", key="crowd_yes", shortcut="Y", on_click=give, args=(1, False), width=160)
        keys.button("No", key="crowd_no", shortcut="N", on_click=give, args=(0, False), width=160)
        return
    rubric = CRITERIA[item.criterion]
    st.subheader(rubric["question"])
    keys = st.container(horizontal=True, gap="small")
    for value in config.scale:
        keys.button(
            answer_caption(item.criterion, value),
            key=f"crowd_v{value}",
            shortcut=str(value),
            on_click=give,
            args=(value, None),
            width="stretch",
            help=rubric["scale"][value],
        )
    if config.allow_unable:
        keys.button(
            "Unable to judge", key="crowd_unable", shortcut="X", on_click=give, args=(UNABLE, None), width="stretch"
        )


def crowd_completion(code: str | None, config, entry) -> None:
    """The end of a batch: the completion code, Prolific's return link, or the MTurk submit form."""
    from assess.crowd.rules import PROLIFIC_COMPLETE, mturk_form_html

    st.success("Thank you: you have answered every item of your batch.")
    if entry.platform == "prolific" and config.prolific_code:
        st.markdown(f"Your Prolific completion code: **{esc(config.prolific_code)}**")
        st.link_button("Return to Prolific", PROLIFIC_COMPLETE + config.prolific_code, type="primary")
    st.markdown("Your completion code (keep it; paste it where the platform asks for it):")
    st.code(code or "", language=None)
    if entry.platform == "mturk" and entry.submit_to and entry.session:
        st.markdown(mturk_form_html(entry.submit_to, entry.session, code or ""), unsafe_allow_html=True)
