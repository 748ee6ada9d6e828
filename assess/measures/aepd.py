"""AEPD: personalization and diversification scores of a conversational turn.

Hiramatsu, Takehi, Sakai (2025), BREV-RAG @ SIGIR-AP, Section 3; docs/measures.md#aepd;
reference code ``risa-hira/AEPD`` ``AEPD_calculation.py``.

A turn lists the aspects A'_all of its topic. Each aspect is personal when it is linked to at
least one profile (PTKB) statement (A'_per) and has the words the response spends on it; the
aspects with at least one word form A_all (those covered by the response), and A_per = A_all ∩ A'_per.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from assess import lazylibs
from assess.errors import FormatError

SCORE_KEYS = ("NPP", "NPCL", "P", "AR", "CLU", "D")


def score_aepd_turn(lengths: Sequence[int], personal: Sequence[bool]) -> dict[str, float]:
    """Compute NPP, NPCL, P, AR, CLU and D for one turn from per-aspect word counts.

    ``lengths[i]`` = words about aspect i in the response (0 = not covered), ``personal[i]`` = the
    aspect is linked to a profile statement; the lists cover every aspect of the topic (A'_all).
      PP = |A_per|/|A_all| (Eq. 1), PP' = |A'_per|/|A'_all| (Eq. 2),
      NPP = max(0, PP - PP')/(1 - PP'), 0 if PP' = 1 (Eq. 3);
      L_all = sum of l(a) over A_all (Eq. 4); L_per, L_nonper = mean l(a) over A_per, A_nonper,
      0 if empty (Eqs. 5-6); NPCL = max(0, L_per - L_nonper)/(L_all - L_nonper), 0 if L_all = L_nonper
      (Eq. 7); P = NPP * NPCL (Eq. 8);
      AR = |A_all|/|A'_all| (Eq. 9); l'(a) = l(a)/L_all, l* = 1/|A_all| (Eqs. 10-11);
      CLU = 1 - RNSS(l', l*) = 1 - sqrt(sum (l'(a) - l*)^2 / 2) (Eqs. 12-14); D = AR * CLU (Eq. 15).
    Degenerate (as in the reference code): no aspect covered gives PP = 0, NPP = NPCL = P = 0,
    AR = 0, CLU = 1 (empty sum of squares) and D = 0; no aspect listed gives AR = 0.
    """
    if len(lengths) != len(personal):
        raise FormatError(
            "<arguments>",
            None,
            "one personal flag per aspect length",
            f"{len(lengths)} lengths and {len(personal)} flags",
        )
    for value in lengths:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise FormatError("<arguments>", None, "word counts as non-negative integers", repr(value))
    n_general = len(lengths)
    n_general_personal = sum(1 for flag in personal if flag)
    covered = [(length, bool(flag)) for length, flag in zip(lengths, personal) if length > 0]
    n_all = len(covered)
    per = [length for length, flag in covered if flag]
    nonper = [length for length, flag in covered if not flag]

    pp = len(per) / n_all if n_all else 0.0
    pp_general = n_general_personal / n_general if n_general else 0.0
    npp = 0.0 if pp_general == 1 else max(0.0, pp - pp_general) / (1.0 - pp_general)

    l_all = sum(length for length, _ in covered)
    l_per = sum(per) / len(per) if per else 0.0
    l_nonper = sum(nonper) / len(nonper) if nonper else 0.0
    npcl = 0.0 if l_all == l_nonper else max(0.0, l_per - l_nonper) / (l_all - l_nonper)

    ar = n_all / n_general if n_general else 0.0
    if n_all:
        share = 1.0 / n_all
        ss = sum((length / l_all - share) ** 2 for length, _ in covered)
    else:
        ss = 0.0
    clu = 1.0 - math.sqrt(ss / 2.0)
    return {"NPP": npp, "NPCL": npcl, "P": npp * npcl, "AR": ar, "CLU": clu, "D": ar * clu}


def tradeoff(p_scores: Sequence[float], d_scores: Sequence[float]) -> dict[str, Any]:
    """Compute Kendall's tau-b (and two-sided p) between P and D over turns where both are > 0.

    As in AEPD Section 4 (Figure 4b: tau = -0.328, p = 0.0003, n = 59), via scipy.stats.kendalltau.
    Degenerate: fewer than 2 such turns, or P or D constant over them, gives tau = p = None.
    """
    kendalltau = lazylibs.scipy_stats().kendalltau

    if len(p_scores) != len(d_scores):
        raise FormatError("<arguments>", None, "as many P scores as D scores", f"{len(p_scores)} and {len(d_scores)}")
    pairs = [(p, d) for p, d in zip(p_scores, d_scores) if p > 0 and d > 0]
    n = len(pairs)
    if n < 2 or len({p for p, _ in pairs}) < 2 or len({d for _, d in pairs}) < 2:
        return {"n": n, "kendall_tau": None, "p_value": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kendalltau([p for p, _ in pairs], [d for _, d in pairs])
    tau, p_value = float(result.statistic), float(result.pvalue)
    if math.isnan(tau):
        return {"n": n, "kendall_tau": None, "p_value": None}
    return {"n": n, "kendall_tau": tau, "p_value": None if math.isnan(p_value) else p_value}


def _aspect_length(aspect: Mapping, where: str, source: str) -> int:
    if "length" in aspect and aspect["length"] is not None:
        value = aspect["length"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise FormatError(source, None, f"a non-negative integer length in {where}", repr(value))
        return value
    text = aspect.get("text")
    if text is None:
        return 0
    if not isinstance(text, str):
        raise FormatError(source, None, f"text as a string in {where}", repr(text)[:60])
    return len(text.split())  # whitespace split, as in the reference code


def score_aepd_document(data: Mapping, *, source: str = "<data>") -> dict[str, Any]:
    """Score every turn of an AEPD document and the P-D trade-off over its turns.

    Input ``{"turns": [{"id", "aspects": [{"aspect", "ptkb": [statement ids], "text": str |
    "length": int}]}]}``; an aspect is personal iff ``ptkb`` is non-empty; its length is ``length``
    if given, else the whitespace word count of ``text`` (missing/empty = not covered).
    Returns ``{"turns": {id: {"NPP","NPCL","P","AR","CLU","D"}}, "tradeoff": {"n","kendall_tau","p_value"}}``
    (see :func:`score_aepd_turn` and :func:`tradeoff`).
    """
    turns = data.get("turns") if isinstance(data, Mapping) else None
    if not isinstance(turns, Sequence) or isinstance(turns, (str, bytes)):
        raise FormatError(source, None, 'an object with a "turns" list', type(turns).__name__)
    scores: dict[Any, dict[str, float]] = {}
    for pos, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or "id" not in turn:
            raise FormatError(source, None, f"turn #{pos + 1} as an object with an id", repr(turn)[:60])
        tid = turn["id"]
        if tid in scores:
            raise FormatError(source, None, "distinct turn ids", repr(tid))
        aspects = turn.get("aspects")
        if not isinstance(aspects, Sequence) or isinstance(aspects, (str, bytes)):
            raise FormatError(source, None, f"an aspects list in turn {tid!r}", repr(aspects)[:60])
        lengths, personal = [], []
        for ai, aspect in enumerate(aspects):
            where = f"turn {tid!r} aspect #{ai + 1}"
            if not isinstance(aspect, Mapping):
                raise FormatError(source, None, f"an object in {where}", repr(aspect)[:60])
            ptkb = aspect.get("ptkb") or []
            if not isinstance(ptkb, Sequence) or isinstance(ptkb, str):
                raise FormatError(source, None, f"ptkb as a list in {where}", repr(ptkb)[:60])
            lengths.append(_aspect_length(aspect, where, source))
            personal.append(len(ptkb) > 0)
        scores[tid] = score_aepd_turn(lengths, personal)
    trade = tradeoff([s["P"] for s in scores.values()], [s["D"] for s in scores.values()])
    return {"turns": scores, "tradeoff": trade}
