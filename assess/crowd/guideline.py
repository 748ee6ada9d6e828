"""A crowd study's guideline: the default title, consent, instructions, scales and worked examples of each task,
an organizer's JSON guideline checked and merged over them. Pure (no SQL, no Streamlit); the study's settings
live in :mod:`assess.crowd.rules`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assess.crowd.rules import StudyConfig
from assess.errors import AssessError
from assess.formats.reading import JsonChecker, read_json_object, read_text
from assess.tasks import SUPPORT


def default_guideline(config: StudyConfig) -> dict:
    """Consent, instructions and worked examples shown to workers (an organizer's file may override any key)."""
    consent = (
        "This is a research study on how well search assistants answer questions. You will read "
        "short texts and answer one question about each. It takes about 5-10 minutes. Your "
        "answers are stored with your platform worker id and the time you took per item, and "
        "are used only for research. You may stop at any time by closing the page."
    )
    if config.task == "ntr" and config.graded:
        return _graded_guideline(consent)
    if config.task == "ntr":
        return {
            "title": "Does the response contain this information?",
            "consent": consent,
            "instructions": (
                "Each screen shows a **response** written by a search assistant and a **nugget**: a short "
                "piece of information that a good answer should contain. Decide whether the response "
                "covers the nugget's information. The wording may differ; what matters is whether a "
                "reader of the response learns what the nugget says. If only part of the nugget's main "
                "fact is there, or the response says something different, answer No. Press **Y** for "
                "Yes or **N** for No, or click the buttons."
            ),
            "examples": [
                {
                    "response": "Most beginners train for about three months, running three times a week.",
                    "nugget": "Beginner plans usually last 10 to 12 weeks with three sessions a week.",
                    "answer": "Yes",
                    "why": "Three months is about 12 weeks; both say three sessions a week.",
                },
                {
                    "response": "Choose shoes that fit well and replace them every 500 to 800 km.",
                    "nugget": "Take a rest day between running sessions.",
                    "answer": "No",
                    "why": "The response says nothing about rest days.",
                },
                {
                    "response": "Solar panels still produce some power under cloud.",
                    "nugget": "On overcast days output falls to 10 to 25 percent of rated power.",
                    "answer": "No",
                    "why": "The nugget's key fact (how much output falls) is missing.",
                },
            ],
        }
    names = ", ".join(config.criteria)
    return {
        "title": "How good is this answer?",
        "consent": consent,
        "instructions": (
            "Each screen shows a conversation between a user and a search assistant, then the "
            f"assistant's **response** to the user's last question. Rate the response on the criterion "
            f"named on the screen ({names}) using the scale shown, with keys **0**-**3** or the buttons."
            + (" Press **X** if you are unable to judge." if config.allow_unable else "")
        ),
        "examples": [
            {
                "response": "(User asked how to start running.) Start with a walk-run plan three times a week.",
                "nugget": "relevance",
                "answer": "3",
                "why": "It answers the question directly.",
            },
            {
                "response": "(User asked how to start running.) The 10K world record is under 27 minutes.",
                "nugget": "relevance",
                "answer": "0",
                "why": "On the topic of running, but no help to the user.",
            },
        ],
    }


def _graded_guideline(consent: str) -> dict:
    """The default guideline of a graded NtR study: the three answers in the registry's words, keys 2 / 1 / 0."""
    name, meaning = SUPPORT.names, SUPPORT.definitions
    keys = "; ".join(f"**{v}** {name[v]}: {meaning[v]}" for v in sorted(SUPPORT.values, reverse=True))
    return {
        "title": "How much of this information does the response contain?",
        "consent": consent,
        "instructions": (
            "Each screen shows a **response** written by a search assistant and a **nugget**: a short "
            "piece of information that a good answer should contain. Decide how much of the nugget's "
            "information a reader of the response learns; the wording may differ. Answer with a key "
            f"or click the buttons: {keys}. If the response says something different from the nugget, "
            f"answer **0** {name[0]}."
        ),
        "examples": [
            {
                "response": "Most beginners train for about three months, running three times a week.",
                "nugget": "Beginner plans usually last 10 to 12 weeks with three sessions a week.",
                "answer": f"2 {name[2]}",
                "why": "Three months is about 12 weeks; both say three sessions a week.",
            },
            {
                "response": "Solar panels still produce some power under cloud, though less than in sun.",
                "nugget": "On overcast days output falls to 10 to 25 percent of rated power.",
                "answer": f"1 {name[1]}",
                "why": "The response says output falls, but not how much: part of the nugget, stated vaguely.",
            },
            {
                "response": "Choose shoes that fit well and replace them every 500 to 800 km.",
                "nugget": "Take a rest day between running sessions.",
                "answer": f"0 {name[0]}",
                "why": "The response says nothing about rest days.",
            },
        ],
    }


GUIDELINE_TEXTS = ("title", "consent", "instructions")


EXAMPLE_FIELDS = ("response", "nugget", "answer", "why")


GUIDELINE_SHAPE = (
    "a JSON object with any of title, consent, instructions (strings) and examples (a list of objects "
    "with any of response, nugget, answer, why: strings; answer may be an integer)"
)


def guideline_problem(guide: object) -> tuple[tuple, str, object] | None:
    """What is wrong with an organizer's guideline against its documented shape (:data:`GUIDELINE_SHAPE`):
    (JSON path, expected, found), or None. Every worker page of a study draws its guideline, so a
    wrong shape is refused when the study is created, never met by the workers."""
    if not isinstance(guide, Mapping):
        return (), GUIDELINE_SHAPE, guide
    for key, value in guide.items():
        if key not in (*GUIDELINE_TEXTS, "examples"):
            keys = ", ".join((*GUIDELINE_TEXTS, "examples"))
            return (key,), f"a guideline key ({keys})", repr(key)
        if key in GUIDELINE_TEXTS and not isinstance(value, str):
            return (key,), "a str", value
    examples = guide.get("examples", [])
    if not isinstance(examples, list):
        return ("examples",), "a list of example objects", examples
    for n, example in enumerate(examples):
        if not isinstance(example, Mapping):
            return ("examples", n), f"an example object with any of {', '.join(EXAMPLE_FIELDS)}", example
        for name, value in example.items():
            if name not in EXAMPLE_FIELDS:
                return ("examples", n), f"example fields {', '.join(EXAMPLE_FIELDS)}", repr(name)
            allowed = (str, int) if name == "answer" else (str,)
            if isinstance(value, bool) or not isinstance(value, allowed):
                return ("examples", n, name), "a str" + (" or int" if name == "answer" else ""), value
    return None


def read_guideline(path: str | Path) -> dict:
    """Read an organizer's guideline file (:data:`GUIDELINE_SHAPE`); a FormatError names the file, the line
    and the JSON path of the first value of the wrong shape."""

    guide = read_json_object(path)
    problem = guideline_problem(guide)
    if problem is not None:
        JsonChecker(path, read_text(path)).fail(*problem)
    return guide


def merge_guideline(config: StudyConfig, override: Mapping | None) -> dict:
    """The default guideline with the keys of an organizer's guideline replacing it (its shape checked)."""
    guide = default_guideline(config)
    if override:
        problem = guideline_problem(override)
        if problem is not None:
            where, expected, found = problem
            path = "".join(f"[{p!r}]" for p in where) or "the top level"
            found = found if isinstance(found, str) else f"{type(found).__name__} {str(found)[:40]!r}"
            raise AssessError(f"the guideline: expected {expected} at {path}, found {found}")
        guide.update(override)
    return guide
