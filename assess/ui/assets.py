"""The UI's JavaScript and CSS, kept as files in ``assets/ui/`` and read once at import."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "ui"


def asset(name: str) -> str:
    """The text of ``assets/ui/<name>``."""
    return (ASSETS / name).read_text(encoding="utf-8")


CSS = "\n<style>\n" + asset("frame.css") + "</style>\n"
"""The inert-text styles, injected before the blocks that use them."""
