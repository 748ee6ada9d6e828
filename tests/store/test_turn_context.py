"""The turn context is built once (store.conversations.turn_contexts): the judging screens' single turn and
the prompts' every turn are the same records, on each engine."""

from __future__ import annotations

from assess.services.jobs import turn_prompt_fields
from assess.tasks import TurnContext
from store import conversations, open_db


def test_one_turn_and_every_turn_read_the_same_context(demo_target):
    with open_db(demo_target) as db:
        every = conversations.turn_contexts(db)
        assert set(every) == set(conversations.all_turns(db))
        for turn_id, context in every.items():
            assert isinstance(context, TurnContext)
            assert conversations.turn_context(db, turn_id) == context
        third = every["101_3"]
        assert [h["turn_id"] for h in third.history] == ["101_1", "101_2"]
        assert set(third.history[0]) == {"turn_id", "utterance", "response"}
        assert third.ptkb and set(third.ptkb[0]) == {"id", "text"}
        assert third.title == conversations.conversations(db)[0]["title"]
        assert every["101_1"].history == ()
        fields = turn_prompt_fields(third)
        assert fields["resolved"] == third.query == (third.resolved or third.utterance)
        assert fields["history"].startswith(f"User: {third.history[0]['utterance']}")
        assert fields["ptkb"].splitlines()[0] == f"{third.ptkb[0]['id']}. {third.ptkb[0]['text']}"
