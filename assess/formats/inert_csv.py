"""CSV that a spreadsheet opens as data: the one place every CSV download and export is written through.

The rule (OWASP, "CSV Injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return is written with a single quote (``'``) in front, so Excel, LibreOffice and Google
Sheets read it as text and never as a formula (``=HYPERLINK("…")`` in a run or source name would
otherwise become a live link or a command). Only text is touched: numbers (``-1``, ``-0.25``) stay
numbers, and a text cell that begins with anything else is written as it is. The csv module's quoting
of commas, quotes and line breaks is kept. Column names are cells too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from assess import lazylibs

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(value: Any) -> Any:
    """``value`` with ``'`` in front when it is text that a spreadsheet would read as a formula; else as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def inert_frame(frame):
    """A copy of a pandas DataFrame whose text cells and column names pass :func:`inert_cell`."""
    is_numeric_dtype = lazylibs.pandas().api.types.is_numeric_dtype

    out = frame.copy()
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if not is_numeric_dtype(column):  # text, or mixed: each cell decides
            out.isetitem(position, column.map(inert_cell))
    out.columns = [inert_cell(c) for c in out.columns]
    return out


def frame_csv(frame, target: str | IO[str] | None = None) -> str | None:
    """Write a DataFrame as CSV (no index) with inert cells: to ``target`` (a path or an open text file),
    or return the text when ``target`` is None."""
    return inert_frame(frame).to_csv(target, index=False)


def write_dicts(
    out: IO[str], fields: Sequence[str], records: Iterable[Mapping], *, lineterminator: str = "\r\n"
) -> None:
    """Write dict records as CSV (a header of ``fields``, other keys ignored) with inert cells."""
    writer = csv.DictWriter(
        out, fieldnames=[inert_cell(f) for f in fields], extrasaction="ignore", lineterminator=lineterminator
    )
    writer.writeheader()
    renamed = dict(zip(fields, writer.fieldnames, strict=True))
    for record in records:
        writer.writerow({renamed[k]: inert_cell(v) for k, v in record.items() if k in renamed})


def dicts_csv(fields: Sequence[str], records: Iterable[Mapping], *, lineterminator: str = "\r\n") -> str:
    """:func:`write_dicts` into a string."""
    out = io.StringIO()
    write_dicts(out, fields, records, lineterminator=lineterminator)
    return out.getvalue()
