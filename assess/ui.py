"""The one module outside pages/ that imports Streamlit: page setup, sign-in and shared widgets."""
from __future__ import annotations

import hmac

import streamlit as st

from assess import settings
from assess.errors import AssessError
from assess.formats import GRADES
from assess.text import inert_html

def _no_legacy_pages_mode() -> None:
    """Keep Streamlit out of its legacy ``pages/``-folder mode once this module is loaded.

    Streamlit decides per PagesManager whether a ``pages/`` folder beside the entry script means
    "run page scripts directly" (multipage v1); app.py uses st.navigation, so that mode must never
    apply. See :func:`frame_guard` for the very first run of a fresh server.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager.__init__, "_assess_patched", False):
        return
    original = PagesManager.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    __init__._assess_patched = True
    PagesManager.__init__ = __init__
    PagesManager.uses_pages_directory = False


_no_legacy_pages_mode()

CSS = """
<style>
.passage-text { font-size: 1.05rem; line-height: 1.6; padding: 0.8rem 1rem; border-radius: 0.4rem;
                background: rgba(127,127,127,0.08); white-space: normal; overflow-wrap: anywhere; }
.passage-text mark.qterm { background: #fff3a3; color: inherit; padding: 0 1px; }
.turn-user { font-weight: 600; }
</style>
"""


def db():
    """Open the store for this script run (a new connection per run; never cached across threads)."""
    from store import open_db

    return open_db(settings.db_path())


def ensure_started():
    """Create the store on first start and load the embedded demo when it is empty."""
    from store import open_db
    from store.loading import is_empty, load_demo

    if st.session_state.get("_store_checked"):
        return
    database = open_db(settings.db_path())
    if is_empty(database):
        with st.spinner("First start: loading the demo data…"):
            load_demo(database)
    st.session_state["_store_checked"] = True


def assessor() -> str | None:
    """The signed-in assessor (session), or None."""
    return st.session_state.get("assessor")


def sign_in_from_query(database) -> None:
    """Open mode: ``?assessor=NAME`` signs the assessor in."""
    from store.queue import sign_in

    name = st.query_params.get("assessor")
    if name and name != st.session_state.get("assessor") and settings.open_mode():
        try:
            st.session_state["assessor"] = sign_in(database, name)
        except AssessError as exc:
            st.session_state["sign_in_error"] = str(exc)


def sidebar_sign_in(database) -> None:
    """Sign-in box in the sidebar (assessor name; organizer password when one is configured)."""
    from store.queue import sign_in

    with st.sidebar:
        name = assessor()
        if name:
            st.markdown(f"Signed in as **{_plain(name)}**")
            if st.button("Sign out", key="sign_out"):
                st.session_state.pop("assessor", None)
                st.query_params.pop("assessor", None)
                st.rerun()
        else:
            with st.form("sign_in_form", border=False):
                entered = st.text_input("Assessor name", key="sign_in_name")
                if st.form_submit_button("Sign in"):
                    try:
                        st.session_state["assessor"] = sign_in(database, entered)
                        st.rerun()
                    except AssessError as exc:
                        st.error(str(exc))
        if "sign_in_error" in st.session_state:
            st.error(st.session_state.pop("sign_in_error"))
        password = settings.organizer_password()
        if password and not st.session_state.get("organizer"):
            entered = st.text_input("Organizer password", type="password", key="org_pw")
            if entered:
                if hmac.compare_digest(entered, password):
                    st.session_state["organizer"] = True   # navigation, built after this, now lists them
                else:
                    st.error("Wrong organizer password")


def is_organizer() -> bool:
    """Organizer pages are open when no password is configured ($ASSESS_ORGANIZER_PASSWORD)."""
    return settings.organizer_password() is None or bool(st.session_state.get("organizer"))


def _plain(text: str) -> str:
    """Escape markdown so a user-given string shows as typed."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|$<>~" else c for c in text)


def plain(text: str) -> str:
    return _plain(text)


def show_passage(text: str | None, terms=()) -> None:
    """Render untrusted passage text inertly (escaped), highlighting query terms; say so when text is absent."""
    st.markdown(CSS, unsafe_allow_html=True)
    if text is None:
        st.warning("Passage text not available (only its id is known; judged ClueWeb22 texts are licensed). "
                   "Judge from your own copy, or mark it 'cannot judge'.")
        return
    st.markdown(inert_html(text, terms), unsafe_allow_html=True)


def rubric() -> None:
    """The 0-4 grade rubric with its definitions."""
    st.markdown("\n".join(f"- **{g}** {name}" for g, name in sorted(GRADES.items(), reverse=True)))


def conversation(ctx: dict) -> None:
    """The conversation so far, the current utterance and its resolved form, and the PTKB."""
    for h in ctx["history"]:
        st.markdown(f"**User:** {_plain(h['utterance'] or '')}")
        if h["response"]:
            st.markdown(f"**System:** {_plain(h['response'])}")
    st.markdown(f"**User (now, {_plain(ctx['turn_id'])}):** {_plain(ctx['utterance'] or '')}")
    if ctx["resolved_utterance"]:
        st.info(f"Resolved: {_plain(ctx['resolved_utterance'])}")


def ptkb(ctx: dict) -> None:
    if not ctx["ptkb"]:
        st.caption("No PTKB statements for this conversation.")
    for s in ctx["ptkb"]:
        st.markdown(f"{_plain(s['id'])}. {_plain(s['text'])}")


