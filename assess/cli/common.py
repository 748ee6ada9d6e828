"""What every command module shares: opening the store named by ``--db``, and the plain output forms."""

from __future__ import annotations

import json
import sys
from typing import Any

from assess.errors import FormatError
from assess.services import session
from assess.text import actor_problem


def open_store(args, *, must_exist: bool = True):
    """The store of ``args.db``; with ``must_exist``, a missing one is refused (AssessError naming it and the
    ``init`` command that creates it) instead of being created empty. A ``--by`` that looks like an account
    without being it (``Boss``, ``b0ss`` or the Cyrillic ``Воѕѕ`` beside the account ``boss``) is refused
    before anything is written."""

    db = session.open_store(args.db, must_exist=must_exist)
    by = getattr(args, "by", None)
    # before the command writes anything; a name breaking the character rules is refused by cli.actor, naming them
    if by is not None and actor_problem(by) is None and (alike := session.actor_look_alike(db, by)) is not None:
        db.close()
        raise FormatError(
            "--by", None, f"an account's exact name or a name no account's looks like ({alike!r})", repr(by)
        )
    return db


def print_json(obj: Any) -> None:
    """One JSON object on stdout (floats at full precision, no NaN)."""
    json.dump(obj, sys.stdout, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")


def cell(value: Any) -> str:
    """A table cell: ``-`` for None, floats with six decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain left-aligned table on stdout, columns two spaces apart, no trailing blanks."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def print_report(report: Any) -> int:
    """Print a report as strict JSON (a NaN is an error, not a token) and return the exit code 0."""
    print(json.dumps(report, allow_nan=False))
    return 0


def fmt_num(value: float | None, digits: int = 3) -> str:
    """A figure for a terminal table: ``-`` when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def text_table(header: list[str], rows: list[list]) -> None:
    """Print rows as left-aligned columns separated by two spaces."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
