"""The crowd worker page (pages/crowd.py): a crowd link (?study=NAME plus the platform's worker
parameters) shows that page alone: no sign-in box, no organizer page, no navigation."""

from __future__ import annotations

import streamlit as st

from assess.crowd.entry import ENTRY_PARAMS, PROLIFIC_COMPLETE, STUDY_PARAM, mturk_form_html
from assess.crowd.rules import CRITERIA, NTR_GRADED_QUESTION, NTR_QUESTION, UNABLE, answer_caption
from assess.services import crowd_work
from assess.services.accounts import SESSION_COOKIE
from assess.services.crowd_work import consent
from assess.tasks import SUPPORT
from assess.text import inert_html, inert_images, line_html
from assess.ui.assets import asset
from assess.ui.widgets import esc

CROWD_COOKIE = "assess_crowd"  # the crowd link this browser follows (brings the crowd page back)
CROWD_COOKIE_SECONDS = 7 * 24 * 3600
CROWD_ID_PREFIX = "assess_crowd_id_"  # + a digest of (study, worker id): that worker's binding secret
CROWD_ID_SECONDS = 90 * 24 * 3600
LEAVE_PARAM = "leave-study"  # /?leave-study=1: this browser forgets its crowd link
SIGN_IN_PARAMS = ("signin", "assessor")  # an address that signs someone in is not a crowd visit

_crowd_mark = st.components.v2.component("assess_crowd_mark", js=asset("crowd_mark.js"), isolate_styles=False)


def _cookie(name: str) -> str | None:
    """The value of this browser's cookie ``name`` as the session's first request sent it (None if absent)."""
    try:
        value = st.context.cookies.get(name)
    except Exception:  # no browser connection
        return None
    return value if isinstance(value, str) and value else None


def _someone_signed_in() -> bool:
    """A person is signed in in this session (or by the identity provider), or the address signs one in."""

    if st.session_state.get("assessor") or any(key in st.query_params for key in SIGN_IN_PARAMS):
        return True
    if _cookie(SESSION_COOKIE):  # a sign-in session this browser holds (resumed by the frame after this check)
        return True
    try:
        return bool(st.user.is_logged_in)
    except Exception:  # no identity provider configured
        return False


def crowd_link() -> dict[str, str] | None:
    """The crowd link this visit follows, None for the workbench. In order: ``?study=…`` in the address
    (its entry parameters); ``?leave-study=1`` (None); a signed-in person or a sign-in address (None); the
    link this session entered with; the link this browser's crowd cookie remembers (set while a batch is
    unfinished, removed once it is finished)."""
    from urllib.parse import parse_qsl, unquote

    params = st.query_params.to_dict()  # one read (each access of st.query_params is a metered call)
    given = {key: params[key] for key in ENTRY_PARAMS if key in params}
    if STUDY_PARAM in given:
        return given
    if LEAVE_PARAM in params or _someone_signed_in():
        return None
    if saved := st.session_state.get("_crowd_link"):
        return saved
    cookie = _cookie(CROWD_COOKIE) or ""
    remembered = {k: v for k, v in parse_qsl(unquote(cookie)) if k in ENTRY_PARAMS}
    return remembered if STUDY_PARAM in remembered else None


def crowd_page():
    """The crowd worker page (pages/crowd.py at /crowd)."""
    return st.Page("pages/crowd.py", title="Study", icon="👥", url_path="crowd")


def _forget_crowd_link() -> None:
    """The workbench is asked for (``?leave-study=1``, or someone signs in): the session and the browser
    forget the crowd link (the worker-id cookies stay, so the study link still continues a batch here)."""
    st.session_state.pop("_crowd_link", None)
    if LEAVE_PARAM in st.query_params:
        st.query_params.pop(LEAVE_PARAM)
    if _cookie(CROWD_COOKIE) and not st.session_state.get("_crowd_cookie_removed"):
        st.session_state["_crowd_cookie_removed"] = True  # the session keeps the cookies it started with
        _crowd_mark(key="assess_crowd_mark", data={"cookies": ({"name": CROWD_COOKIE, "value": "", "max_age": 0},)})


def crowd_frame() -> None:
    """In app.py, before sign-in: a visitor who follows a crowd link (:func:`crowd_link`) gets the crowd page
    of that study alone (hidden navigation, no sign-in, no other page), even after dropping or editing
    ``?study=`` in the URL; anyone else gets the workbench, and their browser forgets its crowd link."""
    link = crowd_link()
    if link is None:
        _forget_crowd_link()
        return
    st.session_state["_frame"] = True
    st.session_state["_crowd_link"] = link
    if st.query_params.to_dict() != link:
        st.query_params.from_dict(link)  # the crowd page reads the link from the URL
    page = crowd_page()

    def start():  # the default page answers at "/" and at any other path (a default page has no url path)
        st.switch_page(page, query_params=link)

    st.navigation([st.Page(start, title="Study", default=True), page], position="hidden").run()
    st.stop()


