"""`python -m assess`: the command line of the workbench.

Contract (checked from outside the project): exit 0 on success; exit 2 on bad input with one
line on stderr naming the file, the line and what was expected vs found; nothing is written
on failure. The services a command module names at its top load when a command calls them
(:mod:`assess.lazylibs`), heavy libraries inside the functions that use them, so that
`python -m assess --help` stays fast.

Each command group lives in its own module exposing ``add_commands(subparsers)``; a command's
parser sets ``func`` to a callable taking the parsed ``args`` and returning an exit code.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys

from assess import lazylibs
from assess.errors import AssessError, FormatError
from assess.formats.reading import ID_RULE, id_problem
from assess.settings import db_target
from assess.text import actor_problem, terminal_text

with lazylibs.deferred():  # the store loads when a command reaches it, not for --help (assess/lazylibs.py)
    from assess.services import session

# Modules that contribute sub-commands, in the order they appear in --help.
COMMAND_MODULES = (
    "assess.cli.data",
    "assess.cli.score",
    "assess.cli.audit",
    "assess.cli.judge",
    "assess.cli.crowd",
    "assess.cli.nuggets",
    "assess.cli.banks",
    "assess.cli.users",
    "assess.cli.battles",
    "assess.cli.api",
    "assess.cli.webhooks",
    "assess.cli.sources",
)


def default_db() -> str:
    """The database the CLI and the app use: $ASSESS_DB, else data/assess.db in the project."""
    return db_target()


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=None,  # $ASSESS_DB is read after parsing (_main), not when the parser is built
        help="the store: a SQLite file (or sqlite:///FILE) or a postgresql://USER@HOST:PORT/DB URL "
        "(default: $ASSESS_DB, else data/assess.db)",
    )


def check_options(args, ids: dict[str, str] | None = None, counts: dict[str, str] | None = None) -> None:
    """Refuse bad option values with one line (``--name: expected ..., found ...``): the options named
    in ``ids`` must pass the id rule of :func:`assess.formats.reading.id_problem` when given, those in
    ``counts`` must be non-negative integers (both map option name to ``args`` attribute)."""

    for option, dest in (ids or {}).items():
        given = getattr(args, dest, None)
        if given is not None and (problem := id_problem(given)):
            raise FormatError(option, None, ID_RULE, problem)
    for option, dest in (counts or {}).items():
        given = getattr(args, dest, None)
        if given is not None and given < 0:
            raise FormatError(option, None, "a number >= 0", str(given))


def add_by_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by", help="who makes the change, for the history (default os:$USER)")


def actor(args) -> str:
    """Who acts, for the history of organizer actions: ``--by``, else ``os:`` and the operating-system user."""
    import getpass

    if getattr(args, "by", None) is not None:
        # the history and every listing show it: no escape sequence, bidi override or look-alike mixture
        if problem := actor_problem(args.by):
            raise FormatError("--by", None, problem.split(", found ")[0], problem.split(", found ", 1)[-1])
        return args.by
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):
        return "os:unknown"


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, built once per process: it has about 540 options, each costing argparse
    gettext lookups on disk (about 15 ms in all), and :func:`main` may run many times in one process (the
    tests, a script). Parsing leaves the parser as it was: its defaults are constants, and what depends on the
    environment is read after parsing (:func:`default_db`)."""
    parser = argparse.ArgumentParser(
        prog="python -m assess",
        description="Open assessment workbench for conversational search evaluation (TREC iKAT / CAsT).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            with lazylibs.deferred():  # the services a command module names load when it calls them
                module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.add_commands(sub)
    return parser


class TerminalStream:
    """Standard output or error with every piece of text passed through :func:`assess.text.terminal_text`:
    data (a name, a title, a file's text) never reaches a terminal with a raw control character (ESC
    sequences, carriage returns, bidi overrides, zero-width characters are written as ``\\u001b`` ...).
    Its escapes are JSON's, so ``--json`` output stays the same JSON. ``unescaped`` is the stream itself,
    for a data file written to standard output (:func:`data_output`)."""

    def __init__(self, stream):
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(terminal_text(text))
        return len(text)

    def writelines(self, lines) -> None:
        for text in lines:
            self.write(text)

    def __getattr__(self, name: str):
        return getattr(self.unescaped, name)


def data_output():
    """Where a command writes a data file (an export) asked for on standard output: the stream itself when it
    is a file or a pipe (the file's bytes unchanged), escaped like every other output on a terminal."""
    out = sys.stdout
    try:
        terminal = out.isatty()
    except (AttributeError, ValueError, OSError):
        terminal = False
    return out if terminal else getattr(out, "unescaped", out)


def progress_output():
    """Where a progress bar draws (stderr itself, unescaped): it writes carriage returns and cursor moves of
    its own, and only numbers, never data."""
    return getattr(sys.stderr, "unescaped", sys.stderr)


def main(argv: list[str] | None = None) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalStream(out), TerminalStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "db", "absent") is None:
        args.db = default_db()
    try:
        return int(args.func(args) or 0)
    except AssessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc.filename}: file not found", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        reason = session.database_error(exc)
        if reason is not None:
            print(f"error: {session.location(getattr(args, 'db', '') or '')}: {reason}", file=sys.stderr)
            return 2
        raise
