"""Crowd studies, pure part: settings, batching with hidden test items, quality control, majority
vote, agreement, completion codes and the platforms' entry parameters (no SQL, no Streamlit).

The design follows the published pilots:

- CONE-RAG (TREC iKAT 2024 gold nuggets): nugget-to-response (NtR) matching on MTurk in batches
  of 10 response-nugget pairs plus one hidden test question, 3 workers per batch, workers who fail
  the test discarded, labels aggregated by majority vote.
- CAsT 2022: response relevance, naturalness and conciseness (0-3) from Prolific workers; workers
  who rated a known-bad response 3 were screened out; ties take the mean of the labels.
- iKAT 2023: response relevance and completeness (0-3, -1 "unable to judge").

Storage lives in :mod:`store.crowd`; the worker page in ``pages/crowd.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from assess.errors import AssessError
from assess.formats.nuggetizer import ASSIGNMENTS
from assess.measures.agreement import fleiss_kappa, krippendorff_alpha
from assess.tasks import MATCH_SUPPORT, SUPPORT, Task, consensus

TASKS = ("ntr", "response")
QC_RULES = ("test", "known-bad", "none")
TIE_RULES = ("undecided", "mean")
PLATFORMS = ("prolific", "mturk", "direct", "import")

NTR_QUESTION = "Is the gold nugget of information covered in the response?"
NTR_SCALE = {1: "Yes", 0: "No"}
# Graded NtR studies (TREC 2024/2025 RAG): the registry's support scale, answered with keys 2 / 1 / 0.
NTR_GRADED_QUESTION = "How much of the gold nugget's information does the response contain?"
# The words a graded known answer or label may be written with (nuggetizer's assignment labels and
# the registry's names); yes/no words are refused on a graded study, these on a yes/no one.
SUPPORT_WORDS = {
    **ASSIGNMENTS,  # support, partial_support, not_support (written by exports)
    **{name.replace(" ", "_"): value for value, name in SUPPORT.names.items()},  # no_support
    "partial": 1,
}
YES_NO_WORDS = {"yes": 1, "no": 0, "y": 1, "n": 0}
UNABLE = -1  # iKAT 2023: "unable to judge"

# Response-quality criteria (0-3), as used by CAsT 2022 (relevance, naturalness, conciseness) and
# iKAT 2023 (relevance, completeness). Definitions written for this workbench.
CRITERIA: dict[str, dict] = {
    "relevance": {
        "question": "How relevant is the response to the user's last question, given the conversation so far?",
        "scale": {
            0: "Not relevant: it does not address the question",
            1: "Partly relevant: on the topic, but it does not answer the question",
            2: "Relevant: it answers the question, with some off-topic or missing parts",
            3: "Highly relevant: it directly answers the question in the context of the conversation",
        },
    },
    "completeness": {
        "question": "How completely does the response answer the user's last question?",
        "scale": {
            0: "Not at all: none of what the user needs",
            1: "Slightly: a small part of what the user needs",
            2: "Mostly: most of what the user needs, something important missing",
            3: "Completely: everything the user needs to know",
        },
    },
    "naturalness": {
        "question": "How natural and fluent does the response read, as something a person would say?",
        "scale": {
            0: "Unnatural: broken, robotic or hard to read",
            1: "Awkward: understandable but clumsy",
            2: "Mostly natural: small slips",
            3: "Natural: fluent, as a knowledgeable person would answer",
        },
    },
    "conciseness": {
        "question": "How concise is the response: does it say what is needed without padding?",
        "scale": {
            0: "Not concise: mostly padding, repetition or unrelated text",
            1: "Wordy: the answer is buried in unneeded text",
            2: "Fairly concise: a little unneeded text",
            3: "Concise: no unneeded text",
        },
    },
}
RESPONSE_SCALE = (0, 1, 2, 3)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
WORKER_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


# ------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class StudyConfig:
    """How a study is run and aggregated (stored as JSON with the study)."""

    task: Literal["ntr", "response"] = "ntr"
    batch_size: int = 10  # regular items per batch (CONE-RAG: 10)
    k: int = 3  # distinct workers per batch (CONE-RAG: 3)
    seed: int = 0  # test-item draw and position
    qc: Literal["test", "known-bad", "none"] = "test"
    bad_threshold: int = 3  # known-bad rule: a rating >= this on a known-bad item fails
    # majority-vote ties: None takes the task's default, 'mean' for a graded study (on three ordered
    # levels a 2-1-0 or 2-2-0-0 split reads as 1 partial support), else 'undecided'
    tie: Literal["undecided", "mean"] | None = None
    criteria: tuple[str, ...] = ()  # response task: which criteria (one screen each)
    allow_unable: bool = False  # response task: offer -1 "unable to judge" (iKAT 2023)
    platform: Literal["prolific", "mturk", "any"] = "any"
    prolific_code: str | None = None  # the study's Prolific completion code (redirect link)
    stale_minutes: int = 60  # an unfinished assignment idle this long frees its slot
    max_batches_per_worker: int = 0  # 0: no limit
    graded: bool = False  # ntr: support / partial support / no support (2/1/0) instead of yes/no

    def __post_init__(self):
        if self.tie is None:
            object.__setattr__(self, "tie", "mean" if self.graded is True else "undecided")
        if self.task not in TASKS:
            raise AssessError(f"task is one of {', '.join(TASKS)}, not {self.task!r}")
        if self.qc not in QC_RULES:
            raise AssessError(f"qc rule is one of {', '.join(QC_RULES)}, not {self.qc!r}")
        if self.tie not in TIE_RULES:
            raise AssessError(f"tie rule is one of {', '.join(TIE_RULES)}, not {self.tie!r}")
        if self.platform not in ("prolific", "mturk", "any"):
            raise AssessError(f"platform is prolific, mturk or any, not {self.platform!r}")
        for name in ("batch_size", "k"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise AssessError(f"{name} must be a positive integer, not {getattr(self, name)!r}")
        if self.task == "response":
            if not self.criteria:
                raise AssessError(f"a response study needs at least one criterion ({', '.join(CRITERIA)})")
            unknown = [c for c in self.criteria if c not in CRITERIA]
            if unknown:
                raise AssessError(f"unknown criterion {unknown[0]!r}; choose from {', '.join(CRITERIA)}")
        elif self.criteria:
            raise AssessError("criteria apply to response studies only")
        if not isinstance(self.graded, bool):
            raise AssessError(f"graded is true or false, not {self.graded!r}")
        if self.graded and self.task != "ntr":
            raise AssessError("graded applies to NtR studies only (support / partial support / no support)")
        if self.prolific_code is not None and not re.fullmatch(r"[A-Za-z0-9]{4,32}", self.prolific_code):
            raise AssessError(f"a Prolific completion code is 4-32 letters or digits, not {self.prolific_code!r}")

    @property
    def scale(self) -> tuple[int, ...]:
        """The answer values a worker can give (without -1)."""
        if self.task == "ntr":
            return SUPPORT.values if self.graded else (0, 1)
        return RESPONSE_SCALE

    @property
    def label_task(self) -> Task:
        """The label kind the aggregated labels are written as: ``ntr-support`` for a graded study
        (so scores read them on the graded scale), ``ntr`` for yes/no, ``response`` for quality."""
        if self.task == "ntr":
            return Task.NTR_SUPPORT if self.graded else Task.NTR
        return Task.RESPONSE

    @property
    def answers_named(self) -> str:
        """What this study's answers are, for messages: 'yes/no' or the graded scale with its keys."""
        if self.task != "ntr":
            return "ratings " + "/".join(str(v) for v in self.scale)
        if self.graded:
            return "graded: " + ", ".join(f"{v} {SUPPORT.names[v]}" for v in sorted(SUPPORT.values, reverse=True))
        return "yes/no: 1 yes, 0 no"

    def allowed(self) -> tuple[int, ...]:
        return self.scale + ((UNABLE,) if self.task == "response" and self.allow_unable else ())

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        if not self.graded:
            del data["graded"]  # a yes/no study's stored settings read as before graded studies existed
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StudyConfig:
        return _config_from_json(cls, text)


