"""The app frame: the store of a script run, first start, sign-in, the organizer check, the page guard."""

from __future__ import annotations

import importlib
import logging
import threading
import weakref

import streamlit as st

from assess import settings, tasks
from assess.errors import AssessError
from assess.llm.entailment import configured_entailment
from assess.services.accounts import (
    SESSION_COOKIE,
    NotAllowed,
    SignInRefused,
    check_link,
    check_organizer_password,
    check_password,
    end_session,
    link_person,
    openid_sign_in,
    session_holder,
    start_session,
)
from assess.services.accounts import open_sign_in as store_open
from assess.services.accounts import register_assessor as sign_in
from assess.services.judging import StaleLabel
from assess.services.loading import is_empty, load_demo_if_empty
from assess.tasks import MenuPage, Role, Task
from assess.ui.assets import asset
from assess.ui.crowd import crowd_frame, crowd_link, crowd_page
from assess.ui.internals import cache_theme_messages, external_ip_off, legacy_pages_off, session_id, this_run
from assess.ui.widgets import error, esc, flash, line, set_flash
from store import open_db
from store.db import StoreBusy, StoreUnavailable, interrupt, interrupt_all, lock_wait, owns_store

legacy_pages_off()
cache_theme_messages()
external_ip_off()  # the server contacts nobody (docs/deploy.md)


def server_log() -> None:
    """Errors shown to users are logged on the server (stderr) with their detail, once per process."""
    import logging

    log = logging.getLogger("assess")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


STORE_FLASH = "store_flash"


def db():
    """The store of this browser session: opened on the session's first run and kept for its later runs
    (and the item panels' reruns), so a key press opens nothing. A store that cannot be reached stops
    the page with one plain message; a message a key press left (its label was not saved) is shown first.

    Runs of one session never overlap (Streamlit runs them one after another), so the handle is never
    used by two threads at once; on PostgreSQL it holds no server connection between units of work, on
    SQLite one connection per session, closed when the session ends.
    """

    flash(STORE_FLASH)
    target = str(settings.db_target())
    held = st.session_state.get(_SESSION_STORE)
    if held is not None and held.target == target:
        _hold(held)
        return held
    try:
        database = open_db(target)
    except StoreUnavailable as exc:
        store_unreachable(exc)
        st.stop()
    st.session_state[_SESSION_STORE] = database
    _hold(database)
    return database


_SESSION_STORE = "_store"

_SESSION_STORES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
"""Streamlit session id -> the store that session's runs use (:func:`db`), for :func:`interrupt_ended_sessions`;
weak, as the session's state holds the store (AppTest's sessions, never watched, leave nothing open)."""
_SESSIONS_LOCK = threading.Lock()


def _hold(database) -> None:
    """Note ``database`` as the store of the session now running (a plain dict entry: a key press pays nothing)."""
    session = session_id()
    if session is not None:
        with _SESSIONS_LOCK:
            _SESSION_STORES[session] = database


def interrupt_ended_sessions(is_active) -> list[str]:
    """Interrupt the running read of each noted session that ``is_active(session_id)`` says has ended, and forget
    it; returns those sessions' ids.

    A browser reload (or a closed tab) ends the page's session: Streamlit asks its script to stop, but a script
    blocked inside a query only sees that request when the query returns, minutes later for a slow organizer page,
    and meanwhile holds the session's connection (and, on SQLite, a core). A statement inside a write transaction is
    left to finish (``store.db.interrupt(reads_only=True)``): a change the person made is not dropped. An ended
    session that is later resumed (a reconnect with the same id) is noted again by its next run's :func:`db`."""

    with _SESSIONS_LOCK:
        ended = [(sid, held) for sid, held in list(_SESSION_STORES.items()) if not is_active(sid)]
        for sid, _held in ended:
            del _SESSION_STORES[sid]
    for _sid, held in ended:
        interrupt(held, reads_only=True)
    return [sid for sid, _held in ended]


def _not_saved(exc) -> str:
    if "may not have been saved" in str(exc):
        return "the connection to the store broke while saving; look whether your last key press shows before repeating it."
    return "the store cannot be reached; nothing was saved. Press the key again in a moment."


