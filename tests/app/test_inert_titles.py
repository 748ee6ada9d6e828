"""Smaller inertness items: a title's ``:material/…:`` and emoji shortcodes stay text; a crowd study's consent and
instructions never load an image in a worker's browser; Home shows no conversation title to a visitor who has
not signed in to a store with accounts."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from assess.text import WORD_JOINER, inert_images, inert_markdown
from store import open_db
from store.db import run, write
from tests.helpers import ROOT, TRAP

TITLE = "Plans :material/home: and :material/lock_open: :smile: :+1: :streamlit:"


@pytest.mark.parametrize(
    ("text", "icon"),
    [
        (":material/home:", ":material/home:"),
        ("x :material/lock_open: y", ":material/lock_open:"),
        (":material_home:", ":material_home:"),
        (":smile:", ":smile:"),
        (":+1:", ":+1:"),
        (":streamlit:", ":streamlit:"),
    ],
)
def test_escaped_titles_keep_icon_shortcodes_as_text(text, icon):
    shown = inert_markdown(text)
    assert icon not in shown  # Streamlit replaces the shortcode only when it stands as written
    assert shown.replace(WORD_JOINER, "") == text


def test_ordinary_ids_are_unchanged():
    for name in ("llm:demo-gpt", "101_1", "crowd:mturk", "a:b"):
        assert inert_markdown(name) == name


@pytest.mark.parametrize(
    "markdown",
    [
        f"![pixel](http://{TRAP}/p.png)",
        f'Read this ![x](http://{TRAP}/p.png "t") carefully',
        f"![ref][r]\n\n[r]: http://{TRAP}/r.png",
        "![r]\n\n[r]: http://127.0.0.1:9/r.png",
        f"![![nested](http://{TRAP}/a.png)](http://{TRAP}/b.png)",
    ],
)
def test_study_markdown_keeps_no_image(markdown):
    assert "![" not in inert_images(markdown)


def test_study_markdown_keeps_its_formatting():
    text = "**Read** the [terms](https://example.org/terms) and answer *honestly*.\n\n- one\n- two"
    assert inert_images(text) == text


# ------------------------------------------------------------------------------------------- the pages (AppTest)


def _open(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _markdown(at) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


@pytest.fixture
def crowd_store(tmp_path, monkeypatch, demo_copy):
    """The demo with a crowd study whose consent text and instructions hold markdown images."""
    from assess.crowd.rules import StudyConfig
    from store import crowd as store_crowd

    path = demo_copy(tmp_path / "crowd.db")
    with open_db(path) as db:
        store_crowd.create_study(
            db,
            "pix",
            StudyConfig(qc="none", batch_size=2, platform="prolific", prolific_code="C1A2B3C4"),
            runs=["demo-dense"],
            guideline={
                "consent": f"**Consent** ![c](http://{TRAP}/consent.png)",
                "instructions": f"Judge ![i](http://{TRAP}/instructions.png) [the manual](https://example.org/m)",
            },
        )
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def test_crowd_consent_and_instructions_render_no_image(crowd_store):
    at = _open(study="pix", PROLIFIC_PID="w0rker1", STUDY_ID="s", SESSION_ID="x")
    shown = _markdown(at)
    assert "**Consent**" in shown and "[the manual](https://example.org/m)" in shown  # formatting kept
    assert f"(http://{TRAP}/consent.png)" in shown and f"(http://{TRAP}/instructions.png)" in shown
    assert "![" not in shown


@pytest.fixture
def accounts_store(tmp_path, monkeypatch, demo_copy):
    """The demo with one organizer account (so not open) and a conversation title with icon shortcodes."""
    from assess.services import accounts as service

    path = demo_copy(tmp_path / "accounts.db")
    with open_db(path) as db:
        with write(db):
            run(db, "UPDATE conversations SET title = :t WHERE id = '101'", {"t": TITLE})
        service.add_account(db, "boss", "organizer", password="correct-horse-battery", by="test")
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def test_home_shows_no_conversation_title_to_an_anonymous_visitor(accounts_store):
    at = _open()
    assert not at.session_state["_open_mode"]
    assert "Conversations" not in [h.value for h in at.subheader]
    assert not [d for d in at.dataframe if "title" in d.value.columns]
    assert "Plans" not in _markdown(at)


def test_home_shows_the_conversations_in_open_mode(accounts_store, monkeypatch):
    monkeypatch.setenv("ASSESS_OPEN", "1")
    at = _open()
    assert "Conversations" in [h.value for h in at.subheader]
    titles = [t for d in at.dataframe if "title" in d.value.columns for t in d.value["title"]]
    assert TITLE in titles
