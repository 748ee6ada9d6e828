"""The verdict (issue 25 item 6) on the demo, on both engines: the same criteria, statuses and figures."""

from __future__ import annotations

import pytest


def test_the_verdict_on_the_demo(demo_target):
    from assess.services.audit import verdict_view
    from store import open_db

    db = open_db(demo_target)
    try:
        report = verdict_view(db, None, None)  # by role: demo-ann (an assessor) against llm:demo-gpt
    finally:
        db.close()
    # issue 32: two humans and three runs are too few to pass the alternative annotator test or the system level,
    # so the demo's LLM is not claimed to replace (or pre-filter for) anyone
    assert (report["reference"], report["judge"], report["verdict"]) == ("demo-ann", "llm:demo-gpt", "assist only")
    criteria = {c["key"]: c for c in report["criteria"]}
    assert {k: c["status"] for k, c in criteria.items()} == {
        "agreement": "fail",
        "alt_test": "too few",
        "systems": "too few",
        "bias": "pass",
        "estimate": "alternative",
    }
    judge, shared, ceiling, _ = criteria["agreement"]["figures"]
    assert (judge["value"], judge["high"], ceiling["value"]) == pytest.approx((0.8576, 0.9034, 0.9178), abs=1e-4)
    assert shared["value"] == 162 and criteria["alt_test"]["figures"][0]["value"] == 0.5
    assert criteria["alt_test"]["missing"].startswith("2 human(s) tested, fewer than 3")
    assert criteria["systems"]["missing"].startswith("3 runs over 9 topics both judged, fewer than 5 runs over 10")
    assert criteria["bias"]["figures"][0]["value"] == pytest.approx(24 / 162)  # judge - reference, summed: +24