def saving(callback):
    """Wrap a key or button callback that writes to the store. Callbacks run before the page's script (and
    its sign-in checks), so this re-reads the person first: signed out elsewhere, disabled, reset, expired,
    or a changed role (a demoted organizer's open page) saves nothing, says why, and the whole page runs
    again as the person now is. A write the store refuses for the same reasons (checked in its own
    transaction) is said the same way. If the database cannot be reached (or the connection breaks while
    writing), the page says plainly that this change was not saved; nothing is half-written. A label the page
    drew before another tab or device changed it (:class:`store.labels.StaleLabel`) is not written either: the
    message says what is stored, by whom and when, and the panel, drawn again, shows it (a second press replaces
    it)."""
    import functools

    @functools.wraps(callback)
    def guarded(*args, **kwargs):
        try:
            if not still_signed_in(db()) or not _page_allowed():
                why = SESSION_ENDED if not assessor() else f"your role is now {role() or 'none'}; look again"
                set_flash("error", f"NOT SAVED: {why}", slot=STORE_FLASH)
                st.session_state["_rights_changed"] = True
                return None
            done = patiently(callback)(*args, **kwargs)
            if (kept := st.session_state.get(_RETRY)) is not None:  # Retry goes through these checks again
                st.session_state[_RETRY] = (guarded, *kept[1:])
            return done
        except NotAllowed as exc:
            set_flash("error", f"NOT SAVED: {exc}", slot=STORE_FLASH)
            st.session_state["_rights_changed"] = True
        except StaleLabel as exc:  # another tab or device labelled the item: the panel now shows what is stored
            set_flash("error", f"NOT SAVED: {exc}", slot=STORE_FLASH)
        except StoreUnavailable as exc:  # the detail (which names the store) goes to the server log only
            logging.getLogger("assess").warning("not saved: %s", exc)
            set_flash("error", f"NOT SAVED: {_not_saved(exc)}", slot=STORE_FLASH)

    return guarded


SAVE_QUIET_S = 0.3  # a press that gets the write lock within this shows nothing more
SAVE_WAIT_S = 10.0  # then "saving…" until this, then NOT SAVED with Retry
_RETRY = "_not_saved_press"
NOT_SAVED_BUSY = (
    "NOT SAVED: the store stayed busy for {wait:.0f} s (another write held it). Your press is kept here: "
    "Retry saves it."
)


def patiently(callback):
    """Wrap a writing callback (:func:`saving` does; the crowd page's answers too) so that its write waits at most
    :data:`SAVE_WAIT_S` for the store's write lock: quietly for :data:`SAVE_QUIET_S`, then with a visible
    "saving…" (a large import's switch, another process's long write). A press never meets the busy timeout and
    Streamlit's error page: past the wait nothing is written and the press is kept for :func:`not_saved_retry`."""
    import functools

    @functools.wraps(callback)
    def kept(*args, **kwargs):
        st.session_state.pop(_RETRY, None)  # a new press replaces a press not saved
        try:
            try:
                with lock_wait(SAVE_QUIET_S):
                    return callback(*args, **kwargs)
            except StoreBusy:
                st.toast("saving… (the store is busy)", icon="⏳")
            with lock_wait(SAVE_WAIT_S - SAVE_QUIET_S):
                return callback(*args, **kwargs)
        except StoreBusy as exc:
            logging.getLogger("assess").warning("not saved: %s", exc)
            st.session_state[_RETRY] = (kept, args, kwargs, _on_screen())
            return None

    return kept


def busy(exc: BaseException) -> bool:
    """Whether an error is the store's "busy" (:class:`store.db.StoreBusy`), which :func:`patiently` handles."""

    return isinstance(exc, StoreBusy)


def _on_screen() -> dict:
    """Every keyboard cursor's item on screen and shown label (session keys ``*_shown``, ``*_shown_own``): a
    kept press is retried only while the page still shows what it showed when the key was pressed."""
    return {
        k: st.session_state[k] for k in list(st.session_state) if k.endswith(("_shown", "_shown_own", "crowd_item"))
    }


def not_saved_retry() -> None:
    """Inside a key panel: a press the busy store did not save, kept with a Retry button (a press on it writes
    it, with the same stale-label check); dropped once the panel shows another item."""
    kept = st.session_state.get(_RETRY)
    if kept is None:
        return
    guarded, args, kwargs, screen = kept
    if _on_screen() != screen:
        st.session_state.pop(_RETRY, None)
        return
    st.error(NOT_SAVED_BUSY.format(wait=SAVE_WAIT_S))
    st.button("Retry", key="_not_saved_retry", on_click=guarded, args=args, kwargs=kwargs, type="primary")


def _page_allowed() -> bool:
    """Whether the person may still use the page whose widget called back: an organizer page's button, left
    on screen by a run made before a demotion took effect, writes nothing for an assessor."""
    needs = st.session_state.get("_page_needs")
    if needs == "organizer":
        return is_organizer()
    if needs == "adjudicator":
        return is_adjudicator()
    return True


STORE_UNREACHABLE = "The store cannot be reached, so nothing can be shown or saved now; try again in a moment."


def store_unreachable(exc) -> None:
    """Say plainly on the page that the store cannot be reached (the detail, which names the store, goes
    to the server log only)."""
    logging.getLogger("assess").warning("store unavailable: %s", exc)
    st.error(STORE_UNREACHABLE)


