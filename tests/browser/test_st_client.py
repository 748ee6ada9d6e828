"""The websocket protocol client of the load benchmark (tests/benchmarks/st_client.py) against a real
``streamlit run app.py`` on 127.0.0.1: an assessor signs in with the sidebar form, opens /judge and
presses a grade; a crowd worker follows a study link, consents and answers. What the client saw
(the deltas of the next item) and what the store holds must agree."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest

from assess.tasks import GRADES
from tests.benchmarks.st_client import FINISHED_FRAGMENT, StreamlitClient, app_server
from tests.helpers import ROOT, rows

NAME, PASSWORD = "wsclient", "a-long-test-password"
STUDY = "wsstudy"
PASSAGE = re.compile(r"^Passage (`+) ?(.*?) ?\1 \((\d+) of (\d+)\)$")
ITEM = re.compile(r"^Item (\d+) of (\d+)$")


def assess(*args: str, db, stdin: str | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assess", *args, "--db", str(db)],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The demo store with one assessor account and a crowd study, served by one app process."""
    tmp = tmp_path_factory.mktemp("st_client")
    db = tmp / "assess.db"
    assess("init", "--demo", db=db)
    assess("users", "add", NAME, "--role", "assessor", "--password-stdin", db=db, stdin=PASSWORD + "\n")
    assess("crowd", "create", "--demo", STUDY, db=db)
    with app_server(str(db), tmp / "streamlit.log") as url:
        yield url, db


def test_an_assessor_signs_in_opens_judge_and_a_grade_is_stored_and_the_next_passage_shown(app):
    url, db = app

    async def scenario():
        async with StreamlitClient(url, "judge", timeout=60) as client:
            assert any("Sign in with your account" in t for t in client.texts()), client.texts()
            signed_in = await client.submit("account_sign_in", {"account_name": NAME, "account_password": PASSWORD})
            assert signed_in.status == 0 and not signed_in.errors, signed_in.errors
            first = client.find(PASSAGE)
            assert first and first.group(3) == "1", client.texts()
            assert client.fragment_of("g3"), "the grade keys are drawn by the item panel's fragment"
            pressed = await client.click("g3")
            # only the item panel ran (a fragment's run), as in a browser
            assert pressed.status == FINISHED_FRAGMENT and not pressed.errors, pressed.errors
            rubric = GRADES.definitions[4]
            assert any(rubric in t for t in client.texts()), "the rubric beside the panel stays on the page"
            seen = pressed.first(PASSAGE)
            return first.group(2), seen, pressed

    first_id, seen, pressed = asyncio.run(scenario())
    assert seen is not None, "no delta showed a passage after the key press"
    at, found = seen
    assert found.group(3) == "2" and found.group(2) != first_id
    assert pressed.sent_at < at <= pressed.finished_at
    assert rows(db, "SELECT grade FROM passage_labels WHERE source = :s", {"s": NAME}) == [(3,)]
    assert rows(db, "SELECT passage_id FROM passage_labels WHERE source = :s", {"s": NAME}) == [(first_id,)]


def test_a_crowd_worker_consents_and_each_answer_is_stored_once(app):
    url, db = app
    worker = "wsworker1"

    async def scenario():
        async with StreamlitClient(url, "crowd", f"study={STUDY}&worker={worker}", timeout=60) as client:
            await client.set_value("crowd_agree", True)
            started = await client.click("crowd_start")
            assert not started.errors, started.errors
            assert client.find(ITEM).group(1) == "1", client.texts()
            seen = []
            for value in (1, 0):
                pressed = await client.click("crowd_yes" if value else "crowd_no")
                assert not pressed.errors, pressed.errors
                hit = pressed.first(ITEM)
                seen.append(hit and int(hit[1].group(1)))
            return seen

    assert asyncio.run(scenario()) == [2, 3]
    stored = rows(
        db,
        "SELECT x.value FROM crowd_answers x JOIN crowd_assignments a ON a.id = x.assignment_id "
        "WHERE a.worker = :w ORDER BY x.answered_at",
        {"w": worker},
    )
    assert stored == [(1,), (0,)]