@functools.lru_cache(maxsize=64)
def _config_from_json(cls, text: str) -> StudyConfig:
    # Every answer reads its study's settings: parse each stored JSON text once (the result is frozen).
    data = json.loads(text)
    data["criteria"] = tuple(data.get("criteria") or ())
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def check_study_name(name: str) -> str:
    """A study name: 1-64 letters, digits, '.', '_' or '-' (its labels become source crowd:NAME)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise AssessError(f"a study name is 1-64 letters, digits, '.', '_' or '-', not {name!r}")
    return name


# ------------------------------------------------------------------------------------------- items


class KnownAnswer(NamedTuple):
    """An item the organizer answered: used as a hidden test item (turn, run, nugget key or criterion)."""

    turn_id: str
    run: str
    key: str  # '[k]' nugget key (ntr) or criterion name (response)
    value: int
    line: int | None = None


def ntr_id(batch: str, turn_id: str, nugget_key: str, run: str) -> str:
    """The CONE-RAG NtR id ``<batch>_<conv>_<turn>_<k>_<run>`` (turn ids are ``<conv>_<turn>``)."""
    k = nugget_key.strip("[]")
    if not k.isdigit():
        raise AssessError(f"the NtR TSV layout needs numeric nugget keys like [3], not {nugget_key!r}")
    return f"{batch}_{turn_id}_{k}_{run}"


# ------------------------------------------------------------------------------------------- batches


def make_batches(
    regular: Sequence, tests: Sequence, *, batch_size: int = 10, seed: int = 0
) -> list[list[tuple[object, bool]]]:
    """Cut ``regular`` items (in order) into batches of ``batch_size`` and put one test item into each.

    The test item of each batch is drawn from ``tests`` (shuffled with ``seed``, then used in turn, so
    every test item is used about equally often) and placed at a uniformly drawn position
    0..len(batch) (seeded). Returns, per batch, ``(item, is_test)`` in screen order. No tests: no
    test item. No regular items: no batches.
    """
    if batch_size < 1:
        raise AssessError(f"batch size must be positive, not {batch_size}")
    rng = random.Random(seed)
    pool = list(tests)
    rng.shuffle(pool)
    batches = []
    for number, start in enumerate(range(0, len(regular), batch_size)):
        batch: list[tuple[object, bool]] = [(item, False) for item in regular[start : start + batch_size]]
        if pool:
            test = pool[number % len(pool)]
            batch.insert(rng.randint(0, len(batch)), (test, True))
        batches.append(batch)
    return batches


# ------------------------------------------------------------------------------------------- answers


class Answer(NamedTuple):
    """One worker answer as the quality control and aggregation see it."""

    worker: str
    assignment: int
    batch: str
    item: int
    value: int
    seconds: float | None = None
    is_test: bool = False
    known: int | None = None  # the organizer's answer for test items
    criterion: str | None = None  # response studies: items are grouped per criterion for agreement


def test_failed(answer: Answer, rule: str, bad_threshold: int = 3) -> bool:
    """Whether a test answer fails the rule: 'test' (CONE-RAG) any answer other than the known one;
    'known-bad' (CAsT 2022) a rating >= ``bad_threshold`` on an item whose known answer is below it;
    'none' never."""
    if not answer.is_test:
        return False
    return qc_failed(answer.value, answer.known, rule, bad_threshold)


def qc_failed(value: int, known: int | None, rule: str, bad_threshold: int = 3) -> bool:
    """Whether the answer ``value`` to a test item with the known answer ``known`` fails the rule
    (see :func:`test_failed`); the store's slot count calls it through SQLite, so the rule lives here only."""
    if known is None or rule == "none":
        return False
    if rule == "test":
        return value != known
    if rule == "known-bad":
        return known < bad_threshold and value >= bad_threshold
    raise AssessError(f"qc rule is one of {', '.join(QC_RULES)}, not {rule!r}")


