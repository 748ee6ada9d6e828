"""The one module outside pages/ that imports Streamlit: page setup, sign-in and shared widgets."""

from __future__ import annotations

import hmac

import streamlit as st

from assess import settings
from assess.errors import AssessError
from assess.formats import GRADES
from assess.text import inert_html, line_html


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
.inert-line { margin: 0.15rem 0 0.45rem 0; overflow-wrap: anywhere; }
.inert-resolved { margin: 0.3rem 0 0.6rem 0; padding: 0.5rem 0.8rem; border-radius: 0.4rem;
                  background: rgba(28, 131, 225, 0.1); overflow-wrap: anywhere; }
</style>
"""


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
                        st.error(str(exc))
        if "sign_in_error" in st.session_state:
            st.error(st.session_state.pop("sign_in_error"))
        password = settings.organizer_password()
        if password and not st.session_state.get("organizer"):
            entered = st.text_input("Organizer password", type="password", key="org_pw")
            if entered:
                if hmac.compare_digest(entered, password):
                    st.session_state["organizer"] = True  # navigation, built after this, now lists them
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
        st.warning(
            "Passage text not available (only its id is known; judged ClueWeb22 texts are licensed). "
            "Judge from your own copy, or mark it 'cannot judge'."
        )
        return
    st.markdown(inert_html(text, terms), unsafe_allow_html=True)


def inert(text: str) -> None:
    """Show untrusted text (an LLM's raw answer, a response) as inert, escaped text."""
    st.markdown(CSS, unsafe_allow_html=True)
    st.markdown(inert_html(text), unsafe_allow_html=True)


def line(label: str | None, text: str, *, strong: bool = False, resolved: bool = False, container=None) -> None:
    """Show untrusted text (an utterance, a response, a nugget, a statement) inertly after a bold label."""
    css = "inert-resolved" if resolved else "inert-line"
    (container or st).markdown(CSS + line_html(label, text, css=css, strong=strong), unsafe_allow_html=True)


def rubric() -> None:
    """The 0-4 grade rubric with its definitions."""
    from assess.formats import GRADE_DEFINITIONS

    st.markdown("\n".join(f"- **{g} · {GRADES[g]}**: {GRADE_DEFINITIONS[g]}" for g in sorted(GRADES, reverse=True)))


def conversation(ctx: dict) -> None:
    """The conversation so far, the current utterance and its resolved form (all untrusted text)."""
    for h in ctx["history"]:
        line("User:", h["utterance"] or "")
        if h["response"]:
            line("System:", h["response"])
    line(f"User (now, {ctx['turn_id']}):", ctx["utterance"] or "")
    if ctx["resolved_utterance"]:
        line("Resolved:", ctx["resolved_utterance"], resolved=True)


def ptkb(ctx: dict) -> None:
    if not ctx["ptkb"]:
        st.caption("No PTKB statements for this conversation.")
    for s in ctx["ptkb"]:
        line(f"{s['id']}.", s["text"])


# cache_resource, not cache_data: the order is immutable and shared, so no per-run copy of 20,000 items.
@st.cache_resource(max_entries=256, show_spinner=False)
def _cached_order(db_file: str, assessor_name: str, task: str, open_mode: bool, version: tuple):
    from store import open_db
    from store import queue as store_queue

    return store_queue.queue_order(open_db(db_file), assessor_name, task=task, open_mode=open_mode)


def load_queue(database, assessor_name: str, task: str = "passage"):
    """The assessor's queue; its item order is cached until the pool or their assignments change."""
    from store import queue as store_queue

    version = store_queue.queue_version(database, assessor_name)
    order = _cached_order(str(settings.db_path()), assessor_name, task, settings.open_mode(), version)
    return store_queue.load_queue(database, assessor_name, task=task, order=order)


def figure(fig, name: str) -> None:
    """Show a plotly figure with HTML and PNG downloads (PNG only when a headless browser is available)."""
    from assess.ui.plots import figure_html

    st.plotly_chart(fig, width="stretch", key=f"chart_{name}")
    c1, c2 = st.columns(2)
    c1.download_button(
        "Download HTML", figure_html(fig), file_name=f"{name}.html", mime="text/html", key=f"html_{name}"
    )
    if c2.button("Prepare PNG", key=f"png_{name}"):
        from assess.ui.plots import figure_png

        png = figure_png(fig)
        if png is None:
            c2.warning("PNG export needs a headless Chromium (Debian package chromium) for kaleido.")
        else:
            c2.download_button("Download PNG", png, file_name=f"{name}.png", mime="image/png", key=f"pngdl_{name}")


def case_input(kind: str, label: str):
    """An uploaded scoring input, or the demo's; returns (document, file name) or (None, None) on bad input."""
    from assess.services import audit as scoreboard

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
        columns[2].button("Undo", key=f"{k}undo", shortcut="U", on_click=self.undo, args=(undo_fn,), width="stretch")
        if skip:
            columns[3].button(
                "Skip", key=f"{k}skip", shortcut="S", on_click=self.go, args=("next_unjudged",), width="stretch"
            )


def context_columns(database, turn_id: str):
    """The two columns of a judging screen; the left one shows the conversation so far.

    Returns (turn context, left column, right column).
    """
    from store.queue import turn_context

    ctx = turn_context(database, turn_id)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader(ctx["title"] or f"Conversation {ctx['conversation_id']}")
        conversation(ctx)
    return ctx, left, right


# After typing a note, Enter (or Escape) gives the keyboard back to the page's shortcuts: the
# text field loses focus once Streamlit has taken its value (hence the zero timeout).
_KEY_RELEASE_JS = r"""
export default function () {
  if (window.__assessKeyRelease) return;
  window.__assessKeyRelease = true;
  document.addEventListener("keydown", (event) => {
    const field = event.target;
    if (!field || (field.tagName !== "INPUT" && field.tagName !== "TEXTAREA")) return;
    if (event.key === "Escape" || (event.key === "Enter" && field.tagName === "INPUT")) {
      setTimeout(() => field.blur(), 0);
    }
  }, true);
}
"""
_key_release_component = st.components.v2.component("assess_key_release", js=_KEY_RELEASE_JS, isolate_styles=False)


def release_keys_from_inputs() -> None:
    """Let Enter / Escape in a text field return the keys to the page (call once on keyboard pages)."""
    _key_release_component(key="assess_key_release", data={})


def queue_overview(progress: dict, current_turn: str) -> None:
    """An expander with judged / total per topic (conversation) and per turn of the assessor's queue."""
    import pandas as pd

    with st.expander("Your queue: progress per topic and turn"):
        topics = pd.DataFrame(
            [
                {"topic": c, "judged": d, "total": t, "done": f"{d / t:.0%}" if t else "-"}
                for c, (d, t) in progress["conversations"].items()
            ]
        )
        st.dataframe(topics, hide_index=True, width="stretch")
        turns = pd.DataFrame(
            [
                {"turn": t, "judged": d, "total": n, "current": "▶" if t == current_turn else ""}
                for t, (d, n) in progress["turns"].items()
            ]
        )
        st.dataframe(turns, hide_index=True, width="stretch", height=220)


def frame_guard(organizer: bool = False) -> None:
    """First line of every page: make sure the app frame (app.py) is in charge.

    Streamlit runs a script of a ``pages/`` folder directly (its legacy multipage mode) until a
    session of the server has run ``st.navigation``; a first visitor of ``/judge`` or ``/data``
    would then skip sign-in, the demo start-up and the organizer password. Turn that mode off and
    rerun, which runs app.py with the same URL. Organizer pages also stop here without the password.
    """
    if not st.session_state.pop("_frame", False):  # app.py sets it on every run it makes
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


# =========================================================================================== nugget workbench
# (appended by the nugget workbench: the span-selection component and the widgets its pages share)

_SPAN_CSS = """
.sp-root { font-family: var(--st-font); }
.sp-bar { display: flex; gap: 0.75rem; align-items: center; margin-bottom: 0.4rem; }
.sp-add { background: var(--st-primary-color); color: #fff; border: none; border-radius: var(--st-button-radius);
          padding: 0.35rem 0.8rem; cursor: pointer; font: inherit; }
.sp-msg { opacity: 0.75; font-size: 0.9rem; }
.sp-text { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 1.05rem; line-height: 1.6; padding: 0.8rem 1rem;
           border-radius: 0.4rem; background: rgba(127, 127, 127, 0.08); max-height: 34rem; overflow-y: auto;
           user-select: text; unicode-bidi: plaintext; }
.sp-text mark.sp-nugget { background: rgba(80, 200, 120, 0.35); color: inherit; padding: 0; }
"""

# The passage is rendered as text nodes only (textContent semantics: createTextNode), never as HTML.
# Offsets are UTF-16 code units of the concatenated text nodes (Range.toString().length), which Python
# converts to code points (assess.nuggets.span_from_utf16) and checks against the stored passage.
# The function runs again whenever its data changes, without the previous cleanup: listeners are
# therefore kept on the parent element and replaced, never added twice.
_SPAN_JS = r"""
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (parentElement.__spanPickerCleanup) parentElement.__spanPickerCleanup();
  let root = parentElement.querySelector(":scope > .sp-root");
  if (!root) {
    root = document.createElement("div");
    root.className = "sp-root";
    parentElement.appendChild(root);
  }
  root.replaceChildren();
  const bar = document.createElement("div");
  bar.className = "sp-bar";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "sp-add";
  button.textContent = data.button || "Add selection as nugget (N)";
  const msg = document.createElement("span");
  msg.className = "sp-msg";
  msg.setAttribute("role", "status");
  msg.textContent = data.hint || "";
  bar.append(button, msg);
  const box = document.createElement("div");
  box.className = "sp-text";
  box.dataset.passage = data.id || "";
  let full = "";
  for (const [piece, marked] of data.segments || []) {
    const node = document.createTextNode(piece);
    if (marked) {
      const mark = document.createElement("mark");
      mark.className = "sp-nugget";
      mark.appendChild(node);
      box.appendChild(mark);
    } else {
      box.appendChild(node);
    }
    full += piece;
  }
  root.append(bar, box);

  function offsetOf(node, offset) {
    if (!box.contains(node)) {
      return (box.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_PRECEDING) ? 0 : full.length;
    }
    const range = document.createRange();
    range.selectNodeContents(box);
    range.setEnd(node, offset);
    return range.toString().length;
  }
  function current() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!range.intersectsNode(box)) return null;
    const start = offsetOf(range.startContainer, range.startOffset);
    const end = offsetOf(range.endContainer, range.endOffset);
    return end > start ? { start, end } : null;
  }
  let last = null;
  const onSelection = () => { const c = current(); if (c) last = c; };
  function submit(chosen) {
    const c = chosen || current() || last;
    if (!c) { msg.textContent = "Select some passage text first."; return; }
    msg.textContent = "Saving…";
    last = null;
    setTriggerValue(data.event || "span",
                    { id: data.id, start: c.start, end: c.end, text: full.slice(c.start, c.end), units: "utf-16" });
  }
  const key = (data.key || "n").toLowerCase();
  const onKey = (e) => {
    if (e.defaultPrevented || e.repeat || e.ctrlKey || e.metaKey || e.altKey) return;
    if ((e.key || "").toLowerCase() !== key) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName || ""))) return;
    const c = current();
    if (!c) return;          // the selection is not in this passage (another picker, or nothing)
    e.preventDefault();
    e.stopPropagation();
    submit(c);
  };
  const keepSelection = (e) => e.preventDefault();
  const onClick = () => submit(null);
  button.addEventListener("mousedown", keepSelection);
  button.addEventListener("click", onClick);
  document.addEventListener("selectionchange", onSelection);
  document.addEventListener("keydown", onKey, true);
  const cleanup = () => {
    document.removeEventListener("selectionchange", onSelection);
    document.removeEventListener("keydown", onKey, true);
    button.removeEventListener("mousedown", keepSelection);
    button.removeEventListener("click", onClick);
    if (parentElement.__spanPickerCleanup === cleanup) delete parentElement.__spanPickerCleanup;
  };
  parentElement.__spanPickerCleanup = cleanup;
  return cleanup;
}
"""

_span_picker_component = st.components.v2.component(
    "assess_span_picker", css=_SPAN_CSS, js=_SPAN_JS, isolate_styles=False
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
    from assess.nuggets import segments

    data = {"id": item_id, "segments": segments(text, spans), "button": button, "key": shortcut, "hint": hint}
    _span_picker_component(key=key, data=data, on_span_change=on_pick, height="content")


def picked_span(key: str) -> dict | None:
    """The selection a span picker just sent ({id, start, end, text, units}), inside its callback."""
    value = st.session_state.get(key)
    try:
        picked = value.get("span") if value is not None else None
    except AttributeError:
        return None
    return picked if isinstance(picked, dict) else None


def flash(slot: str = "nugget_flash") -> None:
    """Show (once) the message a callback left: ('success' | 'error', text)."""
    kind, text = st.session_state.pop(slot, (None, None))
    if kind == "error":
        st.error(text)
    elif kind:
        st.success(text)


def set_flash(kind: str, text: str, slot: str = "nugget_flash") -> None:
    st.session_state[slot] = (kind, text)


def require_assessor(page: str) -> str:
    """The signed-in assessor, or stop the page with how to sign in."""
    name = assessor()
    if not name:
        st.info(f"Sign in with your assessor name in the sidebar, or open /{page}?assessor=NAME.")
        st.stop()
    return name


def pick_turn(turns: list[str], key: str, label: str = "Turn") -> str:
    """A turn selector that follows ``?turn=`` once and remembers the choice in the session."""
    if not turns:
        st.info("No turns to work on yet: import topics (and runs or qrels) first.")
        st.stop()
    return pick(turns, key, label, param="turn")


def pick(options: list, key: str, label: str, *, param: str | None = None, format_func=str):
    """A selectbox whose first value may come from the query parameter ``param`` (a deep link)."""
    wanted = st.query_params.get(param) if param else None
    if wanted is not None and wanted in options and st.session_state.get(f"_{key}_linked") != wanted:
        st.session_state[key] = wanted
        st.session_state[f"_{key}_linked"] = wanted
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]
    return st.selectbox(label, options, key=key, format_func=format_func)


def nugget_table(rows: list[dict], *, key: str) -> None:
    """The nuggets of a turn as one table (fast for hundreds of rows)."""
    import pandas as pd

    if not rows:
        st.caption("No nuggets yet for this turn.")
        return
    frame = pd.DataFrame(
        [
            {
                "key": r["key"],
                "text": r["text"],
                "passage": r["passage_id"] or "",
                "start": r["start_char"],
                "end": r["end_char"],
                "kept (dedup)": {1: "yes", 0: "no"}.get(r["in_dedup"], "?"),
                "relevance": r["relevance"],
            }
            for r in rows
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch", key=key)


@st.cache_resource(show_spinner=False)
def entailment_judge(model: str | None):
    """The duplicate suggester: the NLI judge of ``model`` (cached per server), else the lexical one."""
    from assess import nuggets as pure

    return pure.configured_entailment(model)
