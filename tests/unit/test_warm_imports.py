"""Issue 32: a served app imports the organizer pages' heavy modules (SciPy's statistics, Plotly, the audit
measures) in the background once per process, so a server's first /scores does not wait for them, and watches
for the server stopping (to interrupt running queries); AppTest and the CLI start neither thread."""

from __future__ import annotations

import sys
import time

from assess.ui import frame


def test_no_runtime_no_thread(monkeypatch):
    monkeypatch.setattr(frame, "_STARTED", set())
    assert frame.served() is False
    assert frame.warm_imports() is False and frame.interrupt_on_shutdown() is False
    assert not frame._STARTED


def test_apptest_stand_in_runtime_is_not_a_served_app(monkeypatch):
    """AppTest puts a mock of the runtime in place while its script runs: not a server, so no thread starts."""
    from unittest.mock import MagicMock

    from streamlit.runtime import Runtime

    monkeypatch.setattr(Runtime, "_instance", MagicMock(spec=Runtime))
    assert frame.served() is False


def test_a_served_app_imports_once_in_the_background(monkeypatch):
    monkeypatch.setattr(frame, "served", lambda: True)
    monkeypatch.setattr(frame, "_STARTED", set())
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
