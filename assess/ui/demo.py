"""The demo never locks its user out: before an action would switch a demo store from open mode to accounts
(the first account, topics of one's own), the page says so and offers to create the person's own organizer
account first, signs this browser in with it and shows a generated password once. A queue that mixes the demo's
items with one's own says so (:func:`mixed_queue_warning`)."""

from __future__ import annotations

import streamlit as st

from assess import settings
from assess.errors import AssessError
from assess.services.accounts import account_list, add_account
from assess.services.loading import demo_mix
from assess.ui.frame import begin_session, open_sign_in, role
from assess.ui.widgets import error, esc

_SHOWN = "_first_organizer_secret"


def demo_open_mode() -> bool:
    """True while the store is in open mode only because it holds nothing but the demo ($ASSESS_OPEN unset)
    and nobody here is signed in with an account: the first account, or topics of one's own, end that."""
    return settings.open_mode_setting() is None and open_sign_in() and not role()


def show_first_password() -> None:
    """The password generated for the person's own first account, shown once (this run only)."""
    shown = st.session_state.pop(_SHOWN, None)
    if shown:
        st.success(
            f"You are signed in as {esc(shown[0])} (organizer). Keep this password: it is shown only now, and "
            "from now on everyone signs in with an account."
        )
        st.code(shown[1], language=None)


def first_organizer(database, what: str) -> bool:
    """Before ``what`` (an action that ends open mode on a demo store): say so and offer the person's own
    organizer account. True when the action may go ahead now (an account is signed in, or the store is not
    a demo in open mode); False while the offer stands (the caller holds the action back)."""

    show_first_password()
    if not demo_open_mode():
        return True
    st.warning(
        f"This store is in open mode because it holds only the demo: anyone may type a name. {what} switches it "
        "to accounts, and from then on everyone signs in with an account. Create your own organizer account "
        "first, so that you stay signed in."
    )
    with st.form("first_organizer", border=True):
        name = st.text_input("Your account name", key="first_organizer_name")
        password = st.text_input(
            "Password (at least 10 characters; leave empty for a generated one)", type="password", key="first_pw"
        )
        if st.form_submit_button("Create my organizer account and sign in", key="first_organizer_button"):
            try:
                given = name.strip()
                made = add_account(database, given, "organizer", password=password or None, by=f"open:{given}")
                # the first account of the store (open mode on a demo store means none existed): its stored name
                chosen = next((a["name"] for a in account_list(database) if a["created_by"] == f"open:{given}"), given)
                st.session_state["_open_mode"] = False
                begin_session(database, chosen, "organizer", via="password")
                if made:
                    st.session_state[_SHOWN] = (chosen, made)
                st.rerun()
            except AssessError as exc:
                error("No account made: ", exc)
    return False


def mixed_queue_warning(database, turns) -> None:
    """On a judging page's full run: say so when the queue's turns (``turns``) hold both the embedded demo's and
    one's own (topics imported with ``--keep-demo``): such a mix is never silent."""

    if demo_mix(database, turns):
        st.warning(
            "Your queue mixes the embedded demo's items (conversations of the collection 'demo') with your own "
            "topics' items. An organizer can drop the demo (python -m assess import topics FILE --drop-demo, or "
            "the Import page) or assign you only your own topics."
        )
