"""CLI: `python -m assess api`, the HTTP API server (docs/api.md): FastAPI under uvicorn, its own process."""

from __future__ import annotations

from assess.cli import add_db_argument


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
    p.set_defaults(func=cmd_api)


def cmd_api(args) -> int:
    import uvicorn

    from assess.api import create_app
    from assess.errors import FormatError
    from assess.services.api_judging import open_store

    if not 1 <= args.port <= 65535:
        raise FormatError("--port", None, "a TCP port from 1 to 65535", str(args.port))
    open_store(args.db)  # a missing or unreadable store is refused before the server starts (and migrated once)
    # behind nginx on this machine: X-Forwarded-* only from there, no server header
    uvicorn.run(create_app(args.db), host=args.host, port=args.port, log_level="warning", server_header=False)
    return 0