def screen_assignments(answers: Iterable[Answer], rule: str, bad_threshold: int = 3) -> dict[int, str | None]:
    """For every assignment: None when its labels are kept, else why they are discarded.

    An assignment (one worker's batch) is discarded as a whole when any of its test answers fails
    the rule (CONE-RAG discarded the HIT of a worker who failed the test question).
    """
    verdict: dict[int, str | None] = {}
    for a in answers:
        verdict.setdefault(a.assignment, None)
        if verdict[a.assignment] is None and test_failed(a, rule, bad_threshold):
            verdict[a.assignment] = f"test item {a.item}: answered {a.value}, known {a.known}"
    return verdict


class Vote(NamedTuple):
    label: int | None  # the aggregated label; None: undecided (tie under 'undecided', or no labels)
    mean: float | None  # mean of the counted labels (-1 'unable to judge' not counted)
    n: int  # labels counted
    counts: dict  # value -> how many
    tie: bool  # the top count was shared


def majority_vote(values: Sequence[int], tie: str = "undecided") -> Vote:
    """The most frequent label of one item; on a tie ``tie`` decides: 'undecided' (no label) or 'mean'
    (the mean of all counted labels, rounded half up: CAsT 2022 averaged the labels).

    Values of -1 ("unable to judge", iKAT 2023) are not counted; an item with only -1 labels gets -1.
    No values: label None, mean None, n 0.
    """
    if tie not in TIE_RULES:
        raise AssessError(f"tie rule is one of {', '.join(TIE_RULES)}, not {tie!r}")
    counted = [v for v in values if v != UNABLE]
    if not counted:
        return Vote(UNABLE if values else None, None, 0, {}, False)
    counts = Counter(counted)
    top = max(counts.values())
    leaders = sorted(v for v, c in counts.items() if c == top)
    mean = sum(counted) / len(counted)
    if len(leaders) == 1:
        return Vote(leaders[0], mean, len(counted), dict(sorted(counts.items())), False)
    label = consensus(counted) if tie == "mean" else None  # the mean rounded half up, as K LLM answers
    return Vote(label, mean, len(counted), dict(sorted(counts.items())), True)


