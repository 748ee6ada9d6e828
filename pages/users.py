"""Accounts (organizers): list, add, disable or enable, change a role, reset a password, make a sign-in link.

A generated password or link is shown once, in this session only; the store keeps an Argon2 hash."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import accounts as service

ROLES = ("assessor", "adjudicator", "organizer")

ui.frame_guard(organizer=True)
database = ui.db()
by = ui.actor()

st.title("Accounts")
st.caption("Passwords are stored as Argon2 hashes only: a generated password or link is shown here once.")
ui.flash()
if not ui.first_organizer(database, "Adding the first account"):
    st.stop()
shown = st.session_state.pop("users_secret", None)
if shown:
    st.success(ui.esc(shown[0]))
    st.code(shown[1], language=None)

listing = pd.DataFrame(service.account_list(database))
if listing.empty:
    st.info("No accounts yet.")
else:
    st.dataframe(listing, hide_index=True, width="stretch")
names = list(listing["name"]) if not listing.empty else []

add_tab, change_tab, link_tab = st.tabs(["Add", "Disable, role, reset", "Sign-in link"])
with add_tab, st.form("add_account", border=False):
    name = st.text_input("Name (also the label source)", key="new_name")
    chosen_role = st.selectbox("Role", ROLES, key="new_role")
    email = st.text_input("Email (for OpenID Connect; optional)", key="new_email")
    if st.form_submit_button("Add account", key="add_account_button"):
        try:
            made = service.add_account(database, name, chosen_role, by=by, email=email.strip() or None)
            st.session_state["users_secret"] = (f"Added {name.strip()} ({chosen_role}). Password:", made)
            st.rerun()
        except AssessError as exc:
            ui.error("Account not added: ", exc)

with change_tab:
    if not names:
        st.info("Add an account first.")
    else:
        who = st.selectbox("Account", names, key="change_who")
        disable_col, enable_col, reset_col = st.columns(3)
        try:
            if disable_col.button("Disable", key="disable_account"):
                service.set_disabled(database, who, True, by=by)
                ui.set_flash("success", f"{who} disabled")
                st.rerun()
            if enable_col.button("Enable", key="enable_account"):
                service.set_disabled(database, who, False, by=by)
                ui.set_flash("success", f"{who} enabled")
                st.rerun()
            if reset_col.button("Reset password", key="reset_account"):
                made = service.reset_account(database, who, by=by)
                if who == ui.assessor():  # one's own reset ended one's own sessions too: stay signed in here
                    ui.renew_session(database)
                st.session_state["users_secret"] = (f"New password of {who} (earlier links no longer work):", made)
                st.rerun()
            new_role = st.selectbox("New role", ROLES, key="change_role")
            if st.button("Change role", key="change_role_button"):
                service.set_role(database, who, new_role, by=by)
                ui.set_flash("success", f"{who} is now {new_role}")
                st.rerun()
        except AssessError as exc:
            ui.error("Not changed: ", exc)

with link_tab:
    if names:
        who = st.selectbox("Account", names, key="link_who")
        base = st.text_input("The app's address as the person opens it", value="http://localhost:8501", key="link_base")
        minutes = st.number_input("Valid for (minutes)", min_value=1, max_value=527040, value=1440, key="link_min")
        if st.button("Make link", key="make_link"):
            try:
                link = service.make_link(database, who, base, minutes=int(minutes))
                st.session_state["users_secret"] = (f"Sign-in link of {who}:", link)
                st.rerun()
            except AssessError as exc:
                ui.error("No link made: ", exc)