def key_panel(func):
    """``st.fragment`` for the item panel of a keyboard page: a key press re-runs only this panel. It shows
    the message a key's callback left (its label was not saved) and, when the store cannot be reached
    while drawing, says so instead of failing."""
    import functools

    @st.fragment
    @functools.wraps(func)
    def panel(*args, **kwargs):
        flash(STORE_FLASH)
        not_saved_retry()
        try:
            # disabled, demoted or signed out elsewhere (seen now, or by a key's callback): the whole page again
            if not still_signed_in(db()) or st.session_state.pop("_rights_changed", False):
                st.rerun(scope="app")
            return func(*args, **kwargs)
        except StoreUnavailable as exc:
            store_unreachable(exc)

    return panel


WARM_MODULES = ("scipy.stats", "assess.ui.plots", "assess.services.audit", "assess.measures.agreement")
"""What the organizer pages import beyond the frame: SciPy's statistics alone take about 1.5 s, which the first
/scores of a server's life would otherwise wait for (its AEPD tab's Kendall tau)."""

_WARMING = threading.Lock()


def served() -> bool:
    """True in an app served by ``streamlit run`` (its runtime); False under the CLI and under AppTest, which puts
    a stand-in of the runtime (a mock) in place only while its script runs."""
    from streamlit import runtime

    return runtime.exists() and type(runtime.get_instance()) is runtime.Runtime


def import_modules(names=None) -> None:
    """Import ``names`` (default :data:`WARM_MODULES`); a failure is logged, never raised: the page that needs
    the module raises it then."""
    for name in WARM_MODULES if names is None else names:
        try:
            importlib.import_module(name)
        except Exception:
            logging.getLogger("assess").exception("could not import %s ahead of the pages", name)


def _start_once(name: str, target) -> bool:
    """In a served app (:func:`served`), start ``target`` in a daemon thread called ``name``, once per process;
    True when this call started it."""
    if not served():
        return False
    with _WARMING:
        if name in _STARTED:
            return False
        _STARTED.add(name)
    threading.Thread(target=target, name=name, daemon=True).start()
    return True


_STARTED: set[str] = set()


def warm_imports() -> bool:
    """In a served app (:func:`served`), start importing :data:`WARM_MODULES` in a background thread, once per
    process; True when this call started it."""
    return _start_once("assess-warm-imports", import_modules)


def _interrupt_when_stopping(poll: float = 0.2) -> None:
    """Each ``poll`` seconds, interrupt the running reads of the sessions that ended (a reload, a closed tab:
    :func:`interrupt_ended_sessions`); once the server stops (SIGTERM, SIGINT: Streamlit's own handler stops its
    runtime), interrupt every store's running statement, again each ``poll`` seconds until the process exits: a
    page inside a minutes-long query would otherwise keep the process alive until that query ends."""
    import time

    from streamlit import runtime
    from streamlit.runtime import RuntimeState

    stopping = (RuntimeState.STOPPING, RuntimeState.STOPPED)
    while True:
        try:
            instance = runtime.get_instance()
            if instance.state in stopping:
                break
            ended = interrupt_ended_sessions(instance.is_active_session)
            if ended:  # a reload, a closed tab, or the server closing every tab as it stops
                logging.getLogger("assess").info("interrupted the running reads of %d ended session(s)", len(ended))
        except RuntimeError:  # no runtime any more (it was stopped and removed): nothing left to watch
            break
        time.sleep(poll)
    logging.getLogger("assess").info("the server is stopping: interrupting the stores' running statements")
    while True:
        interrupt_all()
        time.sleep(poll)


def interrupt_on_shutdown() -> bool:
    """In a served app (:func:`served`), start (once per process) the daemon thread that interrupts the stores'
    running statements when the server stops (:func:`_interrupt_when_stopping`); True when this call started it."""
    return _start_once("assess-interrupt-on-shutdown", _interrupt_when_stopping)


def ensure_started():
    """Create the store on first start and load the embedded demo when it is empty; a served app's first
    session also starts importing the organizer pages' modules in the background (:func:`warm_imports`) and
    the watch that interrupts running queries when the server stops (:func:`interrupt_on_shutdown`)."""

    if st.session_state.get("_store_checked"):
        return
    warm_imports()
    interrupt_on_shutdown()

    database = open_db(settings.db_target())  # a store that cannot be opened at all fails here, redacted
    st.session_state[_SESSION_STORE] = database  # kept for the session's runs (see db())
    _hold(database)
    _warn_when_owner(database)
    if database.location not in _FILLED and is_empty(database):
        with st.spinner("First start: loading the demo data…"):
            load_demo_if_empty(database)
    _FILLED.add(database.location)  # checked once per process: every later session (a crowd worker's) skips it
    st.session_state["_store_checked"] = True


_FILLED: set[str] = set()
"""Stores this process found holding data (or filled with the demo): a new session need not count their rows."""


_OWNERS_SEEN: set[str] = set()