def _id_cookie(study: str, worker: str) -> str:
    """The name of the cookie holding the binding secret of (study, worker): a digest, as a worker id may hold
    characters a cookie name may not."""
    import hashlib

    return CROWD_ID_PREFIX + hashlib.sha256(f"{study}\x1f{worker}".encode()).hexdigest()[:24]


def _crowd_binding(database, entry, bind: bool):
    if entry.preview or not entry.worker:
        return None
    cookie = _id_cookie(entry.study, entry.worker)
    held = st.session_state.setdefault("_crowd_secrets", {})
    presented = (held.get(cookie), _cookie(cookie))
    binding = (crowd_work.bind if bind else crowd_work.check_binding)(database, entry.study, entry.worker, presented)
    if binding.allowed and binding.secret:
        held[cookie] = binding.secret
    return binding


def crowd_check(database, entry):
    """Check, without binding, that the entry's worker id may act in this browser (``store.crowd.check_binding``):
    refused when another browser holds it; allowed with no secret while no browser does (viewing the consent
    page binds nothing, so a worker may preview on one device and start on another); allowed with the secret
    of this session or this browser's cookie when this browser holds it. None for an entry without a worker
    id (an MTurk preview, or a link that lacks one). The session keeps an allowed secret."""
    return _crowd_binding(database, entry, bind=False)


def crowd_bind(database, entry):
    """Bind the entry's worker id to this browser, or check that it is bound here (``store.crowd.bind``): the
    secrets shown are this session's and this browser's cookie. None for an entry without a worker id
    (an MTurk preview, or a link that lacks one). The session keeps an allowed secret. Done at the worker's
    explicit start (:func:`crowd_start`), or on a view of a batch already consented to that no browser holds
    (its binding was released)."""
    return _crowd_binding(database, entry, bind=True)


def crowd_resume(database, entry, binding, consented: bool):
    """The binding a page view goes on with: ``binding`` as checked, except for a batch already consented to
    whose worker id no browser holds (its binding was released: ``crowd release``), which this browser now
    continues and binds (:func:`crowd_bind`; refused when another browser was faster)."""
    if consented and binding is not None and binding.secret is None:
        return crowd_bind(database, entry)
    return binding


def crowd_start(database, entry, assignment_id: int) -> None:
    """The consent page's Start (a button callback): bind the worker id to this browser first, then record the
    consent. When another browser bound the id meanwhile nothing is written, and the page's run that follows
    refuses this browser (:func:`crowd_check`)."""

    binding = crowd_bind(database, entry)
    if binding is None or binding.allowed:
        consent(database, assignment_id)


def crowd_consent(database, entry, assignment_id: int, guide: dict, config) -> None:
    """The consent page: the study's consent text and guideline, the agreement box and Start
    (:func:`crowd_start`), and the link to leave."""
    crowd_markdown(guide.get("consent", ""))
    with st.container(border=True):
        crowd_guideline(guide, config)
    agreed = st.checkbox("I have read the information above and agree to take part", key="crowd_agree")
    st.button(
        "Start",
        key="crowd_start",
        type="primary",
        disabled=not agreed,
        on_click=crowd_start,  # binds the worker id to this browser, then records the consent
        args=(database, entry, assignment_id),
    )
    crowd_leave_link()


def crowd_mark(entry=None, binding=None, *, unfinished: bool = False) -> None:
    """Once per run of the crowd page, the cookies of this browser: the worker id's binding secret (once the
    id is bound to this browser); the crowd link cookie while the batch is ``unfinished``, removed otherwise (a finished,
    refused or broken link no longer brings this browser back to the crowd page)."""
    from urllib.parse import urlencode

    link = st.session_state.get("_crowd_link") or {}
    cookies = [
        {"name": CROWD_COOKIE, "value": urlencode(link), "max_age": CROWD_COOKIE_SECONDS}
        if unfinished and link
        else {"name": CROWD_COOKIE, "value": "", "max_age": 0}
    ]
    if entry is not None and binding is not None and binding.allowed and binding.secret:  # bound to this browser
        cookies.append(
            {"name": _id_cookie(entry.study, entry.worker), "value": binding.secret, "max_age": CROWD_ID_SECONDS}
        )
    _crowd_mark(key="assess_crowd_mark", data={"cookies": tuple(cookies)})  # a tuple: see Cursor.shown


CROWD_REFUSED = (
    "This study link is already in use in another browser. If you started this study, open the link in "
    "the browser you started in; otherwise contact the researcher."
)


def crowd_refused() -> None:
    """The page for a worker id bound to another browser: a plain message, no batch, no completion code."""
    st.error(CROWD_REFUSED)


