"""Active time per judgment: each assessor's speed by task, passage length and hour, implausible speed, and
rubber-stamping of shown LLM labels (pure logic over plain history rows).

A label event's ``active_ms`` is measured in the browser (``assets/ui/active_time.js``): the time the item was on
screen with the tab visible and the window focused, up to :data:`IDLE_LIMIT_MS` after the assessor's last input
(a longer stretch without a key, pointer, wheel or scroll input counts only its first minute), from the item's
first drawing (or the previous timed press on it) to the key press or click that wrote the label.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence

IDLE_LIMIT_MS = 60_000
"""An input-free stretch longer than this counts only up to this limit (the browser's clock stops)."""

FAST_MEDIAN_MS = 1_500
FAST_MIN_LABELS = 20
"""The implausible-speed flag: a median active time under FAST_MEDIAN_MS over at least FAST_MIN_LABELS timed
labels of one task (reading a turn's passage and deciding takes seconds; a few fast labels are not a pattern)."""

STAMP_MIN_ACCEPTED = 5
STAMP_MEDIAN_MS = 500
STAMP_MAX_CORRECTED = 0.05
"""Potato's rubber-stamping flag (docs/advanced/annotation_telemetry.md of davidjurgens/potato, "Screening
flags"): at least 5 accepted suggestions, their median time under 500 ms, at most 5% of them corrected later."""

LENGTH_BUCKETS: tuple[tuple[int, str], ...] = ((500, "0-499"), (1000, "500-999"), (2000, "1000-1999"))
LONGEST_BUCKET = "2000+"
UNKNOWN_LENGTH = "unknown"
"""Passage length buckets in characters; a passage without stored text is ``unknown``."""

TIME_BUCKETS: tuple[tuple[int, str], ...] = ((500, "<0.5s"), (2000, "0.5-2s"), (10_000, "2-10s"))
SLOWEST_BUCKET = ">=10s"
UNTIMED = "untimed"
"""Time-taken buckets of one label event, by its active time in milliseconds."""


def spread(values: Sequence[float]) -> dict:
    """n, median, first and third quartile and their difference (IQR) of ``values``.

    Quartiles interpolate linearly between order statistics (``statistics.quantiles(method="inclusive")``,
    numpy's default): q = x[(n-1)p] with fractional positions interpolated. No values: n 0 and None for the
    rest; one value: every figure is that value.
    """
    xs = sorted(values)
    if not xs:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None}
    if len(xs) == 1:
        q1 = q3 = float(xs[0])
    else:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return {"n": len(xs), "median": float(statistics.median(xs)), "q1": q1, "q3": q3, "iqr": q3 - q1}


def _bucket(value: float, edges: tuple[tuple[int, str], ...], last: str) -> str:
    for upper, name in edges:
        if value < upper:
            return name
    return last


def length_bucket(chars: int | None) -> str:
    """The length bucket of a passage of ``chars`` characters (None: no text stored)."""
    return UNKNOWN_LENGTH if chars is None else _bucket(chars, LENGTH_BUCKETS, LONGEST_BUCKET)


def time_bucket(active_ms: int | None) -> str:
    """The time-taken bucket of one label event (None: not timed)."""
    return UNTIMED if active_ms is None else _bucket(active_ms, TIME_BUCKETS, SLOWEST_BUCKET)


def _ordered(groups: Mapping[str, list[int]], order: Sequence[str]) -> list[tuple[str, dict]]:
    known = [g for g in order if g in groups]
    return [(g, spread(groups[g])) for g in known + sorted(set(groups) - set(known))]


def speed_report(events: Iterable[Mapping], *, length_task: str = "passage") -> list[dict]:
    """Per assessor: the spread (:func:`spread`) of their timed label events' active time by task, by passage
    length (``length_task`` events only, :func:`length_bucket`), and by hour of the day (UTC, from the event's
    ``at``), with the implausible-speed flag per task (:data:`FAST_MEDIAN_MS`, :data:`FAST_MIN_LABELS`).

    ``events``: {assessor, task, active_ms, at ('2026-01-05T14:03:07.123Z'), length (characters or None)};
    untimed events (``active_ms`` None) are left out. Rows: {assessor, by: 'task' | 'length' | 'hour', group,
    task, n, median, q1, q3, iqr, flag}, assessors by name, groups in scale order.
    """
    per: dict[str, dict[str, dict[str, list[int]]]] = {}
    for e in events:
        ms = e.get("active_ms")
        if ms is None:
            continue
        who = per.setdefault(e["assessor"], {"task": {}, "length": {}, "hour": {}})
        who["task"].setdefault(e["task"], []).append(ms)
        if e["task"] == length_task:
            who["length"].setdefault(length_bucket(e.get("length")), []).append(ms)
        who["hour"].setdefault(f"{e['at'][11:13]}h", []).append(ms)
    out = []
    lengths = [name for _, name in LENGTH_BUCKETS] + [LONGEST_BUCKET, UNKNOWN_LENGTH]
    for assessor in sorted(per):
        groups = per[assessor]
        for by, order in (("task", ()), ("length", lengths), ("hour", ())):
            for group, s in _ordered(groups[by], order):
                flag = None
                if by == "task" and s["n"] >= FAST_MIN_LABELS and s["median"] < FAST_MEDIAN_MS:
                    flag = f"implausibly fast: median {s['median']:.0f} ms over {s['n']} labels"
                task = group if by == "task" else (length_task if by == "length" else None)
                out.append({"assessor": assessor, "by": by, "group": group, "task": task, **s, "flag": flag})
    return out