def _warn_when_owner(database) -> None:
    """Log once per process and store when the app connects to PostgreSQL as a role owning the tables, which
    could switch the history triggers off (docs/deploy.md: a campaign's app connects as a role of its own)."""

    if database.sqlite or database.location in _OWNERS_SEEN:
        return
    _OWNERS_SEEN.add(database.location)
    if owns_store(database):
        server_log()
        logging.getLogger("assess").warning(
            "%s: the app connects as a role that owns the store's tables, which could rewrite the label "
            "history; give the app a role of its own (python -m assess init --app-role, docs/deploy.md)",
            database.location,
        )


def assessor() -> str | None:
    """The signed-in assessor (session), or None."""
    return st.session_state.get("assessor")


def role() -> str | None:
    """The signed-in account's role (assessor, adjudicator, organizer); None for a name typed in open mode."""
    return st.session_state.get("role") if assessor() else None


def actor() -> str | None:
    """Who acts, for the history of organizer actions: the signed-in name (``open:NAME`` for a name typed in
    open mode, ``open`` for nobody signed in there)."""
    name = assessor()
    if role():
        return name
    return f"open:{name}" if name else ("open" if open_sign_in() else None)


def open_sign_in() -> bool:
    """Open mode for this run (set by :func:`sign_in_from_query`; read from the store when a legacy run asks
    before app.py has run): anyone signs in by typing a name."""
    if "_open_mode" not in st.session_state:
        st.session_state["_open_mode"] = store_open(db(), settings.open_mode_setting())
    return bool(st.session_state["_open_mode"])


def require_assessor(page: str) -> str:
    """The signed-in assessor, or stop the page with how to sign in."""
    name = assessor()
    if not name:
        if open_sign_in():
            st.info(f"Sign in with your assessor name in the sidebar, or open /{page}?assessor=NAME.")
        else:
            st.info("Sign in with your account in the sidebar (or open your personal sign-in link).")
        st.stop()
    return name


def _client_address() -> str | None:
    """The client's address: Streamlit's, or behind our own proxy ($ASSESS_TRUST_PROXY=1) the last
    X-Forwarded-For entry (the one that proxy added)."""
    try:
        if settings.trust_forwarded_for():
            forwarded = st.context.headers.get("X-Forwarded-For") or ""
            if forwarded.strip():
                return forwarded.split(",")[-1].strip()
        # Streamlit gives None for a peer on this machine (a local proxy, or a browser on the host):
        # those count as one address, "local" (docs/accounts.md: set ASSESS_TRUST_PROXY behind a proxy).
        return st.context.ip_address or "local"
    except Exception:  # no browser connection (tests without a context)
        return None


SESSION_ENDED = (
    "your sign-in ended (signed out elsewhere, the account was disabled or reset, or the session expired); "
    "sign in again"
)

_session_component = st.components.v2.component("assess_session", js=asset("session.js"), isolate_styles=False)


def begin_session(database, name: str, role: str | None, *, via: str) -> None:
    """Start a session for ``name`` (an account with ``role``, or an open-mode name when ``role`` is None):
    a row in the store and, from the next run on, its cookie in the browser, so that a reload, a bookmark or
    another tab keeps the person signed in."""

    secret = start_session(database, name, kind="account" if role else "open", via=via)
    st.session_state["assessor"] = name
    st.session_state["_session_secret"] = secret
    st.session_state.pop("_cookie_clear", None)
    if role:
        st.session_state["role"] = role
    else:
        st.session_state.pop("role", None)
    st.session_state.pop("organizer", None)


def renew_session(database) -> None:
    """A new session for the person signed in here, after an action of theirs ended their sessions (a reset
    of their own password ends every session of the account, this one too)."""
    name, held = assessor(), role()
    if name and held:
        begin_session(database, name, held, via="password")


def _forget(*, clear_cookie: bool) -> None:
    for key in ("assessor", "role", "organizer", "_session_secret"):
        st.session_state.pop(key, None)
    if clear_cookie:
        st.session_state["_cookie_clear"] = True


def sign_out() -> None:
    """End this person's sessions everywhere (every tab and browser) and forget them here."""

    secret = st.session_state.get("_session_secret")
    if secret:
        end_session(db(), secret, everywhere=True)
    _forget(clear_cookie=True)
    st.query_params.pop("assessor", None)


