"""The shipped Streamlit configuration, as `streamlit run app.py` in the project reads it."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def test_usage_statistics_are_off_so_the_browser_contacts_no_other_host():
    shown = subprocess.run(
        [sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "\ngatherUsageStats = false\n" in shown.stdout
