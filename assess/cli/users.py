"""CLI: accounts and roles (`users add|list|disable|enable|role|reset|link|token`). See docs/accounts.md.

A password is read from standard input (``--password-stdin``, first line) or generated and printed once;
it is never a flag (flags end up in shell histories and process lists) and never logged. Every change is
recorded in the history as the action of ``--by`` (default ``os:`` + the operating-system user).
"""

from __future__ import annotations

import json
import sys

from assess.cli import actor, add_by_argument, add_db_argument
from assess.cli.common import open_store
from assess.errors import AssessError
from assess.services import accounts, tokens

ROLES = ("assessor", "adjudicator", "organizer")


def add_commands(sub) -> None:
    p = sub.add_parser(
        "users",
        help="accounts and roles: add, list, disable, enable, role, reset, link, token",
        description="Accounts of assessors, adjudicators and organizers (docs/accounts.md). Passwords are "
        "stored as Argon2 hashes only; a generated password is printed once.",
    )
    users = p.add_subparsers(dest="users_command", metavar="ACTION")
    users.required = True

    def action(name: str, help_text: str, *, named: bool = True):
        q = users.add_parser(name, help=help_text, description=help_text)
        add_db_argument(q)
        if named:
            q.add_argument("name", metavar="NAME", help="the account name (also its label source)")
        add_by_argument(q)
        return q

    q = action("add", "create an account; prints a generated password once unless --password-stdin")
    q.add_argument("--role", choices=ROLES, required=True)
    q.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    q.add_argument("--no-password", action="store_true", help="no password: sign in by link (users link) only")
    q.add_argument("--email", help="the address an OpenID Connect provider reports for this person")
    q.set_defaults(func=cmd_add)

    q = action("list", "list the accounts (never a password or hash)", named=False)
    q.add_argument("--json", action="store_true", help="one JSON array")
    q.set_defaults(func=cmd_list)

    q = action("disable", "stop an account from signing in (its labels stay)")
    q.set_defaults(func=cmd_disable, disabled=True)
    q = action("enable", "let a disabled account sign in again")
    q.set_defaults(func=cmd_disable, disabled=False)

    q = action("role", "change an account's role")
    q.add_argument("--role", choices=ROLES, required=True)
    q.set_defaults(func=cmd_role)

    q = action("reset", "new password (printed once unless --password-stdin); every earlier sign-in link stops working")
    q.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    q.add_argument("--no-password", action="store_true", help="remove the password: sign in by link only")
    q.set_defaults(func=cmd_reset)

    q = action("link", "print a personal sign-in link, signed and expiring")
    q.add_argument(
        "--base-url", required=True, help="the app's address as assessors open it, e.g. https://assess.example.org"
    )
    q.add_argument("--minutes", type=int, default=1440, help="minutes the link stays valid (default 1440, a day)")
    q.set_defaults(func=cmd_link)

    q = action("token", "print a new personal token of the HTTP API once (docs/api.md), or --revoke every token")
    q.add_argument("--days", type=int, default=90, help="days the token stays valid (default 90)")
    q.add_argument("--revoke", action="store_true", help="end every live token of the account instead")
    q.set_defaults(func=cmd_token)


def _password(args) -> tuple[str | None, bool]:
    """(password from stdin or None, whether to generate one)."""

    if args.password_stdin and args.no_password:
        raise AssessError("--password-stdin and --no-password exclude each other")
    if args.no_password:
        return None, False
    if not args.password_stdin:
        return None, True
    entered = sys.stdin.readline().rstrip("\r\n")
    if not entered:
        raise AssessError("--password-stdin: expected a password on the first line of standard input, found none")
    return entered, False


def cmd_add(args) -> int:
    password, generate = _password(args)
    if password is not None:
        accounts.hash_password(password)  # refuse a short password before the store is opened or created
    db = open_store(args, must_exist=False)
    made = accounts.add_account(
        db, args.name, args.role, password=password, by=actor(args), email=args.email, generate=generate
    )
    print(f"added {args.name} ({args.role})")
    if made:
        print(f"password: {made}")
        print("(shown once: give it to the person; python -m assess users reset NAME makes a new one)", file=sys.stderr)
    return 0


def cmd_list(args) -> int:
    found = accounts.account_list(open_store(args))
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    if not found:
        print("no accounts (python -m assess users add NAME --role organizer creates the first)")
    for a in found:
        state = "disabled" if a["disabled"] else "active"
        how = "password" if a["password"] else "link only"
        print(
            f"{a['name']}\t{a['role']}\t{state}\t{how}\t{a['email'] or '-'}\tchanged {a['changed_at']} by {a['changed_by']}"
        )
    return 0


def cmd_disable(args) -> int:
    changed = accounts.set_disabled(open_store(args), args.name, args.disabled, by=actor(args))
    word = "disabled" if args.disabled else "enabled"
    print(f"{args.name} {word}" if changed else f"{args.name} was already {word}")
    return 0


def cmd_role(args) -> int:
    changed = accounts.set_role(open_store(args), args.name, args.role, by=actor(args))
    print(f"{args.name} is now {args.role}" if changed else f"{args.name} already was {args.role}")
    return 0


def cmd_reset(args) -> int:
    password, generate = _password(args)
    if password is not None:
        accounts.hash_password(password)
    made = accounts.reset_account(open_store(args), args.name, password=password, by=actor(args), generate=generate)
    print(f"reset {args.name}: earlier sign-in links no longer work")
    if made:
        print(f"password: {made}")
    return 0


def cmd_link(args) -> int:
    print(accounts.make_link(open_store(args), args.name, args.base_url, minutes=args.minutes))
    return 0


def cmd_token(args) -> int:
    db = open_store(args)
    if args.revoke:
        print(f"revoked {tokens.revoke_tokens(db, args.name, by=actor(args))} API token(s) of {args.name}")
        return 0
    token = tokens.new_token(db, args.name, days=args.days, by=actor(args))
    print(f"API token of {args.name}, valid {args.days} days (shown once; send it as 'Authorization: Bearer TOKEN'):")
    print(f"token: {token}")
    return 0
