"""The app frame: the store of a script run, first start, sign-in, the organizer check, the page guard."""

from __future__ import annotations

import hmac

import streamlit as st

from assess import settings
from assess.errors import AssessError
from assess.ui.internals import legacy_pages_off
from assess.ui.widgets import error, line

legacy_pages_off()


def server_log() -> None:
    """Errors shown to users are logged on the server (stderr) with their detail, once per process."""
    import logging

    log = logging.getLogger("assess")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def db():
    """Open the store for this script run (a new connection per run; never cached across threads)."""
    from store import open_db

    return open_db(settings.db_path())


def ensure_started():
    """Create the store on first start and load the embedded demo when it is empty."""
    from assess.services.loading import is_empty, load_demo
    from store import open_db

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


def require_assessor(page: str) -> str:
    """The signed-in assessor, or stop the page with how to sign in."""
    name = assessor()
    if not name:
        st.info(f"Sign in with your assessor name in the sidebar, or open /{page}?assessor=NAME.")
        st.stop()
    return name


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
            line("Signed in as", name)
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
                        error("", exc)
        if "sign_in_error" in st.session_state:
            error("", st.session_state.pop("sign_in_error"))
        password = settings.organizer_password()
        if password and not st.session_state.get("organizer"):
            entered = st.text_input("Organizer password", type="password", key="org_pw")
            if entered:
                if hmac.compare_digest(entered, password):
                    st.session_state["organizer"] = True  # navigation, built after this, now lists them
                else:
                    st.error("Wrong organizer password")


def app_pages() -> tuple[list, list]:
    """The workbench's pages: (assessor pages, organizer pages), in navigation order."""
    assess_pages = [
        st.Page("pages/home.py", title="Home", icon="🏠", url_path="home", default=True),
        st.Page("pages/judge.py", title="Judge passages", icon="📝", url_path="judge"),
        st.Page("pages/ptkb.py", title="PTKB relevance", icon="👤", url_path="ptkb"),
        st.Page("pages/nuggets.py", title="Passage nuggets", icon="💬", url_path="nuggets"),
        st.Page("pages/ntr.py", title="Nugget matching (NtR)", icon="✅", url_path="ntr"),
        st.Page("pages/duplicates.py", title="Duplicate nuggets", icon="🔗", url_path="duplicates"),
        st.Page("pages/gold_response.py", title="Gold responses", icon="🖊", url_path="gold-response"),
    ]
    organizer_pages = [
        st.Page("pages/data.py", title="Import & export", icon="📤", url_path="data"),
        st.Page("pages/review.py", title="Review", icon="📊", url_path="review"),
        st.Page("pages/scores.py", title="Scores", icon="📈", url_path="scores"),
        st.Page("pages/audit.py", title="Judge audit", icon="🤖", url_path="audit"),
        st.Page("pages/llm.py", title="LLM pre-judging", icon="🧠", url_path="llm"),
        st.Page(
            "pages/response_nuggets.py",
            title="Response nuggets (GFRC2)",
            icon="🖍",
            url_path="response-nuggets",
        ),
        st.Page("pages/aspects.py", title="Aspects (AEPD)", icon="🗂", url_path="aspects"),
    ]
    return assess_pages, organizer_pages


def leave_legacy_run(*, rerun: bool) -> None:
    """Leave a run Streamlit started in its legacy pages mode (see :func:`assess.ui.internals.legacy_run`):
    replace the list of every page script it has just sent with the navigation app.py shows (the same
    addresses, so the URL asked for stays valid). From app.py the run then goes on as the frame; from a
    page script run directly (``rerun``) app.py runs again first."""
    from assess.ui.crowd import crowd_link, crowd_page

    if crowd_link() is not None:  # as crowd_frame: a default page (it has no address of its own), then /crowd
        st.navigation([st.Page(_crowd_start, title="Study", default=True), crowd_page()], position="hidden")
    else:
        assess_pages, organizer_pages = app_pages()
        st.navigation({"Assess": assess_pages, **({"Organize": organizer_pages} if is_organizer() else {})})
    if rerun:
        st.rerun()


def _crowd_start() -> None:  # never run: app.py's rerun of the crowd frame takes over
    pass


def is_organizer() -> bool:
    """Organizer pages are open when no password is configured ($ASSESS_ORGANIZER_PASSWORD)."""
    return settings.organizer_password() is None or bool(st.session_state.get("organizer"))


def frame_guard(organizer: bool = False) -> None:
    """First line of every page: make sure the app frame (app.py) is in charge.

    Streamlit runs a script of a ``pages/`` folder directly (its legacy multipage mode) until a
    session of the server has run ``st.navigation``; a first visitor of ``/judge`` or ``/data``
    would then skip sign-in, the demo start-up and the organizer password. Turn that mode off and
    rerun, which runs app.py with the same URL. Organizer pages also stop here without the password.
    """
    if not st.session_state.pop("_frame", False):  # app.py sets it on every run it makes
        legacy_pages_off()
        leave_legacy_run(rerun=True)
    if organizer and not is_organizer():
        st.warning("This page is for organizers: enter the organizer password in the sidebar.")
        st.stop()


@st.cache_resource(show_spinner=False)
def entailment_judge(model: str | None):
    """The duplicate suggester: the NLI judge of ``model`` (cached per server), else the lexical one."""
    from assess.llm.entailment import configured_entailment

    return configured_entailment(model)
