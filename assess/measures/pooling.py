"""Adaptive pooling as in iKAT 2024: which ranked passages an LLM's grades let into the pool (pure logic)."""

from __future__ import annotations


def adaptive_keep(rank: int | None, grade: int | None, *, threshold: int, always: int) -> bool:
    """Does a candidate enter the adaptive pool? Ranks 1..``always`` always do; deeper ones (and candidates of
    unknown rank) only when the LLM graded them ``>= threshold``; an ungraded deeper candidate stays out."""
    if rank is not None and rank <= always:
        return True
    return grade is not None and grade >= threshold
