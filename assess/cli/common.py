"""What every command module shares: opening the store named by ``--db``, and the plain output forms."""

from __future__ import annotations

import json
import sys
from typing import Any


def open_store(args, *, must_exist: bool = True):
    """The store of ``args.db``; with ``must_exist``, a missing one is refused (AssessError naming it and the
    ``init`` command that creates it) instead of being created empty."""
    from assess.errors import AssessError
    from store import open_db
    from store.db import display, exists

    if must_exist and not exists(args.db):
        where = display(args.db)
        raise AssessError(f"{where}: no such database (create it with: python -m assess init --db {where})")
    return open_db(args.db)


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
