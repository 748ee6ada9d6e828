"""The prompt library for LLM pre-judgments: versioned templates, answer parsers, span repair.

A prompt's version is its name plus a short hash of its text (system message and template), so
changing a single character of a prompt makes a new version and every stored pre-judgment keeps
the version it was made with. Prompt texts are written for this project (the tasks follow TREC
iKAT passage and PTKB judging, CONE-RAG nugget extraction (its Table 3) and NtR matching (its
Table 4), and AEPD aspects; no paper's wording is reused).

Every field of a template is untrusted material (passages, utterances, the conversation, PTKB
statements, nuggets, responses): :meth:`Prompt.render` encloses each one between tags carrying a
random code drawn afresh for every call (``<data-7f3a9c04b2e1 field="passage">`` …
``</data-7f3a9c04b2e1>``), neutralises anything inside that looks like such a tag or like the old
``<<<``/``>>>`` fences, and the system message tells the model that enclosed text is material to
judge and never instructions. The code is not part of the version nor of the answer cache's key
(:meth:`Prompt.inputs` is what a cache hashes), so cached answers stay valid from run to run.

Parsers accept the usual answer shapes (a bare grade, ``Score: 3``, a JSON object, possibly in a
code fence) and return :class:`Parsed` with status ``ok``, ``repaired`` (spans fixed to exact
substrings) or ``unparseable`` (value None): an answer that fits no shape never becomes a label.

The texts are data: one TOML file a prompt in ``texts/`` (its name, task, variant, parser, token limits, the
system message's task text and the template), and ``texts/data-rule.txt``, the sentence every system message ends
with. :data:`LIBRARY` names the files in the order of :data:`PROMPTS`; a file that is not in it, or that misses a
field, is refused when the module loads. The parsers live in ``parsing``, the defusing of tag look-alikes in
``defusing``; every name is importable from ``assess.llm.prompts``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from assess.llm.prompts.defusing import neutralise
from assess.llm.prompts.parsing import (
    BATTLE_WORDS,
    CITATION_CONTRADICTS_WORDS,
    CITATION_WORDS,
    IMPORTANCE_WORDS,
    SUPPORT_WORDS,
    Parsed,
    bank_match_sentences,
    parse_aspects,
    parse_bank_match,
    parse_battle,
    parse_choice,
    parse_citation,
    parse_citation_contradicts,
    parse_grade,
    parse_importance,
    parse_spans,
    parse_support,
    parse_yes_no,
    resolve_spans,
)
from assess.tasks import ParseStatus

__all__ = [
    "Parsed",
    "Prompt",
    "ENCLOSURE",
    "TOKEN_BYTES",
    "neutralise",
    "new_token",
    "enclose",
    "DATA_RULE",
    "PASSAGE_SYSTEM",
    "PASSAGE_TEMPLATE",
    "PTKB_SYSTEM",
    "PTKB_TEMPLATE",
    "NTR_SYSTEM",
    "NTR_TEMPLATE",
    "NUGGET_SYSTEM",
    "NUGGET_TEMPLATE",
    "RESPONSE_NUGGET_SYSTEM",
    "RESPONSE_NUGGET_TEMPLATE",
    "AEPD_SYSTEM",
    "AEPD_TEMPLATE",
    "PASSAGE_NOPTKB_SYSTEM",
    "PASSAGE_NOPTKB_TEMPLATE",
    "NTR_SUPPORT_SYSTEM",
    "NTR_SUPPORT_TEMPLATE",
    "IMPORTANCE_SYSTEM",
    "IMPORTANCE_TEMPLATE",
    "CITATION_SYSTEM",
    "CITATION_TEMPLATE",
    "CITATION_CONTRADICTS_TEMPLATE",
    "BATTLE_SYSTEM",
    "BATTLE_TEMPLATE",
    "parse_grade",
    "parse_yes_no",
    "SUPPORT_WORDS",
    "IMPORTANCE_WORDS",
    "CITATION_WORDS",
    "CITATION_CONTRADICTS_WORDS",
    "BATTLE_WORDS",
    "parse_choice",
    "parse_support",
    "parse_importance",
    "parse_citation",
    "parse_citation_contradicts",
    "parse_battle",
    "resolve_spans",
    "parse_spans",
    "parse_aspects",
    "BANK_MATCH_SYSTEM",
    "BANK_MATCH_TEMPLATE",
    "parse_bank_match",
    "bank_match_sentences",
    "PROMPTS",
    "NO_PTKB",
    "CONTRADICTS",
    "VARIANTS",
    "prompt_for",
    "format_history",
    "format_ptkb",
]


# ------------------------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class Prompt:
    """One versioned prompt: a system message, a user template with ``{field}`` slots, and a parser.

    Every slot is filled with enclosed, neutralised material (:func:`enclose`); the system message may
    name the call's random code as ``{token}``.
    """

    name: str
    task: str
    system: str
    template: str
    parser: Callable[..., Parsed]
    max_tokens: int = 256  # generation cap sent with every call
    expected_output_tokens: int = 60  # for the cost estimate

    @property
    def version(self) -> str:
        text = f"{self.system}\x00{self.template}\x00{ENCLOSURE}"
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        return f"{self.name}@{digest}"

    @cached_property
    def fields(self) -> list[str]:
        return sorted(set(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", self.template)))

    def inputs(self, **values: str) -> dict[str, str]:
        """The untrusted values the template uses, by field: with :attr:`version`, what identifies a call's
        input for a cache (the random code of a call is not part of it)."""
        fields = self.fields
        missing = [f for f in fields if f not in values]
        if missing:
            raise ValueError(f"prompt {self.name} needs {', '.join(missing)}")
        return {f: str(values[f]) for f in fields}

    def render(self, *, token: str | None = None, **values: str) -> list[dict]:
        """The chat messages for one call: every field enclosed as data between tags with a fresh random code.

        ``token`` fixes the code (tests); by default a new one is drawn, never one that occurs in the values.
        """
        inputs = self.inputs(**values)
        if token is None:
            token = new_token(inputs.values())
        elif not _TOKEN.fullmatch(token):
            raise ValueError(f"a delimiter code is 8-32 lower-case hex digits, not {token!r}")
        return [
            {"role": "system", "content": self.system.replace("{token}", token)},
            {"role": "user", "content": self.template.format(**{f: enclose(f, v, token) for f, v in inputs.items()})},
        ]

    def parse(self, text: str | None, **context) -> Parsed:
        if text is None or not text.strip():
            return Parsed(ParseStatus.UNPARSEABLE, None, "empty answer")
        answer = _THINK.sub("", text)  # reasoning models (e.g. via Ollama) think aloud first
        if not answer.strip():
            return Parsed(ParseStatus.UNPARSEABLE, None, "only reasoning, no answer")
        return self.parser(answer, **context)


# ------------------------------------------------------------------------------------------- enclosure

ENCLOSURE = '<data-{token} field="{field}">\n{text}\n</data-{token}>'
"""How a field is enclosed; part of every prompt's version (change it and every version changes)."""

