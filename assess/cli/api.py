"""CLI: `python -m assess api`, the HTTP API server (docs/api.md): FastAPI under uvicorn, its own process."""

from __future__ import annotations

import os

from assess import api, lazylibs
from assess.cli import add_db_argument
from assess.errors import FormatError
from assess.services import api_judging


def add_commands(sub) -> None:
    p = sub.add_parser(
        "api",
        help="serve the HTTP API (queues, labels) with personal tokens",
        description="Serve the HTTP API (docs/api.md) on the store: OpenAPI at /openapi.json; requests carry a "
        "personal token (python -m assess users token NAME).",
    )
    add_db_argument(p)
    p.add_argument("--port", type=int, default=8600, help="TCP port (default 8600)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: behind nginx)")
    p.add_argument(
        "--workers", type=int, default=1, help="server processes sharing the port (default 1; each has its own threads)"
    )
    p.set_defaults(func=cmd_api)


def cmd_api(args) -> int:
    import uvicorn

    if not 1 <= args.port <= 65535:
        raise FormatError("--port", None, "a TCP port from 1 to 65535", str(args.port))
    if not 1 <= args.workers <= 64:
        raise FormatError("--workers", None, "a number of processes from 1 to 64", str(args.workers))
    # a missing or unreadable store is refused before the server starts (and migrated once)
    api_judging.open_store(args.db)
    options = {"host": args.host, "port": args.port, "log_level": "warning", "server_header": False}
    if args.workers == 1:
        lazylibs.load_deferred()  # the server's threads must not be the first to touch a waiting module
        uvicorn.run(api.create_app(args.db), **options)
        return 0
    # worker processes import the app by name: they find the store in the environment
    os.environ["ASSESS_DB"] = args.db
    uvicorn.run("assess.api.app:app_from_environment", factory=True, workers=args.workers, **options)
    return 0
