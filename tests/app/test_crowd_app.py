"""The crowd worker page through AppTest: consent, items, completion code, stored rows, resume,
nothing but the worker's own batch, and the platforms' entry parameters."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from assess.crowd.entry import completion_code
from assess.crowd.rules import StudyConfig
from store import crowd as store_crowd
from store import db as sql
from store import open_db
from tests.helpers import ROOT, open_app, rows  # noqa: F401

APP = str(ROOT / "app.py")


@pytest.fixture
def crowd_db(demo_target, monkeypatch):
    """The demo with four crowd studies, on each engine; the page opens it through ASSESS_DB."""
    path = demo_target
    db = open_db(path)
    store_crowd.create_demo_study(db)
    store_crowd.create_demo_study(db, "response")
    store_crowd.create_demo_study(db, graded=True)  # demo-graded: support / partial support / no support
    store_crowd.create_study(
        db,
        "pro",
        StudyConfig(qc="none", batch_size=2, platform="prolific", prolific_code="C1A2B3C4"),
        runs=["demo-dense"],
    )
    db.close()
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def open_link(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at) -> str:
    return " ".join(str(e.value) for e in at.main if hasattr(e, "value"))


def consent(at) -> None:
    assert at.button(key="crowd_start").disabled
    at.checkbox(key="crowd_agree").check().run()
    at.button(key="crowd_start").click().run()
    assert not at.exception, at.exception


def progress(at) -> str:
    return at.get("progress")[0].proto.text


PROLIFIC = {"study": "demo", "PROLIFIC_PID": "5f0c0ffee", "STUDY_ID": "st1", "SESSION_ID": "se1"}


@pytest.mark.both_engines
def test_consent_items_completion_code_and_rows(crowd_db):
    at = open_link(**PROLIFIC)
    assert "research study" in texts(at) and "Worked examples" in texts(at)
    assert len(at.sidebar) == 0  # no sign-in box, no navigation to other pages
    assert rows(crowd_db, "SELECT worker, session, consented_at FROM crowd_assignments") == [("5f0c0ffee", "se1", None)]
    consent(at)
    assert progress(at) == "Item 1 of 11"
    assert any("Is the gold nugget of information covered in the response?" in s.value for s in at.subheader)
    for n in range(11):
        at.button(key="crowd_yes" if n % 2 else "crowd_no").click().run()
        assert not at.exception, at.exception
        if n < 10:
            assert progress(at) == f"Item {n + 2} of 11"
    assert any("answered every item" in s.value for s in at.success)
    code = at.code[0].value
    secret = rows(crowd_db, "SELECT secret FROM crowd_studies WHERE name = 'demo'")[0][0]
    assert code == completion_code(secret, "demo", "5f0c0ffee", "1")
    assert rows(crowd_db, "SELECT status, completion_code, hit FROM crowd_assignments") == [("completed", code, "st1")]
    answers = rows(crowd_db, "SELECT value, seconds, via FROM crowd_answers ORDER BY answered_at")
    assert [v for v, _, _ in answers] == [n % 2 for n in range(11)]
    assert all(s is not None and s >= 0 for _, s, _ in answers) and {v for *_, v in answers} == {"page"}
    assert rows(crowd_db, "SELECT COUNT(*) FROM ntr_labels WHERE source LIKE 'crowd:%'") == [(0,)]
    at.run()  # coming back in this browser after the end shows the code again
    assert at.code[0].value == code
    other = open_link(**PROLIFIC)  # another browser with the same link: refused, no code
    assert any("already in use in another browser" in e.value for e in other.error) and not other.code


def test_a_page_load_resumes_the_batch_and_another_browser_is_refused(crowd_db):
    at = open_link(study="demo", worker="pilot-amy")
    consent(at)
    for _ in range(3):
        at.button(key="crowd_yes").click().run()
    assert progress(at) == "Item 4 of 11"
    at.run()  # the page again in this browser: same batch, next unanswered item
    assert progress(at) == "Item 4 of 11"
    # a new session is another browser here (AppTest sends no cookie): pilot-amy's link is hers alone
    # (a new tab or a reload of her own browser resumes: tests/browser/test_crowd_browser.py)
    back = open_link(study="demo", worker="pilot-amy")
    assert any("already in use in another browser" in e.value for e in back.error) and not back.get("progress")
    assert rows(crowd_db, "SELECT COUNT(*) FROM crowd_assignments") == [(1,)]


def test_a_worker_sees_only_their_batch_and_no_other_label(crowd_db):
    at = open_link(study="demo", worker="w-blind")
    consent(at)
    page = texts(at)
    for leak in ("llm:demo-gpt", "known", "test item", "crowd:"):
        assert leak not in page
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("pages/data.py")
    item_shown = rows(
        crowd_db,
        "SELECT text FROM nuggets n JOIN crowd_items i ON i.nugget_id = n.id "
        "JOIN crowd_batch_items bi ON bi.item_id = i.id WHERE bi.position = 0 AND "
        "bi.batch_id = (SELECT batch_id FROM crowd_assignments WHERE worker = 'w-blind')",
    )
    assert item_shown[0][0] in page


def test_mturk_preview_then_submit_form(crowd_db):
    preview = open_link(study="demo", assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1")
    assert any("Accept the HIT" in i.value for i in preview.info)
    assert rows(crowd_db, "SELECT COUNT(*) FROM crowd_assignments") == [(0,)]
    params = dict(
        study="demo",
        workerId="A2MTURK",
        assignmentId="3ASSIGN",
        hitId="H1",
        turkSubmitTo="https://workersandbox.mturk.com",
    )
    at = open_link(**params)
    consent(at)
    for _ in range(11):
        at.button(key="crowd_no").click().run()
    form = next(m.value for m in at.markdown if "<form" in m.value)
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in form
    assert 'name="assignmentId" value="3ASSIGN"' in form
    bad = open_link(**{**params, "turkSubmitTo": "https://evil.example.com"})
    assert any("does not work" in e.value for e in bad.error)


def test_response_study_shows_the_conversation_and_the_scale(crowd_db):
    at = open_link(study="demo-response", worker="r1")
    consent(at)
    assert any(s.value.startswith("How ") for s in at.subheader)
    keys = {b.key for b in at.button}
    assert {"crowd_v0", "crowd_v1", "crowd_v2", "crowd_v3", "crowd_unable"} <= keys
    assert "User (last question)" in texts(at)
    at.button(key="crowd_unable").click().run()
    assert rows(crowd_db, "SELECT value FROM crowd_answers") == [(-1,)]


def test_bad_links(crowd_db):
    assert any("no worker id" in e.value for e in open_link(study="demo").error)
    assert any("no crowd study" in e.value for e in open_link(study="nope", worker="x").error)
    # a normal visit (no study parameter) still gets the workbench
    home = open_link()
    assert {m.label for m in home.metric} >= {"Conversations", "Turns"}


def test_prolific_study_returns_workers_with_its_completion_code(crowd_db):
    at = open_link(study="pro", PROLIFIC_PID="p9", STUDY_ID="st", SESSION_ID="se9")
    consent(at)
    assert progress(at) == "Item 1 of 2"  # no test item: qc none
    at.button(key="crowd_yes").click().run()
    at.button(key="crowd_yes").click().run()
    link = at.get("link_button")[0].proto
    assert link.url == "https://app.prolific.com/submissions/complete?cc=C1A2B3C4"
    assert any("C1A2B3C4" in m.value for m in at.markdown)
    mturk = open_link(study="pro", workerId="A9", assignmentId="X9", hitId="H")
    assert any("runs on prolific" in e.value for e in mturk.error)


def test_graded_study_keys_2_1_0_store_support_levels_and_refuse_the_other_kind(crowd_db):
    at = open_link(study="demo-graded", worker="g1")
    intro = texts(at)
    assert "**2** support" in intro and "**1** partial support" in intro and "**0** no support" in intro
    consent(at)
    assert any("How much of the gold nugget's information" in s.value for s in at.subheader)
    keys = {b.key: b for b in at.button}
    assert {"crowd_s2", "crowd_s1", "crowd_s0"} <= set(keys) and "crowd_yes" not in keys and "crowd_no" not in keys
    assert [keys[f"crowd_s{v}"].label for v in (2, 1, 0)] == ["2 · support", "1 · partial support", "0 · no support"]
    for value in (2, 1, 0):
        at.button(key=f"crowd_s{value}").click().run()
        assert not at.exception, at.exception
    assert progress(at) == "Item 4 of 11"
    query = (
        "SELECT x.value FROM crowd_answers x JOIN crowd_assignments a ON a.id = x.assignment_id "
        "WHERE a.study = 'demo-graded' ORDER BY x.answered_at"
    )
    assert rows(crowd_db, query, {}) == [(2,), (1,), (0,)]
    # the study turns yes/no under the open page (an organizer's edit): a graded key is refused, nothing stored
    db = open_db(crowd_db)
    with sql.write(db):
        sql.run(
            db,
            "UPDATE crowd_studies SET config = :config WHERE name = 'demo-graded'",
            {"config": StudyConfig().to_json()},
        )
    db.close()
    at.button(key="crowd_s2").click().run()
    assert not at.exception, at.exception
    assert any("a graded answer" in e.value and "this study's answers are yes/no" in e.value for e in at.error)
    assert rows(crowd_db, query, {}) == [(2,), (1,), (0,)] and progress(at) == "Item 4 of 11"
    assert rows(crowd_db, "SELECT COUNT(*) FROM ntr_support_labels WHERE source LIKE 'crowd:%'", {}) == [
        (0,)
    ]  # answers, not labels
