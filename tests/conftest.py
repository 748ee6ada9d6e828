"""Shared fixtures: temporary databases, the shared data folder, the project root."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
CASES = SHARED / "cases"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def shared_file(*parts: str) -> Path:
    """Path to a file under ../shared, or skip the test with the reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is not beside this clone)")
    return path


@pytest.fixture
def db_file(tmp_path) -> Path:
    return tmp_path / "test.db"