_TOKEN = re.compile(r"[0-9a-f]{8,32}")
TOKEN_BYTES = 6  # 12 hex digits: 2^48 codes, none guessable by the author of a passage


def new_token(values: Iterable[str] = ()) -> str:
    """A fresh random delimiter code that occurs in none of ``values`` (case-insensitive)."""
    texts = [v.lower() for v in values]
    while True:
        token = secrets.token_hex(TOKEN_BYTES)
        if not any(token in t for t in texts):
            return token


def enclose(field: str, text: str, token: str) -> str:
    """One field as data: neutralised text between an opening tag naming the field and the closing tag."""
    return ENCLOSURE.format(token=token, field=field, text=neutralise(text))


_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


# ------------------------------------------------------------------------------------------- the library

TEXTS = Path(__file__).with_name("texts")
"""The prompt files (read by path: the project runs from its checkout, not an installed copy)."""

DATA_RULE = (TEXTS / "data-rule.txt").read_text(encoding="utf-8").removesuffix("\n")
"""The sentence every system message ends with (``{token}``: the call's random code)."""

PARSERS: dict[str, Callable[..., Parsed]] = {
    "grade": parse_grade,
    "yes-no": parse_yes_no,
    "spans": parse_spans,
    "aspects": parse_aspects,
    "support": parse_support,
    "importance": parse_importance,
    "citation": parse_citation,
    "citation-contradicts": parse_citation_contradicts,
    "battle": parse_battle,
    "bank-match": parse_bank_match,
}
"""A prompt file's ``parser``: the function that reads its answers."""

