"""The HTTP API (`python -m assess api`): FastAPI, its own process beside Streamlit on the same store.

A front end like the pages and the CLI: it reads requests, calls ``assess.services`` and writes JSON (docs/api.md).
"""

from assess.api.app import create_app

__all__ = ["create_app"]