def still_signed_in(database) -> bool:
    """Re-read the signed-in person's session and account from the store (at every script and fragment run,
    and before every write a callback makes): a session that ended or expired, or an account disabled or
    gone, signs the person out; a changed role takes effect now. True when nothing changed (also when nobody
    is signed in); False when it did (a fragment then re-runs the whole page).

    One read per script run: a key's callback reads before its write, and the run it starts (the item panel's
    fragment, or the frame's full run) does not read again. Every write still reads first (a callback is the
    start of a new run), and the store checks the writer again inside the write's transaction."""

    secret = st.session_state.get("_session_secret")
    if not secret:
        return True
    run = this_run()
    held = st.session_state.get(_READ_IN_RUN)
    if run is not None and held is not None and held[0] is run and held[1] == secret:
        return True  # read already in this run (by a key's callback, or by the frame): one read per run
    holder = session_holder(database, secret)
    if holder is None or (holder.role is None and not open_sign_in()):
        _forget(clear_cookie=True)
        st.session_state["sign_in_error"] = SESSION_ENDED
        return False
    role_now = holder.role.value if holder.role else None
    if role_now != st.session_state.get("role"):
        if role_now:
            st.session_state["role"] = role_now
        else:
            st.session_state.pop("role", None)
        return False
    st.session_state[_READ_IN_RUN] = (run, secret)
    return True


_READ_IN_RUN = "_session_read_in_run"
"""(the run, the session secret) of the last read that found the person unchanged (:func:`still_signed_in`)."""


def _cookie_secret() -> str | None:
    from urllib.parse import unquote

    try:
        given = st.context.cookies.get(SESSION_COOKIE)
    except Exception:  # no browser connection (tests without a context)
        return None
    return unquote(given) if isinstance(given, str) and given else None


def _resume(database) -> None:
    """A page load (reload, bookmark, another tab) that brings the cookie of a live session: signed in again
    as that person, with the account's current role."""

    secret = _cookie_secret()
    if not secret or st.session_state.get("_cookie_clear"):
        return
    holder = session_holder(database, secret)
    if holder is None or (holder.role is None and not open_sign_in()):
        return
    st.session_state["assessor"] = holder.name
    st.session_state["_session_secret"] = secret
    if holder.role:
        st.session_state["role"] = holder.role.value
    else:
        st.session_state.pop("role", None)


def session_cookie(database) -> str | None:
    """Keep the browser's session cookie in step with this session (written while signed in, removed after
    a sign-out) and return a sign-in link's token that the page found in the address's fragment."""

    data: dict = {"name": SESSION_COOKIE}
    secret = st.session_state.get("_session_secret")
    if secret:
        try:
            data.update(set=secret, max_age=int(settings.session_hours() * 3600))
        except ValueError as exc:
            error("", exc)
    elif st.session_state.get("_cookie_clear"):
        data["clear"] = True
    with st.sidebar:
        result = _session_component(key="assess_session", data=data, on_signin_change=lambda: None)
    return getattr(result, "signin", None) if result is not None else None


def openid_configured() -> bool:
    """True when the deployment configures OpenID Connect (an ``[auth]`` table in .streamlit/secrets.toml)."""
    try:
        return bool(st.secrets.load_if_toml_exists() and "auth" in st.secrets)
    except Exception:
        return False


def _openid_sign_in(database) -> None:
    """Match the identity provider's user (st.user) to an account by email only (a display name is the user's own
    choice at the provider); only an address the provider marks verified (``email_verified`` the JSON value true)
    matches, a claim of the wrong type is refused with a message, and a provider sign-in older than the account's
    last sign-out or reset opens nothing (:func:`assess.services.accounts.openid_sign_in`)."""

    user = st.user
    if not user.is_logged_in or assessor():
        return
    try:
        person = openid_sign_in(database, user.to_dict())
        begin_session(database, person.name, person.role.value, via="openid")
    except AssessError as exc:
        st.session_state["sign_in_error"] = str(exc)
    else:
        st.rerun()


def sign_in_from_query(database, link_token: str | None = None) -> None:
    """Decide this run's sign-in mode and who is signed in: a personal link's token (from the address's
    fragment, ``link_token``, or a legacy ``?signin=``), the identity provider's user, the session this
    browser session holds (re-read from the store: disabled, signed out elsewhere or demoted take effect
    now), the session cookie of a page load, or in open mode ``?assessor=NAME``. With accounts,
    ``?assessor=`` signs nobody in. Another account's link in a browser signed in is only asked about
    (:func:`link_switch_question`)."""

    open_mode = store_open(database, settings.open_mode_setting())
    st.session_state["_open_mode"] = open_mode
    st.session_state.pop("_rights_changed", None)  # a full run shows the person as they are now (below)
    token = link_token or st.query_params.get("signin")
    if st.query_params.get("signin"):
        st.query_params.pop("signin", None)  # the token leaves the address bar (and its history) at once
    if openid_configured() and not token:  # a link's token comes first (the provider's user: next run)
        _openid_sign_in(database)
    still_signed_in(database)  # this run shows the person as the store has them now
    if not assessor():
        _resume(database)  # before a link's token: a browser signed in by its cookie is asked before a switch
    if token:
        st.session_state.pop(_LINK_SWITCH, None)  # a newer link replaces a question not yet answered
        try:
            linked = link_person(database, token)
        except AssessError as exc:
            st.session_state["sign_in_error"] = str(exc)
        else:
            if assessor() and assessor() != linked.name:
                # Login CSRF: a link someone sent must not silently sign this browser in as its account
                # (what the person then judges would be stored under it). The page asks (link_switch_question).
                st.session_state[_LINK_SWITCH] = (token, linked.name)
            elif _use_link(database, token):
                st.rerun()  # the whole page as the person signed in, and their session cookie written
    name = st.query_params.get("assessor")
    if name and name != assessor() and open_mode and not role():
        try:  # no rerun: this run goes on to the page the address names (a rerun here would open Home)
            begin_session(database, sign_in(database, name, guest=True), None, via="open")
        except AssessError as exc:
            st.session_state["sign_in_error"] = str(exc)


