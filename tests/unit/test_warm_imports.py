"""Issue 32: a served app imports the organizer pages' heavy modules (SciPy's statistics, Plotly, the audit
measures) in the background once per process, so a server's first /scores does not wait for them; AppTest
and the CLI (no Streamlit runtime) start nothing."""

from __future__ import annotations

import sys
import time

from assess.ui import frame


def test_no_runtime_no_thread(monkeypatch):
    monkeypatch.setattr(frame, "_warm_started", False)
    assert frame.warm_imports() is False and frame._warm_started is False


def test_a_served_app_imports_once_in_the_background(monkeypatch):
    from streamlit import runtime

    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(frame, "_warm_started", False)
    monkeypatch.setattr(frame, "WARM_MODULES", ("json.tool", "no_such_module_here"))
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    started = []
    real_thread = frame.threading.Thread

    def thread(**kwargs):
        started.append(kwargs["name"])
        return real_thread(**kwargs)

    monkeypatch.setattr(frame.threading, "Thread", thread)
    assert frame.warm_imports() is True
    assert frame.warm_imports() is False  # once per process
    assert started == ["assess-warm-imports"]
    for _ in range(200):
        if "json.tool" in sys.modules:
            break
        time.sleep(0.01)
    assert "json.tool" in sys.modules  # imported; the missing module was logged, not raised


def test_the_warm_modules_exist():
    import importlib.util

    assert all(importlib.util.find_spec(name) is not None for name in frame.WARM_MODULES)
