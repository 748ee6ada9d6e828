"""What several `audit` commands share: the reference and judge options, the human ceiling's minimum, and
intervals and pairs below that minimum in their tables."""

from __future__ import annotations

from assess.cli.common import fmt_num


def add_pair(p, other: str = "--judge", other_help: str = "the judge (default: an LLM source)") -> None:
    """The reference and the other source of a command comparing two (each chosen by kind when left out)."""
    p.add_argument("--reference", help="the reference source (default: a human one: an assessor, else imported qrels)")
    p.add_argument(other, help=other_help)


def add_min_shared(p) -> None:
    p.add_argument(
        "--min-shared",
        type=int,
        help="items two humans must share for their pair to enter the human ceiling (default 30; pairs below are "
        "listed, not pooled)",
    )


def ci_text(ci) -> str:
    return "" if not ci else f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]"


def below_minimum(pairs, minimum: int) -> None:
    for a, b, n in pairs:
        print(f"  not in the ceiling: {a} and {b} share {n} item(s), fewer than {minimum}")
