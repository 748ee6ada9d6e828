"""Label source names: the defaults of imports, the reserved names and the kinds of sources."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from assess.errors import AssessError

DEFAULT_SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "qrels": "nist",
        "ptkb-qrels": "nist",
        "nuggets": "human",
        "ntr-labels": "crowd:mturk",
        "nuggetizer-nuggets": "human",
    }
)
"""The label source an imported file's labels go to when none is named."""

RESERVED_SOURCES: frozenset[str] = frozenset(
    {*DEFAULT_SOURCES.values(), "nist", "human", "gold", "adjudication", "organizers"}
)
"""Label source names the workbench itself writes to (default imports, adjudication, the topics' PTKB
provenance, gold nuggets): nobody can sign in under one of them, in any letter case."""

RESERVED_SOURCE_PREFIXES: tuple[str, ...] = ("crowd:", "llm:")
"""Prefixes of the crowd aggregates' and LLM judges' source names, reserved like :data:`RESERVED_SOURCES`."""


def reserved_source(name: str) -> bool:
    """True when ``name`` (compared case-insensitively) is one of the workbench's own source names."""
    folded = name.strip().casefold()
    return folded in RESERVED_SOURCES or folded.startswith(RESERVED_SOURCE_PREFIXES)


class SourceKind(StrEnum):
    """What gave a label source's labels. The value is the ``kind`` the sources table records, except for
    :attr:`NLI`: an NLI judge's source is recorded as ``llm`` (:attr:`stored`) and told apart by its name."""

    ASSESSOR = "assessor"  # a person judging in the app
    ORGANIZERS = "organizers"  # the organizers themselves (e.g. the topics' PTKB provenance)
    IMPORT = "import"  # labels read from a file: NIST's qrels, a crowd platform's export, ...
    ADJUDICATION = "adjudication"  # an adjudicator's decisions between two sources
    CROWD = "crowd"  # a crowd study's aggregate
    LLM = "llm"  # a chat model's parsed answers
    NLI = "nli"  # a local NLI model's entailment decisions

    @property
    def stored(self) -> str:
        """The ``kind`` the sources table records for a source of this kind (its CHECK knows no ``nli``)."""
        return SourceKind.LLM.value if self is SourceKind.NLI else self.value


NLI_SOURCE_PREFIXES: tuple[str, ...] = ("nli:", "nli-ntn:")
"""Prefixes of the names an NLI judge's labels get by default (``nuggets match --backend nli``)."""


def source_kind(name: str, stored: str | None = None) -> SourceKind:
    """The kind of the source ``name``: the one place a source's kind is decided.

    ``stored``: the kind the sources table records for it, which wins (an ``llm`` source whose name starts
    with an NLI prefix is :attr:`SourceKind.NLI`). Without it the name decides, and only a reserved spelling
    says anything (anyone may name an import or sign in as ``nli:x``): ``llm:…`` an LLM, ``crowd:…`` the crowd,
    ``adjudication…`` adjudication, ``organizers`` the organizers; any other name is an import.
    """
    if stored is not None:
        try:
            kind = SourceKind(stored)
        except ValueError:
            raise AssessError(f"{stored!r} is not a kind of label source") from None
        if kind is SourceKind.LLM and name.startswith(NLI_SOURCE_PREFIXES):
            return SourceKind.NLI
        return kind
    if name.startswith("llm:"):
        return SourceKind.LLM
    if name.startswith("crowd:"):
        return SourceKind.CROWD
    if name.startswith("adjudication"):
        return SourceKind.ADJUDICATION
    if name == "organizers":
        return SourceKind.ORGANIZERS
    return SourceKind.IMPORT
