"""CLI: `python -m assess webhooks add|list|remove|log|deliver` (docs/api.md#webhooks).

The secret is read from standard input (``--secret-stdin``, first line), never a flag (flags end up in shell
histories and process lists), and never printed.
"""

from __future__ import annotations

import sys

from assess.cli import actor, add_by_argument, add_db_argument
from assess.cli.common import open_store, print_json
from assess.errors import AssessError, FormatError
from assess.services import webhooks


def add_commands(sub) -> None:
    p = sub.add_parser(
        "webhooks",
        help="signed webhooks of label, job, import and assignment events: add, list, remove, log, deliver",
        description="Webhooks (docs/api.md#webhooks): JSON bodies signed with X-Assess-Signature, delivered after "
        "the commit by `webhooks deliver`, at least once, with back-off and a delivery log.",
    )
    hooks = p.add_subparsers(dest="webhooks_command", metavar="ACTION")
    hooks.required = True

    q = hooks.add_parser("add", help="add a webhook (its secret from the first line of stdin)")
    add_db_argument(q)
    q.add_argument("url", metavar="URL")
    q.add_argument(
        "--event", required=True, help="label.saved, label.undone, job.finished, import.finished or assignment.done"
    )
    q.add_argument("--secret-stdin", action="store_true", required=True, help="read the signing secret from stdin")
    add_by_argument(q)
    q.set_defaults(func=cmd_add)

    q = hooks.add_parser("list", help="the live webhooks (never their secrets)")
    add_db_argument(q)
    q.set_defaults(func=cmd_list)

    q = hooks.add_parser("remove", help="stop a webhook (its delivery log stays)")
    add_db_argument(q)
    q.add_argument("id", metavar="ID", type=int)
    add_by_argument(q)
    q.set_defaults(func=cmd_remove)

    q = hooks.add_parser("log", help="the latest delivery attempts, newest first")
    add_db_argument(q)
    q.add_argument("--hook", type=int, help="one webhook's attempts only")
    q.set_defaults(func=cmd_log)

    q = hooks.add_parser("deliver", help="deliver due events, every --interval seconds until stopped (or --once)")
    add_db_argument(q)
    q.add_argument("--once", action="store_true", help="one round, then exit")
    q.add_argument("--interval", type=float, default=1.0, help="seconds between rounds (default 1)")
    q.add_argument(
        "--backoff", type=float, default=1.0, help="first retry delay in seconds, doubled each time (default 1)"
    )
    q.set_defaults(func=cmd_deliver)


def cmd_add(args) -> int:
    secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise AssessError("--secret-stdin: expected the secret on the first line of standard input, found none")
    hook = webhooks.add_webhook(open_store(args), args.url, args.event, secret, by=actor(args))
    print(f"webhook {hook}: {args.event} -> {args.url}")
    return 0


def cmd_list(args) -> int:
    print_json(webhooks.list_webhooks(open_store(args)))
    return 0


def cmd_remove(args) -> int:
    if not webhooks.remove_webhook(open_store(args), args.id, by=actor(args)):
        raise AssessError(f"ID: expected a live webhook's id (webhooks list), found {args.id}")
    print(f"webhook {args.id} removed")
    return 0


def cmd_log(args) -> int:
    print_json(webhooks.delivery_log(open_store(args), args.hook))
    return 0


def cmd_deliver(args) -> int:
    for option, given in (("--interval", args.interval), ("--backoff", args.backoff)):
        if not 0 < given <= 3600:
            raise FormatError(option, None, "seconds from 0 to 3600", str(given))
    db = open_store(args)
    if args.once:
        print_json(webhooks.deliver_once(db, backoff=args.backoff))
        return 0
    webhooks.deliver_forever(db, interval=args.interval, backoff=args.backoff)
    return 0