_LINK_SWITCH = "_link_switch"
"""(token, account) of a sign-in link opened while someone else is signed in, until Switch or Stay."""


def _use_link(database, token: str) -> bool:
    try:
        person = check_link(database, token)
        _forget(clear_cookie=False)
        begin_session(database, person.name, person.role.value, via="link")
    except AssessError as exc:
        st.session_state["sign_in_error"] = str(exc)
        return False
    return True


def _switch_to_link(database) -> None:
    pending = st.session_state.pop(_LINK_SWITCH, None)
    if pending:
        _use_link(database, pending[0])  # the link is used only now (Stay leaves it unused)


def _stay() -> None:
    st.session_state.pop(_LINK_SWITCH, None)


def link_switch_question(database) -> bool:
    """Ask "You are signed in as X. Switch to Y?" for a sign-in link of another account opened in a browser
    signed in as X; only Switch uses the link. True while the question is open (the page is not run)."""
    pending = st.session_state.get(_LINK_SWITCH)
    if not pending:
        return False
    current = assessor()
    if not current or current == pending[1]:  # signed out meanwhile, or already that person: nothing to switch
        st.session_state.pop(_LINK_SWITCH, None)
        return False
    st.warning(f"You are signed in as **{esc(current)}**. Switch to **{esc(pending[1])}**?")
    st.caption(
        "You opened a sign-in link of another account. Switch only if the link was meant for you: whatever you "
        "judge after switching is stored under that account."
    )
    switch, stay = st.columns([1, 1], gap="small", width=320)
    switch.button("Switch", key="link_switch", type="primary", on_click=_switch_to_link, args=(database,))
    stay.button("Stay", key="link_stay", on_click=_stay)
    return True


def _password_form(database) -> None:
    with st.form("account_sign_in_form", border=False):
        name = st.text_input("Account name", key="account_name")
        password = st.text_input("Password", type="password", key="account_password")
        if st.form_submit_button("Sign in", key="account_sign_in"):
            try:
                person = check_password(database, name, password, address=_client_address())
                begin_session(database, person.name, person.role.value, via="password")
                st.rerun()
            except AssessError as exc:
                error("", exc)


def sidebar_sign_in(database) -> None:
    """Sign-in box in the sidebar: the open-mode notice; who is signed in; a name (open mode), a password or
    the identity provider; in open mode also the legacy organizer password when one is configured."""

    open_mode = open_sign_in()
    with st.sidebar:
        if open_mode:
            st.warning("Open mode: anyone can sign in under any name (a local demo). See docs/accounts.md.")
        name = assessor()
        if name:
            line("Signed in as", name)
            if role():
                st.caption(f"Role: {role()}")
            if st.button("Sign out", key="sign_out"):
                sign_out()
                if openid_configured() and st.user.is_logged_in:
                    st.logout()  # the browser goes to Streamlit's logout, which clears its login cookie
                    st.stop()  # no rerun: it would take the place of that redirect
                st.rerun()
        elif openid_configured():
            if st.button("Sign in with your organization's account", key="openid_sign_in"):
                st.login()
        elif open_mode:
            with st.form("sign_in_form", border=False):
                entered = st.text_input("Assessor name", key="sign_in_name")
                if st.form_submit_button("Sign in"):
                    try:
                        begin_session(database, sign_in(database, entered, guest=True), None, via="open")
                        st.rerun()
                    except AssessError as exc:
                        error("", exc)
            with st.expander("Sign in with an account"):
                _password_form(database)
        else:
            _password_form(database)
        if "sign_in_error" in st.session_state:
            error("", st.session_state.pop("sign_in_error"))
        password = settings.organizer_password()
        if open_mode and not role() and password and not st.session_state.get("organizer"):
            st.text_input(
                "Organizer password",
                type="password",
                key="org_pw",
                on_change=_check_organizer_password,
                args=(database, password),
            )
            if "org_pw_error" in st.session_state:
                error("", st.session_state.pop("org_pw_error"))