def aggregate(answers: Iterable[Answer], config: StudyConfig, *, rejected: Iterable[str] = ()) -> dict[int, Vote]:
    """Majority vote per regular item over the kept answers (test items and rejected workers left out,
    assignments failing the study's QC rule discarded)."""
    answers = list(answers)
    verdict = screen_assignments(answers, config.qc, config.bad_threshold)
    rejected = set(rejected)
    labels: dict[int, list[int]] = defaultdict(list)
    for a in answers:
        if not a.is_test and verdict.get(a.assignment) is None and a.worker not in rejected:
            labels[a.item].append(a.value)
    return {item: majority_vote(values, config.tie) for item, values in sorted(labels.items())}


def agreement(
    answers: Iterable[Answer], config: StudyConfig, *, kept_only: bool = True, rejected: Iterable[str] = ()
) -> dict[str, dict]:
    """Fleiss' kappa and Krippendorff's alpha over the raw labels of regular items, per criterion
    (one group ``"match"`` for NtR).

    Fleiss' kappa needs the same number of raters for every item: it uses the items with the modal
    number of labels (of the items with at least 2; on a tie the larger number), reported as
    ``fleiss_items`` and ``fleiss_raters``, so it stays defined when QC discards some workers'
    batches. Krippendorff's alpha uses every item with at least 2 labels (nominal for NtR, ordinal
    for 0-3 grades). -1 labels are left out. ``kept_only`` drops discarded assignments and rejected
    workers first.
    """

    answers = list(answers)
    verdict = screen_assignments(answers, config.qc, config.bad_threshold) if kept_only else {}
    rejected = set(rejected) if kept_only else set()
    groups: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for a in answers:
        if a.is_test or a.value == UNABLE or verdict.get(a.assignment) or a.worker in rejected:
            continue
        groups[a.criterion or "match"][a.item].append(a.value)
    out = {}
    for name, items in sorted(groups.items()):
        labels = list(items.values())
        sizes = Counter(len(v) for v in labels if len(v) >= 2)
        raters = max(sizes, key=lambda n: (sizes[n], n)) if sizes else None
        exact = [v for v in labels if len(v) == raters]
        out[name] = {
            "items": len(labels),
            "labels": sum(len(v) for v in labels),
            "fleiss_items": len(exact),
            "fleiss_raters": raters,
            "fleiss_kappa": fleiss_kappa(exact, scale=config.scale, min_labels=raters) if exact else None,
            "krippendorff_alpha": krippendorff_alpha(
                labels,
                scale=config.scale,
                min_labels=2,
                level="nominal" if config.task == "ntr" and not config.graded else "ordinal",
            ),
        }
    return out


