"""One reader for the workbench's settings, all from ASSESS_* environment variables."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def db_path() -> Path:
    """The SQLite file: $ASSESS_DB, else data/assess.db under the project (git-ignored)."""
    value = os.environ.get("ASSESS_DB")
    return Path(value) if value else PROJECT_ROOT / "data" / "assess.db"


def organizer_password() -> str | None:
    """The organizer password ($ASSESS_ORGANIZER_PASSWORD); None means organizer pages are open."""
    return os.environ.get("ASSESS_ORGANIZER_PASSWORD") or None


def open_mode() -> bool:
    """Open mode: anyone who signs in gets a queue over all pools (default on; ASSESS_OPEN=0 turns it off)."""
    return os.environ.get("ASSESS_OPEN", "1") not in ("0", "false", "no")


def llm_settings() -> dict:
    """OpenAI-compatible endpoint settings: ASSESS_LLM_BASE_URL, ASSESS_LLM_MODEL, ASSESS_LLM_API_KEY."""
    return {
        "base_url": os.environ.get("ASSESS_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
        "model": os.environ.get("ASSESS_LLM_MODEL"),
        "api_key": os.environ.get("ASSESS_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"),
    }