def _check_organizer_password(database, password: str) -> None:
    """The organizer password field's callback: checked once per entry (a rerun does not count it again), as
    UTF-8 bytes and under the accounts' failure limits per client address."""

    entered = st.session_state.get("org_pw") or ""
    if not entered:
        return
    try:
        right = check_organizer_password(database, entered, password, address=_client_address())
    except SignInRefused as exc:
        st.session_state["org_pw_error"] = exc
        return
    if right:
        st.session_state["organizer"] = True  # navigation, built after this, now lists them
    else:
        st.session_state["org_pw_error"] = "Wrong organizer password"


HOME = MenuPage("pages/home.py", "Home", "🏠", "home")
NUGGETS = MenuPage("pages/nuggets.py", "Passage nuggets", "💬", "nuggets")
OTHER_ASSESSOR_PAGES = (
    MenuPage("pages/duplicates.py", "Duplicate nuggets", "🔗", "duplicates"),
    MenuPage("pages/gold_response.py", "Gold responses", "🖊", "gold-response"),
)
ADJUDICATION = MenuPage("pages/adjudicate.py", "Adjudicate", "⚖", "adjudicate", Role.ORGANIZER)
ORGANIZER_PAGES = (
    MenuPage("pages/data.py", "Import & export", "📤", "data", Role.ORGANIZER),
    MenuPage("pages/review.py", "Review", "📊", "review", Role.ORGANIZER),
    ADJUDICATION,
    MenuPage("pages/scores.py", "Scores", "📈", "scores", Role.ORGANIZER),
    MenuPage("pages/audit.py", "Judge audit", "🤖", "audit", Role.ORGANIZER),
    MenuPage("pages/llm.py", "LLM pre-judging", "🧠", "llm", Role.ORGANIZER),
    MenuPage("pages/response_nuggets.py", "Response nuggets (GFRC2)", "🖍", "response-nuggets", Role.ORGANIZER),
    MenuPage("pages/aspects.py", "Aspects (AEPD)", "🗂", "aspects", Role.ORGANIZER),
)
ACCOUNTS = MenuPage("pages/users.py", "Accounts", "🔑", "users", Role.ORGANIZER)

_BEFORE_NUGGETS = (Task.PASSAGE, Task.PTKB)
"""The label kinds whose judging pages the menu lists before the nugget page (its order since that page came)."""


def menu() -> tuple[list[MenuPage], list[MenuPage]]:
    """The workbench's pages as the menu lists them: (assessor pages, organizer pages), in order.

    A label kind's judging page comes from the registry (:attr:`assess.tasks.LabelKind.page`), in registry
    order: an assessor page among the judging pages (after the nugget page, but for the passage and PTKB
    pages before it), an organizer page after the other organizer pages, before Accounts. So a new kind's
    page is listed without an edit here."""
    kinds = [k for k in tasks.LABEL_KINDS.values() if k.page is not None]
    judging = [k for k in kinds if k.page.role is Role.ASSESSOR]
    first = [k.page for k in judging if k.task in _BEFORE_NUGGETS]
    later = [k.page for k in judging if k.task not in _BEFORE_NUGGETS]
    organizing = [k.page for k in kinds if k.page.role is Role.ORGANIZER]
    return [HOME, *first, NUGGETS, *later, *OTHER_ASSESSOR_PAGES], [*ORGANIZER_PAGES, *organizing, ACCOUNTS]


def _page(page: MenuPage, *, hidden: bool = False):
    return st.Page(
        page.script,
        title=page.title,
        icon=page.icon,
        url_path=page.url_path,
        default=page is HOME,
        visibility="hidden" if hidden else "visible",
    )


def app_pages() -> tuple[list, list]:
    """The workbench's pages: (assessor pages, organizer pages), in navigation order (:func:`menu`)."""
    assessor_pages, organizer_pages = menu()
    return [_page(p) for p in assessor_pages], [_page(p) for p in organizer_pages]


def adjudication_page():
    return _page(ADJUDICATION)


def navigation_pages() -> dict[str, list]:
    """The menu for the signed-in role: everyone's pages; organizers' pages (adjudication among them)
    for organizers; the adjudication page alone for adjudicators. Every other page is in the navigation
    too, unlisted: its address (a bookmark, a link) is known to everyone, so a visitor who is signed out or
    has another role gets that page's own guard (sign in in the sidebar, or "this page is for organizers")
    instead of "Page not found", and after signing in, the page itself."""
    assess_pages, organizer_pages = app_pages()
    pages = {"Assess": assess_pages}
    if is_organizer():
        pages["Organize"] = organizer_pages
        return pages
    if is_adjudicator():
        pages["Adjudicate"] = [adjudication_page()]
    listed = {p.url_path for p in (ADJUDICATION,)} if is_adjudicator() else set()
    _, organizer_menu = menu()
    pages["Assess"] = assess_pages + [_page(p, hidden=True) for p in organizer_menu if p.url_path not in listed]
    return pages