def worker_report(
    answers: Iterable[Answer],
    config: StudyConfig,
    *,
    decisions: Mapping[str, str | None] | None = None,
    rejected: Iterable[str] = (),
) -> list[dict]:
    """One row per worker for approve/reject decisions: assignments, answers, test accuracy (share of
    test answers passing the study's rule; exact match under 'none'), assignments discarded, median
    and mean seconds per item, and agreement with the majority (share of their regular answers equal
    to the item's aggregated label, over items with a decided label; their own vote included)."""
    answers = list(answers)
    verdict = screen_assignments(answers, config.qc, config.bad_threshold)
    votes = aggregate(answers, config, rejected=rejected)
    rule = config.qc if config.qc != "none" else "test"
    by_worker: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        by_worker[a.worker].append(a)
    rows = []
    for worker, own in sorted(by_worker.items()):
        tests = [a for a in own if a.is_test and a.known is not None]
        passed = sum(not test_failed(a, rule, config.bad_threshold) for a in tests)
        seconds = [a.seconds for a in own if a.seconds is not None]
        compared = [
            (a.value, votes[a.item].label)
            for a in own
            if not a.is_test and a.item in votes and votes[a.item].label not in (None, UNABLE)
        ]
        assignments = {a.assignment for a in own}
        rows.append(
            {
                "worker": worker,
                "decision": (decisions or {}).get(worker),
                "assignments": len(assignments),
                "discarded": sum(1 for x in assignments if verdict.get(x)),
                "answers": sum(not a.is_test for a in own),
                "tests": len(tests),
                "test_accuracy": passed / len(tests) if tests else None,
                "median_seconds": statistics.median(seconds) if seconds else None,
                "mean_seconds": sum(seconds) / len(seconds) if seconds else None,
                "agreement_with_majority": (sum(v == m for v, m in compared) / len(compared)) if compared else None,
                "compared": len(compared),
            }
        )
    return rows


# ------------------------------------------------------------------------------------------- entry


def answer_caption(criterion: str, value: int) -> str:
    """The short caption of a response-quality answer button (``"3 · ..."``): the rubric's words before the colon."""
    return f"{value} · {CRITERIA[criterion]['scale'][value].split(':')[0]}"


# ------------------------------------------------------------------------------------------- demo

DEMO_STUDY = "demo"
# Obvious items of the embedded demo, answered by the organizer (used as hidden test items):
# the rerank responses copy these nuggets almost word for word; the bm25 responses are about
# something else (race day, knee pain, rainwater).
DEMO_KNOWN_NTR = (
    KnownAnswer("101_1", "demo-bm25", "[1]", 0),
    KnownAnswer("101_1", "demo-rerank", "[2]", 1),
    KnownAnswer("101_2", "demo-rerank", "[1]", 1),
    KnownAnswer("101_3", "demo-bm25", "[2]", 0),
    KnownAnswer("102_1", "demo-rerank", "[3]", 1),
    KnownAnswer("102_1", "demo-bm25", "[4]", 0),
)
# Known-bad responses of the demo (CAsT 2022 screening: rating one of them 3 fails).
DEMO_KNOWN_RESPONSE = (
    KnownAnswer("102_1", "demo-bm25", "relevance", 0),
    KnownAnswer("102_1", "demo-bm25", "completeness", 0),
    KnownAnswer("101_1", "demo-bm25", "completeness", 0),
)


def demo_known(task: str = "ntr", *, graded: bool = False) -> tuple[KnownAnswer, ...]:
    """The demo's known answers: a graded demo reads the yes/no ones on the support scale (the rerank
    responses copy the nugget: yes = 2 support; the bm25 ones are about something else: no = 0)."""
    if task != "ntr":
        return DEMO_KNOWN_RESPONSE
    if graded:
        return tuple(k._replace(value=MATCH_SUPPORT[k.value]) for k in DEMO_KNOWN_NTR)
    return DEMO_KNOWN_NTR


def demo_name(task: str = "ntr", *, graded: bool = False) -> str:
    """The demo study's name: demo, demo-graded (graded NtR) or demo-response."""
    if task != "ntr":
        return f"{DEMO_STUDY}-response"
    return f"{DEMO_STUDY}-graded" if graded else DEMO_STUDY


def demo_config(task: str = "ntr", **overrides) -> StudyConfig:
    """The demo study's settings: NtR with the CONE-RAG rules (graded: ties by the mean rounded half
    up, as :func:`assess.tasks.consensus`), or response quality (relevance and completeness, iKAT
    2023 scale with -1) with the CAsT 2022 known-bad screening."""
    if task == "ntr" and overrides.get("graded"):
        base = dict(task="ntr", qc="test", tie="mean")
    elif task == "ntr":
        base = dict(task="ntr", qc="test", tie="undecided")
    else:
        base = dict(
            task="response", qc="known-bad", tie="mean", criteria=("relevance", "completeness"), allow_unable=True
        )
    base.update(overrides)
    return StudyConfig(**base)


@dataclass(frozen=True)
class ItemView:
    """What the worker's screen shows for one item (never the known answer or whether it is a test)."""

    item_id: int
    task: str
    response: str
    nugget: str | None = None
    criterion: str | None = None
    utterance: str | None = None
    history: tuple = field(default_factory=tuple)  # ((utterance, response), ...) before this turn