def crowd_leave_link() -> None:
    """A discreet way out for a researcher trying the link: the workbench, with this browser's crowd link forgotten."""
    st.caption(f"Not taking part (trying this link as a researcher)? [Leave the study page](./?{LEAVE_PARAM}=1)")


def crowd_query() -> dict:
    """The crowd page's query parameters (study, platform ids)."""

    params = st.query_params.to_dict()
    return {key: params.get(key) for key in ENTRY_PARAMS}


def _text_block(text: str | None, label: str) -> str:
    """One block of untrusted text (a response, a nugget, an utterance) under our label: the label in bold, then
    the text as one inert raw HTML block (:func:`assess.text.inert_html`: one line, every character escaped),
    blank lines around it so that the block ends where it should."""
    return f"**{label}**\n\n{inert_html(text or '')}\n\n"


def crowd_text(text: str | None, label: str) -> None:
    """One block of untrusted text (a response, a nugget, an utterance), rendered inertly under a label."""
    st.markdown(_text_block(text, label), unsafe_allow_html=True)


def crowd_markdown(text: object) -> None:
    """A study's own markdown (its consent text, its instructions) as written, except that an image becomes a
    plain link (:func:`assess.text.inert_images`): nothing from the study's text loads in a worker's
    browser."""
    st.markdown(inert_images(text or ""))


def crowd_guideline(guide: dict, config) -> None:
    """The study's instructions, worked examples and (response studies) the rating scales.

    Two elements whatever the study's size (each element is a message the server builds and sends on every
    full run of the page): the organizer's own markdown (:func:`crowd_markdown`, raw HTML escaped), then the
    scales and the worked examples as one block built only from our own text and inert HTML lines."""

    crowd_markdown(guide.get("instructions", ""))
    parts = []
    for criterion in config.criteria:
        parts.append(f"**{criterion.capitalize()}**: {CRITERIA[criterion]['question']}")
        parts.append("\n".join(f"- **{v}** {text}" for v, text in CRITERIA[criterion]["scale"].items()))
    examples = guide.get("examples") or []
    if examples:
        parts.append("**Worked examples**")
    for n, ex in enumerate(examples, start=1):
        first = "Response" if config.task == "ntr" else "Example"
        second = "Nugget" if config.task == "ntr" else "Criterion"
        parts.append(line_html(f"{n}. {first}:", str(ex.get("response", ""))))
        parts.append(line_html(f"{second}:", str(ex.get("nugget", ""))))
        parts.append(line_html("Answer:", f"{ex.get('answer', '')}: {ex.get('why', '')}"))
    if parts:
        st.markdown("\n\n".join(parts), unsafe_allow_html=True)


def crowd_item(view) -> None:
    """One item's content, as one element: the conversation so far (response studies), the response, the nugget."""
    blocks = []
    if view.task == "response":
        for utterance, response in view.history:
            blocks.append(_text_block(utterance, "User"))
            if response:
                blocks.append(_text_block(response, "Assistant"))
        blocks.append(_text_block(view.utterance, "User (last question)"))
    blocks.append(_text_block(view.response, "Response"))
    if view.task == "ntr":
        blocks.append(_text_block(view.nugget, "Nugget"))
    st.markdown("".join(blocks), unsafe_allow_html=True)


def crowd_question(config) -> bool:
    """An NtR study asks every item the same question: drawn once above the item panel, so that a key press does
    not send it again with the next item (:func:`crowd_keys` with ``asked``). True when it was drawn (a response
    study's question depends on each item's criterion and stays in the panel)."""

    if config.task != "ntr":
        return False
    st.subheader(NTR_GRADED_QUESTION if config.graded else NTR_QUESTION)
    return True


def crowd_keys(item, config, give, *, asked: bool = False) -> None:
    """The question and answer buttons of one item, each calling ``give(value, graded)``: Y / N on a
    yes/no NtR study (graded False), 2 / 1 / 0 on a graded one (graded True; captions and help from
    the registry's support scale), 0-3 and X "unable" per criterion on a response study (graded None).
    ``asked``: the page drew the NtR question above the panel already (:func:`crowd_question`)."""

    if item.task == "ntr" and config.graded:
        if not asked:
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
        if not asked:
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

    st.success("Thank you: you have answered every item of your batch.")
    if entry.platform == "prolific" and config.prolific_code:
        st.markdown(f"Your Prolific completion code: **{esc(config.prolific_code)}**")
        st.link_button("Return to Prolific", PROLIFIC_COMPLETE + config.prolific_code, type="primary")
    st.markdown("Your completion code (keep it; paste it where the platform asks for it):")
    st.code(code or "", language=None)
    if entry.platform == "mturk" and entry.submit_to and entry.session:
        st.markdown(mturk_form_html(entry.submit_to, entry.session, code or ""), unsafe_allow_html=True)