def speed_flags(report: Iterable[Mapping]) -> list[dict]:
    """The rows of :func:`speed_report` that carry a flag."""
    return [r for r in report if r["flag"]]


# ------------------------------------------------------------------------------------------- rubber-stamping


def shown_events(history: Iterable[Mapping], *, shown_mode: str, reveal_mode: str) -> list[dict]:
    """The label events written while another source's label was on screen, oldest first: every event in
    ``shown_mode``, and in ``reveal_mode`` the changes after the first (blind) label, which revealed it.

    ``history``: one task's assessor history rows oldest first (source, item, old, new, mode, active_ms).
    Each event gets ``later``: the value the assessor's label of the item holds after it (their last value).
    """
    rows = list(history)
    last: dict[tuple, str | None] = {}
    for h in rows:
        last[(h["source"], h["item"])] = h["new"]
    out = []
    for h in rows:
        if h["mode"] == shown_mode or (h["mode"] == reveal_mode and h["old"] is not None):
            out.append({**h, "later": last[(h["source"], h["item"])]})
    return out


def rubber_stamp(
    events: Iterable[Mapping],
    llm: Mapping[tuple[str, str], Mapping[str, int]],
    *,
    cannot_judge: str,
    decode: Callable[[str], tuple],
) -> list[dict]:
    """Per assessor and LLM source, over :func:`shown_events` whose item that LLM labelled: how many events
    there were and how many set the LLM's value (accepted), the share accepted by time-taken bucket
    (:func:`time_bucket`), the median active time of the accepted events, how many accepted values the
    assessor changed later (corrected), and Potato's flag (:data:`STAMP_MIN_ACCEPTED` accepted, median under
    :data:`STAMP_MEDIAN_MS`, at most :data:`STAMP_MAX_CORRECTED` of them corrected; untimed accepts do not
    count towards it). Events that remove a label or say 'cannot judge' are left out.

    ``llm``: {(turn, item): {LLM source: value}}; ``decode``: a history item as (turn, item).
    Rows: {assessor, llm, events, accepted, accepted_share, by_time: {bucket: {events, accepted, share}},
    accepted_median_ms, timed_accepted, corrected, corrected_share, flag}.
    """
    order = [name for _, name in TIME_BUCKETS] + [SLOWEST_BUCKET, UNTIMED]
    report: dict[tuple, dict] = {}
    for e in events:
        if e["new"] in (None, cannot_judge):
            continue
        turn, item = decode(e["item"])
        for src, value in llm.get((turn, item), {}).items():
            r = report.setdefault(
                (e["source"], src),
                {
                    "assessor": e["source"],
                    "llm": src,
                    "events": 0,
                    "accepted": 0,
                    "times": [],
                    "corrected": 0,
                    "by_time": {},
                },
            )
            hit = int(e["new"]) == value
            bucket = r["by_time"].setdefault(time_bucket(e.get("active_ms")), {"events": 0, "accepted": 0})
            r["events"] += 1
            bucket["events"] += 1
            if hit:
                r["accepted"] += 1
                bucket["accepted"] += 1
                if e.get("active_ms") is not None:
                    r["times"].append(e["active_ms"])
                r["corrected"] += int(e["later"] != e["new"])
    out = []
    for r in report.values():
        times = r.pop("times")
        median = float(statistics.median(times)) if times else None
        corrected_share = r["corrected"] / r["accepted"] if r["accepted"] else None
        flag = None
        if (
            len(times) >= STAMP_MIN_ACCEPTED
            and median is not None
            and median < STAMP_MEDIAN_MS
            and corrected_share is not None
            and corrected_share <= STAMP_MAX_CORRECTED
        ):
            flag = f"rubber-stamping: {len(times)} accepted, median {median:.0f} ms, {corrected_share:.0%} corrected"
        by_time = {
            b: {**r["by_time"][b], "share": r["by_time"][b]["accepted"] / r["by_time"][b]["events"]}
            for b in order
            if b in r["by_time"]
        }
        out.append(
            {
                **r,
                "accepted_share": r["accepted"] / r["events"] if r["events"] else None,
                "by_time": by_time,
                "accepted_median_ms": median,
                "timed_accepted": len(times),
                "corrected_share": corrected_share,
                "flag": flag,
            }
        )
    return sorted(out, key=lambda r: (r["assessor"], r["llm"]))


def anchoring_times(history: Iterable[Mapping], *, reveal_mode: str, cannot_judge: str) -> dict[str, dict]:
    """Per assessor: the spread (:func:`spread`) of the active time of their changes after a reveal (events in
    ``reveal_mode`` with an old value, 'cannot judge' and removals left out), the time the anchoring report
    (:func:`assess.measures.anchoring.anchoring`) gains."""
    times: dict[str, list[int]] = {}
    for h in history:
        if h["mode"] != reveal_mode or h["old"] is None or h["new"] in (None, cannot_judge):
            continue
        if h.get("active_ms") is not None:
            times.setdefault(h["source"], []).append(h["active_ms"])
    return {who: spread(ms) for who, ms in times.items()}