def run_frame(database) -> None:
    """The rest of app.py's run: a visitor with a crowd study link gets that study's page alone (no
    sign-in, no other page); anyone else signs in and gets the page the address asks for, in their
    role's menu. A store that goes away meanwhile is one plain message on the page, nothing else."""

    try:
        crowd_frame()
        sign_in_from_query(database)
        # The cookie follows this run's sign-in at once (a reload right after it keeps the person); a
        # personal link's token, which the same element reads from the address, signs in and reruns.
        link = session_cookie(database)
        if link:
            sign_in_from_query(database, link)
        sidebar_sign_in(database)
        release_keys_from_inputs()
        page = st.navigation(navigation_pages(), expanded=True)  # every page listed (no "View more")
        if not link_switch_question(database):
            page.run()
    except StoreUnavailable as exc:
        store_unreachable(exc)


_key_release_component = st.components.v2.component(
    "assess_key_release", js=asset("key_release.js"), isolate_styles=False
)


def release_keys_from_inputs() -> None:
    """Give the single-key shortcuts back after any widget is used (``assets/ui/key_release.js``): Streamlit ignores
    a shortcut while the focus is in any form control, and a toggle, a select or a radio keeps the focus after a
    click. Drawn by the frame (in the sidebar, where it takes no room) on every full run of every page."""
    with st.sidebar:
        _key_release_component(key="assess_key_release", data={})


def leave_legacy_run(*, rerun: bool) -> None:
    """Leave a run Streamlit started in its legacy pages mode (see :func:`assess.ui.internals.legacy_run`):
    replace the list of every page script it has just sent with the navigation app.py shows (the same
    addresses, so the URL asked for stays valid). From app.py the run then goes on as the frame; from a
    page script run directly (``rerun``) app.py runs again first."""

    if crowd_link() is not None:  # as crowd_frame: a default page (it has no address of its own), then /crowd
        st.navigation([st.Page(_crowd_start, title="Study", default=True), crowd_page()], position="hidden")
    else:
        st.navigation(navigation_pages(), expanded=True)
    if rerun:
        st.rerun()


def _crowd_start() -> None:  # never run: app.py's rerun of the crowd frame takes over
    pass


def is_organizer() -> bool:
    """An organizer account is signed in; in open mode also (legacy) anyone when no $ASSESS_ORGANIZER_PASSWORD
    is configured, or whoever entered it."""
    if role():
        return role() == "organizer"
    if not open_sign_in():
        return False
    return settings.organizer_password() is None or bool(st.session_state.get("organizer"))


def is_adjudicator() -> bool:
    """May adjudicate: an adjudicator or organizer account (in open mode: whoever is an organizer)."""
    return role() == "adjudicator" or is_organizer()


def frame_guard(organizer: bool = False, adjudicator: bool = False) -> None:
    """First line of every page: make sure the app frame (app.py) is in charge.

    Streamlit runs a script of a ``pages/`` folder directly (its legacy multipage mode) until a
    session of the server has run ``st.navigation``; a first visitor of ``/judge`` or ``/data``
    would then skip sign-in, the demo start-up and the organizer password. Turn that mode off and
    rerun, which runs app.py with the same URL. Organizer pages stop here for anyone but an organizer,
    the adjudication page for anyone but an adjudicator or organizer.
    """
    if not st.session_state.pop("_frame", False):  # app.py sets it on every run it makes
        legacy_pages_off()
        leave_legacy_run(rerun=True)
    # what this page's writing callbacks need (saving() checks it again when a button or key writes)
    st.session_state["_page_needs"] = "organizer" if organizer else "adjudicator" if adjudicator else None
    if organizer and not is_organizer():
        if open_sign_in():
            st.warning("This page is for organizers: enter the organizer password in the sidebar.")
        elif assessor():
            st.warning(
                f"This page is for organizers: you are signed in as {esc(assessor())} ({role() or 'no role'}). "
                "Sign out and sign in with an organizer account to open it."
            )
        else:
            st.warning("This page is for organizers: sign in with an organizer account in the sidebar to open it.")
        st.stop()
    if adjudicator and not is_adjudicator():
        if assessor():
            st.warning(
                f"This page is for adjudicators: you are signed in as {esc(assessor())} ({role() or 'no role'}). "
                "Sign out and sign in with an adjudicator or organizer account to open it."
            )
        else:
            st.warning(
                "This page is for adjudicators: sign in with an adjudicator or organizer account in the sidebar "
                "to open it."
            )
        st.stop()


@st.cache_resource(show_spinner=False)
def entailment_judge(model: str | None):
    """The duplicate suggester: the NLI judge of ``model`` (cached per server), else the lexical one."""

    return configured_entailment(model)
