"""The suite's tiers: every test file lives in a tier's folder, and every tier's marker is registered."""

from __future__ import annotations

import tomllib

from tests.conftest import ROOT, TESTS, TIERS


def test_every_test_file_is_in_a_tier_folder():
    misplaced = [
        str(path.relative_to(ROOT))
        for path in TESTS.rglob("test_*.py")
        if path.relative_to(TESTS).parts[0] not in TIERS
    ]
    assert misplaced == [], "move these into a tier folder (tests/unit, store, services, cli, app, ...)"


def test_every_tier_and_engine_marker_is_registered():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    registered = {line.split(":", 1)[0] for line in config["markers"]}
    assert set(TIERS) | {"postgresql", "both_engines"} <= registered
    assert "--strict-markers" in config["addopts"]
    assert "not browser and not deploy and not postgresql" in config["addopts"]