LIBRARY: tuple[str, ...] = (
    "passage-relevance",
    "ptkb-relevance",
    "ntr-match",
    "nugget-extraction",
    "response-nuggets",
    "aepd-aspects",
    "ntr-support-grade",
    "nugget-importance",
    "citation-support",
    "battle-verdict",
    "bank-match",
    "passage-relevance-noptkb",
    "citation-support-contradicts",
)
"""Every prompt file, by name: the tasks' prompts in :data:`PROMPTS`' order, then the variants."""

_FIELDS = {
    "name": str,
    "task": str,
    "parser": str,
    "max_tokens": int,
    "expected_output_tokens": int,
    "system": str,
    "template": str,
}
_KIND_WORDS = {str: "a string", int: "an integer"}


def load_prompt(path: Path) -> tuple[str | None, Prompt]:
    """The prompt of one file and its variant (None: the task's own prompt). A file that is not one prompt
    (bad TOML, a field missing or of the wrong type, an unknown parser, a name other than the file's) is refused
    with a :class:`ValueError` naming the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: not a prompt file ({exc})") from None
    for key, kind in (*_FIELDS.items(), ("variant", str)):
        found = data.get(key)
        if (found is None and key != "variant") or (found is not None and type(found) is not kind):
            raise ValueError(f"{path}: {key} must be {_KIND_WORDS[kind]}, found {found!r}")
    unknown = sorted(set(data) - {*_FIELDS, "variant"})
    if unknown:
        raise ValueError(f"{path}: unknown field {unknown[0]!r}")
    if data["name"] != path.stem:
        raise ValueError(f"{path}: name {data['name']!r} is not the file's name {path.stem!r}")
    if data["parser"] not in PARSERS:
        raise ValueError(f"{path}: parser {data['parser']!r} is not one of {', '.join(PARSERS)}")
    variant = data.get("variant")
    system = f"{data['system']} {DATA_RULE}"  # the task's own text, then the rule every prompt shares
    prompt = Prompt(
        data["name"],
        data["task"],
        system,
        data["template"],
        PARSERS[data["parser"]],
        max_tokens=data["max_tokens"],
        expected_output_tokens=data["expected_output_tokens"],
    )
    return variant, prompt


def _load_library() -> tuple[dict[str, Prompt], dict[tuple[str, str], Prompt]]:
    stray = sorted(p.name for p in TEXTS.glob("*.toml") if p.stem not in LIBRARY)
    if stray:
        raise ValueError(f"{TEXTS}: prompt files not in the library: {', '.join(stray)}")
    prompts, variants = {}, {}
    for name in LIBRARY:
        variant, prompt = load_prompt(TEXTS / f"{name}.toml")
        if variant is None:
            prompts[prompt.task] = prompt
        else:
            variants[(prompt.task, variant)] = prompt
    return prompts, variants


_LOADED = _load_library()

PROMPTS: dict[str, Prompt] = _LOADED[0]
"""The current prompt of each task (``passage``, ``ptkb``, ``ntr``, ``nuggets``, ``response-nuggets``, ``aepd``,
``ntr-support``, ``importance``, ``citation``, ``battle``, ``bank-match``)."""

VARIANTS: dict[tuple[str, str], Prompt] = _LOADED[1]
"""Prompt variants by (task, variant): same task, same parser and labels, a version of their own."""

NO_PTKB = "no-ptkb"
"""The variant of the passage prompt without the user's PTKB statements (persona sensitivity)."""

