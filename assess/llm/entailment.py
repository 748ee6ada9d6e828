"""The duplicate suggester the workbench is configured with: an NLI cross-encoder or the lexical one.

Lives with the LLM adapters because it may load a model; the pure rule (:mod:`assess.nuggets.dedup`)
only knows the :class:`~assess.nuggets.dedup.Entailment` protocol.
"""

from __future__ import annotations

from assess import settings
from assess.llm.clients import NliClient
from assess.nuggets.dedup import Entailment, LexicalEntailment


def nli_model_from_env() -> str | None:
    """The NLI model to suggest duplicates with ($ASSESS_NLI_MODEL: a Hugging Face name or a local folder)."""
    return settings.nli_model()


def configured_entailment(model: str | None = None) -> Entailment:
    """The NLI judge of ``model`` (default $ASSESS_NLI_MODEL) when one is configured, else the lexical
    suggester. The NLI model and its libraries load on first use."""
    model = model or nli_model_from_env()
    if not model:
        return LexicalEntailment()
    return NliClient(model)
