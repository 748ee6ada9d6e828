"""The few exception classes the workbench raises on bad input."""

from __future__ import annotations


class AssessError(ValueError):
    """Base class: an input the workbench refuses, with a message fit for a user."""


class FormatError(AssessError):
    """A file does not have the format we expected at a given line."""

    def __init__(self, file: str, line: int | None, expected: str, found: str):
        self.file = str(file)
        self.line = line
        self.expected = expected
        self.found = found
        where = f"{self.file}:{line}" if line is not None else self.file
        super().__init__(f"{where}: expected {expected}, found {found}")


class InvalidSpan(AssessError):
    """A character span does not lie inside its passage or does not match its text."""


class UnknownItem(AssessError):
    """A label or import names a turn, passage, statement or source the store does not have."""