CONTRADICTS = "contradicts"
"""The variant of the citation prompt that may answer "contradicts" (-2)."""

# Each prompt's texts under the names they had when they were constants of this module.
PASSAGE_SYSTEM, PASSAGE_TEMPLATE = PROMPTS["passage"].system, PROMPTS["passage"].template
PTKB_SYSTEM, PTKB_TEMPLATE = PROMPTS["ptkb"].system, PROMPTS["ptkb"].template
NTR_SYSTEM, NTR_TEMPLATE = PROMPTS["ntr"].system, PROMPTS["ntr"].template
NUGGET_SYSTEM, NUGGET_TEMPLATE = PROMPTS["nuggets"].system, PROMPTS["nuggets"].template
RESPONSE_NUGGET_SYSTEM, RESPONSE_NUGGET_TEMPLATE = (
    PROMPTS["response-nuggets"].system,
    PROMPTS["response-nuggets"].template,
)
AEPD_SYSTEM, AEPD_TEMPLATE = PROMPTS["aepd"].system, PROMPTS["aepd"].template
NTR_SUPPORT_SYSTEM, NTR_SUPPORT_TEMPLATE = PROMPTS["ntr-support"].system, PROMPTS["ntr-support"].template
IMPORTANCE_SYSTEM, IMPORTANCE_TEMPLATE = PROMPTS["importance"].system, PROMPTS["importance"].template
CITATION_SYSTEM, CITATION_TEMPLATE = PROMPTS["citation"].system, PROMPTS["citation"].template
BATTLE_SYSTEM, BATTLE_TEMPLATE = PROMPTS["battle"].system, PROMPTS["battle"].template
BANK_MATCH_SYSTEM, BANK_MATCH_TEMPLATE = PROMPTS["bank-match"].system, PROMPTS["bank-match"].template
PASSAGE_NOPTKB_SYSTEM = VARIANTS[("passage", NO_PTKB)].system
PASSAGE_NOPTKB_TEMPLATE = VARIANTS[("passage", NO_PTKB)].template
CITATION_CONTRADICTS_TEMPLATE = VARIANTS[("citation", CONTRADICTS)].template


def prompt_for(task: str, variant: str | None = None) -> Prompt:
    """The current prompt of ``task``, or its ``variant`` (:data:`VARIANTS`)."""
    if task not in PROMPTS:
        raise ValueError(f"no prompt for task {task!r}; tasks: {', '.join(PROMPTS)}")
    if variant is None:
        return PROMPTS[task]
    if (task, variant) not in VARIANTS:
        known = ", ".join(f"{v} ({t})" for t, v in VARIANTS) or "none"
        raise ValueError(f"no prompt variant {variant!r} of task {task!r}; variants: {known}")
    return VARIANTS[(task, variant)]


def format_history(history: Sequence[dict]) -> str:
    """The earlier turns of a conversation as 'User: … / System: …' lines ('(this is the first turn)' if none)."""
    lines = []
    for h in history:
        lines.append(f"User: {h.get('utterance') or ''}")
        if h.get("response"):
            lines.append(f"System: {h['response']}")
    return "\n".join(lines) or "(this is the first turn)"


def format_ptkb(ptkb: Sequence[dict]) -> str:
    """PTKB statements as numbered lines ('(none)' if there are none)."""
    return "\n".join(f"{s['id']}. {s['text']}" for s in ptkb) or "(none)"