# cache_resource, not cache_data: the order is immutable and shared, so no per-run copy of 20,000 items.
@st.cache_resource(max_entries=256, show_spinner=False)
def _cached_order(db_file: str, assessor_name: str, task: str, open_mode: bool, version: tuple):
    from store import open_db, queue as store_queue

    return store_queue.queue_order(open_db(db_file), assessor_name, task=task, open_mode=open_mode)


def load_queue(database, assessor_name: str, task: str = "passage"):
    """The assessor's queue; its item order is cached until the pool or their assignments change."""
    from store import queue as store_queue

    version = store_queue.queue_version(database, assessor_name)
    order = _cached_order(str(settings.db_path()), assessor_name, task, settings.open_mode(), version)
    return store_queue.load_queue(database, assessor_name, task=task, order=order)


def figure(fig, name: str) -> None:
    """Show a plotly figure with HTML and PNG downloads (PNG only when a headless browser is available)."""
    from assess.plots import figure_html

    st.plotly_chart(fig, width="stretch", key=f"chart_{name}")
    c1, c2 = st.columns(2)
    c1.download_button("Download HTML", figure_html(fig), file_name=f"{name}.html", mime="text/html",
                       key=f"html_{name}")
    if c2.button("Prepare PNG", key=f"png_{name}"):
        from assess.plots import figure_png

        png = figure_png(fig)
        if png is None:
            c2.warning("PNG export needs a headless Chromium (Debian package chromium) for kaleido.")
        else:
            c2.download_button("Download PNG", png, file_name=f"{name}.png", mime="image/png", key=f"pngdl_{name}")


def case_input(kind: str, label: str):
    """An uploaded scoring input, or the demo's; returns (document, file name) or (None, None) on bad input."""
    from assess import scoreboard

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

    def undo(self, database, name: str, task: str) -> None:
        """Callback: revert the assessor's last change and show the item it touched."""
        from store.queue import undo

        touched = undo(database, name, task)
        if touched:
            self.open(*touched)

    def nav_buttons(self, database, name: str, task: str, columns) -> None:
        """Previous (Left), Next (Right) and Undo (U) buttons in the given columns."""
        columns[0].button("Previous", key="prev", shortcut="Left", on_click=self.go, args=("prev",), width="stretch")
        columns[1].button("Next", key="next", shortcut="Right", on_click=self.go, args=("next",), width="stretch")
        columns[2].button("Undo", key="undo", shortcut="U", on_click=self.undo, args=(database, name, task),
                          width="stretch")


def frame_guard(organizer: bool = False) -> None:
    """First line of every page: make sure the app frame (app.py) is in charge.

    Streamlit runs a script of a ``pages/`` folder directly (its legacy multipage mode) until a
    session of the server has run ``st.navigation``; a first visitor of ``/judge`` or ``/data``
    would then skip sign-in, the demo start-up and the organizer password. Turn that mode off and
    rerun, which runs app.py with the same URL. Organizer pages also stop here without the password.
    """
    if not st.session_state.pop("_frame", False):   # app.py sets it on every run it makes
        from streamlit.runtime.pages_manager import PagesManager

        PagesManager.uses_pages_directory = False
        st.rerun()
    if organizer and not is_organizer():
        st.warning("This page is for organizers: enter the organizer password in the sidebar.")
        st.stop()


# ============================================================================================ crowd
# Helpers of the crowd worker page (pages/crowd.py). A crowd link (?study=NAME plus the platform's
# worker parameters) shows that page alone: no sign-in box, no organizer page, no navigation.

def crowd_frame() -> None:
    """In app.py, before sign-in: with ``?study=`` in the URL run only the crowd page (hidden navigation)."""
    from assess.crowd import STUDY_PARAM

    if STUDY_PARAM not in st.query_params:
        return
    st.session_state["_frame"] = True
    st.navigation([st.Page("pages/crowd.py", title="Study", icon=":material/groups:", url_path="crowd",
                           default=True)], position="hidden").run()
    st.stop()


def crowd_query() -> dict:
    """The crowd page's query parameters (study, platform ids)."""
    from assess.crowd import ENTRY_PARAMS

    return {key: st.query_params.get(key) for key in ENTRY_PARAMS}


def crowd_text(text: str | None, label: str) -> None:
    """One block of untrusted text (a response, a nugget, an utterance), rendered inertly under a label."""
    st.markdown(CSS, unsafe_allow_html=True)
    st.markdown(f"**{label}**")
    st.markdown(inert_html(text or ""), unsafe_allow_html=True)


def crowd_guideline(guide: dict, config) -> None:
    """The study's instructions, worked examples and (response studies) the rating scales."""
    from assess.crowd import CRITERIA

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
        st.markdown(f"{n}. {first}: *{_plain(str(ex.get('response', '')))}*  \n{second}: "
                    f"*{_plain(str(ex.get('nugget', '')))}*  \nAnswer: **{_plain(str(ex.get('answer', '')))}**: "
                    f"{_plain(str(ex.get('why', '')))}")


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


def crowd_completion(code: str | None, config, entry) -> None:
    """The end of a batch: the completion code, Prolific's return link, or the MTurk submit form."""
    from assess.crowd import PROLIFIC_COMPLETE, mturk_form_html

    st.success("Thank you: you have answered every item of your batch.")
    if entry.platform == "prolific" and config.prolific_code:
        st.markdown(f"Your Prolific completion code: **{config.prolific_code}**")
        st.link_button("Return to Prolific", PROLIFIC_COMPLETE + config.prolific_code, type="primary")
    st.markdown("Your completion code (keep it; paste it where the platform asks for it):")
    st.code(code or "", language=None)
    if entry.platform == "mturk" and entry.submit_to and entry.session:
        st.markdown(mturk_form_html(entry.submit_to, entry.session, code or ""), unsafe_allow_html=True)
