"""Least disclosure through AppTest: what an assessor, a crowd worker and an organizer are shown.

- The home page shows a signed-in assessor their own progress and nothing about other label sources
  (no source list, no other assessor's name, no database path); an organizer sees all of it.
- Sign-in refuses the workbench's own source names (reserved) and the names of other kinds of source.
- A crowd link's session stays on the crowd page after the worker drops ``?study=`` or asks for
  another page.
- An unexpected exception shows neither its text, nor a traceback, nor a server path.
"""

from __future__ import annotations

import html

import pytest

from assess.services.loading import load_demo
from store import crowd as store_crowd
from store import labels, open_db, sources
from store.db import write
from store.sources import ensure_source
from tests.helpers import open_app, rows

PASSWORD = "s3cret-organizer"
OTHER = "zed_other_assessor"
IMPORTED = "trec2024"


def make_store(path, monkeypatch):
    """The demo, one other assessor with labels, a crowd study; organizer pages behind a password."""
    with open_db(path) as db:
        load_demo(db)
        sources.sign_in(db, OTHER)
        labels.save(db, "passage", OTHER, ("101_1", "demo-doc-001:0"), 2, mode="blind", via="ui")
        store_crowd.create_demo_study(db)
        with write(db):
            ensure_source(db, IMPORTED, "import")  # an organizer's qrels under a name of their own
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.setenv("ASSESS_ORGANIZER_PASSWORD", PASSWORD)
    return path


@pytest.fixture
def store(tmp_path, monkeypatch):
    """:func:`make_store` in a SQLite file (what the app shows does not depend on the engine)."""
    return make_store(tmp_path / "disclosure.db", monkeypatch)


@pytest.fixture
def any_store(store_target, monkeypatch):
    """:func:`make_store` on each engine, for the tests whose pages read what the store's queries select."""
    return make_store(store_target, monkeypatch)


def everything(at) -> str:
    """Every text the run rendered, main area and sidebar: markdown, captions, headings, messages,
    metric labels, widget labels and options, and every cell and column of every table."""
    parts = []
    for element in [*at.main, *at.sidebar]:
        for attr in ("value", "label", "body"):
            value = getattr(element, attr, None)
            if value is not None:
                parts.append(str(value))
        if hasattr(element, "options"):
            parts.extend(map(str, element.options))
    for frame in at.dataframe:
        table = frame.value
        parts.extend(map(str, table.columns))
        parts.extend(str(v) for v in table.to_numpy().ravel())
    return "\n".join(parts)


def test_home_shows_an_assessor_only_their_own_progress(any_store):
    store = any_store
    at = open_app(assessor="amy")
    text = everything(at)
    assert at.session_state["assessor"] == "amy"
    assert "Your progress, amy" in [h.value for h in at.subheader]
    assert "0 of 217 passages judged" in at.get("progress")[0].proto.text
    plain = html.unescape(text).replace("\u2060", "")  # as a reader sees it
    for secret in (OTHER, "llm:demo-gpt", "nist", "gold", str(store), "Label sources", "Store:"):
        assert secret not in text and secret not in plain, secret
    assert {m.label for m in at.metric} == {"Conversations", "Turns", "Passages", "With text", "Pooled pairs"}
    navigation = at.get("navigation")  # only the assessor pages are offered
    assert "Import & export" not in str(navigation) and "Review" not in str(navigation)


def test_home_shows_an_organizer_the_sources_and_the_store(any_store, monkeypatch):
    store = any_store
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD")  # no password: everyone is an organizer
    at = open_app(assessor="amy")
    assert "Label sources" in [h.value for h in at.subheader]
    sources = at.dataframe[0].value
    assert {OTHER, "llm:demo-gpt"} <= set(sources["name"])
    # the location is escaped as every text is (a URL's autolink broken by an invisible word joiner)
    assert any(str(store) in html.unescape(c.value).replace("\u2060", "") for c in at.caption)


def test_home_after_the_organizer_password_shows_the_sources(store):
    at = open_app(assessor="amy")
    at.text_input(key="org_pw").input(PASSWORD).run()
    at.run()
    assert "Label sources" in [h.value for h in at.subheader]
    assert OTHER in set(at.dataframe[0].value["name"])


