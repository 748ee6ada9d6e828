"""Active time per judgment and rubber-stamping (assess.measures.speed) on cases worked by hand."""

from __future__ import annotations

from assess.measures import speed


def test_spread_interpolates_quartiles_between_order_statistics():
    # sorted 100 200 400 800: median (200+400)/2 = 300; q1 at position 3*0.25 = 0.75: 100 + 0.75*100 = 175;
    # q3 at position 3*0.75 = 2.25: 400 + 0.25*400 = 500; IQR 325
    assert speed.spread([800, 100, 400, 200]) == {"n": 4, "median": 300.0, "q1": 175.0, "q3": 500.0, "iqr": 325.0}
    assert speed.spread([700]) == {"n": 1, "median": 700.0, "q1": 700.0, "q3": 700.0, "iqr": 0.0}
    assert speed.spread([]) == {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None}


def test_buckets_of_length_and_time():
    assert [speed.length_bucket(c) for c in (None, 0, 499, 500, 1999, 2000)] == [
        "unknown",
        "0-499",
        "0-499",
        "500-999",
        "1000-1999",
        "2000+",
    ]
    assert [speed.time_bucket(ms) for ms in (None, 0, 499, 500, 1999, 2000, 9999, 10_000)] == [
        "untimed",
        "<0.5s",
        "<0.5s",
        "0.5-2s",
        "0.5-2s",
        "2-10s",
        "2-10s",
        ">=10s",
    ]


def _event(assessor, task, ms, hour, length=None):
    return {
        "assessor": assessor,
        "task": task,
        "active_ms": ms,
        "at": f"2026-01-05T{hour:02d}:10:00.000Z",
        "length": length,
    }


def test_speed_report_by_task_length_and_hour_with_the_fast_flag():
    events = (
        [
            _event("amy", "passage", 1000, 9, 120),
            _event("amy", "passage", 3000, 9, None),
            _event("amy", "passage", 5000, 14, 800),
            _event("amy", "ptkb", 400, 14),
            _event("amy", "ptkb", None, 14),  # untimed: left out
        ]
        + [_event("bob", "passage", 1000, 10, 50)] * 19
        + [_event("bob", "passage", 1400, 10, 50)]
    )
    report = speed.speed_report(events)
    amy = [(r["by"], r["group"], r["n"], r["median"], r["iqr"], r["flag"]) for r in report if r["assessor"] == "amy"]
    assert amy == [
        ("task", "passage", 3, 3000.0, 2000.0, None),  # 1000 3000 5000: q1 2000, q3 4000
        ("task", "ptkb", 1, 400.0, 0.0, None),  # fast, but one label is no pattern
        ("length", "0-499", 1, 1000.0, 0.0, None),
        ("length", "500-999", 1, 5000.0, 0.0, None),
        ("length", "unknown", 1, 3000.0, 0.0, None),
        ("hour", "09h", 2, 2000.0, 1000.0, None),  # 1000 3000: q1 1500, q3 2500
        ("hour", "14h", 2, 2700.0, 2300.0, None),  # 400 5000: q1 1550, q3 3850
    ]
    bob = [r for r in report if r["assessor"] == "bob" and r["by"] == "task"]
    # 20 labels, median 1000 ms < 1500 ms: flagged
    assert bob[0]["flag"] == "implausibly fast: median 1000 ms over 20 labels"
    assert [r["assessor"] for r in speed.speed_flags(report)] == ["bob"]
    # one label fewer is not flagged
    assert speed.speed_flags(speed.speed_report(events[:-1])) == []


def _h(source, item, old, new, mode, ms=None):
    return {"source": source, "item": item, "old": old, "new": new, "mode": mode, "active_ms": ms}


def test_rubber_stamp_counts_accepted_shown_labels_by_time_and_flags_potatos_rule():
    llm = {("t", str(i)): {"llm:x": 2} for i in range(8)}
    history = [_h("amy", f"t {i}", None, "2", "shown", 300) for i in range(6)]  # six fast accepts
    history += [
        _h("amy", "t 6", None, "1", "shown", 4000),  # not the LLM's value
        _h("amy", "t 7", None, "3", "reveal", 900),  # blind first label: nothing shown yet
        _h("amy", "t 7", "3", "2", "reveal", 700),  # changed after the reveal to the LLM's value: accepted
        _h("bob", "t 0", None, "2", "shown", 200),
        _h("bob", "t 0", "2", "3", "shown", 5000),  # bob corrects his accept later
        _h("bob", "t 1", None, "cannot-judge", "shown", 100),  # cannot judge: left out
        _h("amy", "t 9", None, "2", "shown", 100),  # the LLM did not label t 9
    ]
    events = speed.shown_events(history, shown_mode="shown", reveal_mode="reveal")
    assert len(events) == 12  # all but the blind first label
    rows = speed.rubber_stamp(events, llm, cannot_judge="cannot-judge", decode=lambda i: tuple(i.split(" ")))
    amy, bob = rows
    # amy: 8 events on the LLM's items, 7 accepted (six fast, one after reveal at 700 ms): median of
    # 300 x6 and 700 = 300; none corrected: flagged
    assert (amy["events"], amy["accepted"], amy["timed_accepted"], amy["accepted_median_ms"]) == (8, 7, 7, 300.0)
    assert amy["by_time"] == {
        "<0.5s": {"events": 6, "accepted": 6, "share": 1.0},
        "0.5-2s": {"events": 1, "accepted": 1, "share": 1.0},
        "2-10s": {"events": 1, "accepted": 0, "share": 0.0},
    }
    assert (amy["corrected"], amy["corrected_share"]) == (0, 0.0)
    assert amy["flag"] == "rubber-stamping: 7 accepted, median 300 ms, 0% corrected"
    # bob: 2 events, 1 accepted and later corrected; fewer than 5 accepted: no flag
    assert (bob["events"], bob["accepted"], bob["corrected"], bob["accepted_share"], bob["flag"]) == (
        2,
        1,
        1,
        0.5,
        None,
    )


def test_five_accepts_with_one_corrected_is_over_five_percent():
    llm = {("t", str(i)): {"llm:x": 1} for i in range(5)}
    history = [_h("amy", f"t {i}", None, "1", "shown", 100) for i in range(5)]
    history.append(_h("amy", "t 0", "1", "0", "shown", 3000))  # 1 of 5 accepts corrected: 20% > 5%
    events = speed.shown_events(history, shown_mode="shown", reveal_mode="reveal")
    (row,) = speed.rubber_stamp(events, llm, cannot_judge="cannot-judge", decode=lambda i: tuple(i.split(" ")))
    assert (row["accepted"], row["corrected"], row["corrected_share"], row["flag"]) == (5, 1, 0.2, None)


def test_anchoring_times_spread_the_changes_after_a_reveal():
    history = [
        _h("amy", "t 1", None, "3", "reveal", 900),  # first label: not a change
        _h("amy", "t 1", "3", "2", "reveal", 1200),
        _h("amy", "t 2", "1", "2", "reveal", 2400),
        _h("amy", "t 3", "1", "cannot-judge", "reveal", 50),  # left out
        _h("amy", "t 4", "1", "2", "shown", 70),  # not reveal mode
    ]
    times = speed.anchoring_times(history, reveal_mode="reveal", cannot_judge="cannot-judge")
    assert times == {"amy": {"n": 2, "median": 1800.0, "q1": 1500.0, "q3": 2100.0, "iqr": 600.0}}
