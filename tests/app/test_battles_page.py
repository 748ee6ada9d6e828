"""/battles through AppTest: the verdict keys store each battle with the run shown on the left as run_a, in the
person's own order, undo takes one back; and the Bradley-Terry tab of /scores shows what `battles rank --json`
prints."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import open_app, rows, run_cli


@pytest.fixture
def app_db(demo_target, monkeypatch, tmp_path):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    run_cli("battles", "plan", "--name", "p", "--method", "random", "--pairs", "1", db=demo_target, check=True)
    return demo_target


def _shown(at) -> str:
    return " ".join(m.value for m in [*at.markdown, *at.caption])


def test_verdict_keys_store_battles_in_order_with_the_order_shown(app_db):
    from assess.services import battles
    from store import open_db

    with open_db(app_db) as db:
        queue = battles.queue(db, "p", "bea")
    first = [q for q in queue if not q["reshow"]]
    assert len(first) == 12 and all(q["run_a"] != q["run_b"] for q in first)
    again = queue[len(first) :]  # ceil(10% of 12) = 2 battles come back last, swapped, for consistency
    assert len(again) == 2 and all(q["reshow"] for q in again)
    shown = {(q["turn_id"], q["run_a"], q["run_b"]) for q in first}
    assert all((q["turn_id"], q["run_b"], q["run_a"]) in shown for q in again)
    at = open_app("pages/battles.py", "bea")
    assert "Left answer" in _shown(at) and "Right answer" in _shown(at)
    assert not any(q["run_a"] in _shown(at) for q in queue)  # identities hidden
    assert re.search(r"0 / \d+ battles judged", at.get("progress")[0].proto.text)
    for key in ("battle_left_a", "battle_right_l", "battle_tie", "battle_neither", "battle_right"):
        at.button(key=key).click().run()
        assert not at.exception, at.exception
    stored = rows(
        app_db,
        "SELECT turn_id, run_a, run_b, outcome, reshow, mode, via FROM battles WHERE source = 'bea' ORDER BY updated_at",
        {},
    )
    expected = [1, 2, 0, -1, 2]  # A left, L right, T tie, N neither (both bad), ArrowRight right
    assert stored == [
        (q["turn_id"], q["run_a"], q["run_b"], code, 0, "blind", "key") for q, code in zip(first, expected)
    ]
    assert all(r[0] is not None for r in rows(app_db, "SELECT active_ms FROM battles WHERE source = 'bea'", {}))
    at.button(key="battle_undo").click().run()
    assert len(rows(app_db, "SELECT 1 FROM battles WHERE source = 'bea'", {})) == 4
    assert "4 / " in at.get("progress")[0].proto.text


def test_the_bradley_terry_tab_shows_the_rank_figures(app_db, tmp_path):
    lines = [
        {"topic_id": "101_1", "run_a": "demo-bm25", "run_b": "demo-dense", "winner": "b"},
        {"topic_id": "101_2", "run_a": "demo-dense", "run_b": "demo-bm25", "winner": "tie"},
        {"topic_id": "101_1", "run_a": "demo-rerank", "run_b": "demo-dense", "winner": "a"},
        {"topic_id": "101_2", "run_a": "demo-bm25", "run_b": "demo-rerank", "winner": "a"},
    ]
    file = tmp_path / "b.jsonl"
    file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run_cli("battles", "import", str(file), "--source", "arena", db=app_db, check=True)
    expected = json.loads(run_cli("battles", "rank", "--source", "arena", "--json", db=app_db, check=True).stdout)
    at = open_app()
    at.switch_page("pages/scores.py")
    at.session_state["sc_tab"] = "Bradley-Terry"  # only the open tab runs
    at.run()
    assert not at.exception, at.exception
    (table,) = [
        d.value
        for d in at.dataframe
        if list(d.value.columns) == ["run", "strength", "low", "high", "win_rate", "battles", "provisional"]
    ]
    assert list(table["run"]) == list(expected["runs"])
    for _, r in table.iterrows():  # shown to three decimals (the CSV keeps them exact)
        figures = expected["runs"][r["run"]]
        for name in ("strength", "low", "high", "win_rate"):
            assert r[name] == round(figures[name], 3) + 0.0
        assert r["provisional"]  # a handful of battles: every rank is provisional
    assert any(expected["model"] in c.value for c in at.caption)
    assert not any("Pairs judged in both orders" in c.value for c in at.caption)  # none judged both ways

    # an LLM judge that always picks the left answer: the tab shows its position bias
    file.write_text(
        "".join(
            json.dumps({"topic_id": "101_1", "run_a": a, "run_b": b, "winner": "a"}) + "\n"
            for a, b in (("demo-bm25", "demo-dense"), ("demo-dense", "demo-bm25"))
        )
    )
    run_cli("battles", "import", str(file), "--source", "llm:left", db=app_db, check=True)
    at.switch_page("pages/scores.py").run()
    at.selectbox(key="bt_source").select("llm:left").run()
    assert not at.exception, at.exception
    assert (
        "Pairs judged in both orders: 1, verdict flipped: 1 (100.0%: an LLM judge's position bias); "
        "left answer chosen in 100.0% of decisive verdicts"
    ) in [c.value for c in at.caption]


def test_the_key_help_on_the_page_and_in_the_docs_say_the_same(app_db):
    """docs/battles.md's key table is the page's key help, row by row; no key is B (read as "answer B")."""
    from pathlib import Path

    from assess.ui.battles import KEY_HELP, VERDICTS, key_help

    doc = Path(__file__).resolve().parents[2].joinpath("docs", "battles.md").read_text()
    section = doc[doc.index("## The battle page") :]
    table = re.findall(r"^\| (`[^|]+`) \| ([^|]+) \|$", section, flags=re.M)
    assert [(k.replace("`", ""), what.strip()) for k, what in table] == list(KEY_HELP)
    shortcuts = [k for _, _, keys, _ in VERDICTS for k in keys]
    assert "B" not in shortcuts and sorted(shortcuts) == sorted(["Left", "A", "Right", "L", "T", "N"])
    at = open_app("pages/battles.py", "bea")
    assert not at.exception, at.exception
    assert "Keys: " + key_help() in [c.value for c in at.caption]
