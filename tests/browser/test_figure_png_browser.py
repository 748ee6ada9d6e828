"""PNG export of a figure (assess.ui.plots.figure_png): kaleido renders it in Debian's Chromium, which is why
this lives in the browser tier (the default run needs no browser)."""

from __future__ import annotations

import os

import pytest

from assess.measures.gfrc import score_gfrc2_document
from assess.ui.plots import figure_png, gfrc2_curves
from tests.unit.test_gfrc import COPWA, ORG, document


def test_figure_png_renders_with_debian_chromium():
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("/usr/bin/chromium is absent: kaleido has no browser to render PNG")
    figure = gfrc2_curves(score_gfrc2_document(document(("COPWA", COPWA), ("ORG", ORG))))
    png = figure_png(figure, width=640, height=480)
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(png[16:20], "big") == 640 and int.from_bytes(png[20:24], "big") == 480