RESERVED = ["nist", "human", "gold", "adjudication", "organizers", "NIST", "Gold", "crowd:mturk", "llm:gpt-4o"]


@pytest.mark.parametrize("name", RESERVED)
def test_sign_in_refuses_reserved_names_from_the_url(store, name):
    before = rows(store, "SELECT name, kind FROM sources ORDER BY name")
    at = open_app(assessor=name)
    assert "assessor" not in at.session_state
    assert len(at.error) == 1 and "is reserved for the workbench" in at.error[0].value
    assert not [h.value for h in at.subheader if h.value.startswith("Your progress")]
    assert rows(store, "SELECT name, kind FROM sources ORDER BY name") == before


@pytest.mark.parametrize("name", ["nist", "adjudication", "llm:demo-gpt", IMPORTED])
def test_sign_in_refuses_reserved_and_other_kinds_of_source_in_the_sidebar(store, name):
    before = rows(store, "SELECT name, kind FROM sources ORDER BY name")
    at = open_app()
    at.text_input(key="sign_in_name").input(name)
    next(b for b in at.button if b.label == "Sign in").click().run()
    assert "assessor" not in at.session_state
    assert len(at.error) == 1
    assert rows(store, "SELECT name, kind FROM sources ORDER BY name") == before


def test_sign_in_still_takes_an_ordinary_name(any_store):
    store = any_store
    at = open_app(assessor="nistor")  # a name that merely starts like a reserved one
    assert at.session_state["assessor"] == "nistor" and not at.error
    assert ("nistor", "assessor") in rows(store, "SELECT name, kind FROM sources")


def crowd_texts(at) -> str:
    return " ".join(str(getattr(e, "value", "")) for e in at.main)


def test_a_crowd_session_stays_on_the_crowd_page(store):
    at = open_app(study="demo", worker="w1")
    assert at.button(key="crowd_start")  # the consent screen of the study
    assert not at.sidebar.children or not any(getattr(e, "label", "") == "Assessor name" for e in at.sidebar)
    # the worker drops ?study= (and asks for the home page, then the judge page): still the study
    for key in list(at.query_params):
        del at.query_params[key]
    at.run()
    assert not at.exception
    assert at.button(key="crowd_start") and "Assessment workbench" not in [t.value for t in at.title]
    for other in ("pages/judge.py", "pages/home.py", "pages/data.py"):  # not in the worker's navigation at all
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(other)
    at.run()
    assert at.button(key="crowd_start")
    assert not [b for b in at.button if b.key in ("g0", "g1", "g2", "g3", "g4")]
    assert OTHER not in everything(at) and "llm:demo-gpt" not in everything(at)


def test_a_fresh_visitor_without_a_crowd_link_gets_the_workbench(store):
    at = open_app()
    assert "Assessment workbench" in [t.value for t in at.title]


def test_an_unexpected_error_shows_no_traceback_and_no_path(tmp_path, monkeypatch):
    """A store that cannot be opened (its path is a directory) is a bug-like failure, not bad input."""
    from streamlit.testing.v1 import AppTest

    from tests.helpers import ROOT

    broken = tmp_path / "secret-dir" / "store.db"
    broken.mkdir(parents=True)
    monkeypatch.setenv("ASSESS_DB", str(broken))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert len(at.exception) == 1
    shown = at.exception[0]
    assert "secret-dir" not in shown.message and not list(shown.stack_trace)
    assert "redacted" in shown.message or "error" in shown.message.lower()


@pytest.mark.parametrize("page", ["pages/ntr.py", "pages/duplicates.py", "pages/gold_response.py"])
def test_nugget_set_pickers_show_an_assessor_only_their_own_and_the_organizers_sets(any_store, page):
    from store.nuggets import gold

    with open_db(any_store) as db:
        with write(db):
            ensure_source(db, "llm:nuggeteer", "llm")
        gold.add_text_nugget(db, OTHER, "101_1", "a nugget of another assessor")
        gold.add_text_nugget(db, "llm:nuggeteer", "101_1", "a nugget of an LLM")
        sources.sign_in(db, "amy")
        gold.add_text_nugget(db, "amy", "101_1", "amy's own nugget")
    shown = everything(open_app(page, assessor="amy"))
    assert "gold" in shown and "amy" in shown
    assert OTHER not in shown and "llm:nuggeteer" not in shown
