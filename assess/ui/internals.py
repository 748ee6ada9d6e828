"""The one place that touches Streamlit's private API; tests/test_streamlit_internals.py guards it."""

from __future__ import annotations

import streamlit


class StreamlitInternalsChanged(RuntimeError):
    """Streamlit no longer has the private piece this module relies on (after an upgrade)."""


def legacy_pages_off() -> None:
    """Keep Streamlit out of its legacy ``pages/``-folder mode, now and for every later PagesManager.

    Streamlit decides per PagesManager whether a ``pages/`` folder beside the entry script means
    "run page scripts directly" (multipage v1). app.py uses st.navigation, so that mode must never
    apply; without this a first visitor of ``/judge`` would skip sign-in (see ``frame_guard``).
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError as exc:
        raise StreamlitInternalsChanged(
            f"Streamlit {streamlit.__version__} has no streamlit.runtime.pages_manager.PagesManager ({exc})"
        ) from None
    if not hasattr(PagesManager, "uses_pages_directory"):
        raise StreamlitInternalsChanged(
            f"Streamlit {streamlit.__version__}: PagesManager has no attribute 'uses_pages_directory'"
        )
    if not getattr(PagesManager.__init__, "_assess_patched", False):
        original = PagesManager.__init__

        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            PagesManager.uses_pages_directory = False

        __init__._assess_patched = True
        __init__._assess_original = original  # Streamlit's own, for the test that proves the patch matters
        PagesManager.__init__ = __init__
    PagesManager.uses_pages_directory = False
