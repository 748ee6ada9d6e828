"""The one place that touches Streamlit's private API; tests/unit/test_streamlit_internals.py guards it."""

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


def external_ip_off() -> None:
    """Streamlit never looks up this server's public address (``streamlit.net_util.get_external_ip``, an HTTP
    request to checkip.amazonaws.com): it returns None at once, without any network.

    Streamlit calls it for the "External URL" line of a headless start (``.streamlit/config.toml`` sets
    ``browser.serverAddress``, which already skips that line) and in the origin check of a cross-origin
    websocket handshake (``streamlit.web.server.server_util.is_url_from_allowed_origins``), which no option
    turns off: this patch does, from the first run of app.py on. A campaign server contacts nobody.
    """
    try:
        from streamlit import net_util
        from streamlit.web.server import server_util
    except ImportError as exc:
        raise StreamlitInternalsChanged(
            f"Streamlit {streamlit.__version__} has no streamlit.net_util ({exc})"
        ) from None
    for module, name in ((net_util, "get_external_ip"), (server_util, "is_url_from_allowed_origins")):
        if not callable(getattr(module, name, None)):
            raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__}: {module.__name__} has no {name}")
    if getattr(net_util.get_external_ip, "_assess_patched", False):
        return

    def get_external_ip() -> None:
        return None

    get_external_ip._assess_patched = True
    get_external_ip._assess_original = net_util.get_external_ip
    net_util.get_external_ip = get_external_ip  # both callers look it up on the module at call time


def legacy_run() -> bool:
    """True when the running script was started in Streamlit's legacy ``pages/``-folder mode.

    On a cold start the server's first session is created before app.py has imported this module, so
    its first run goes through Streamlit's ``_mpa_v1``, which lists every script of ``pages/`` (the
    organizer pages too) as the navigation and runs app.py as one of them. app.py asks this first and
    reruns (with the mode now off), so the first visitor gets the app frame, never that list.
    """
    import sys

    try:
        from streamlit.runtime.scriptrunner import script_runner
    except ImportError as exc:
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__} has no script_runner ({exc})") from None
    legacy = getattr(script_runner, "_mpa_v1", None)
    if legacy is None:
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__}: script_runner has no '_mpa_v1'")
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is legacy.__code__:
            return True
        frame = frame.f_back
    return False


def this_run() -> object | None:
    """An object that stands for the script run now going on (a full run or a fragment's), the same for its
    widget callbacks and its script, and another one for every later run: Streamlit's per-run cursor map,
    which ``ScriptRunContext.reset`` replaces before a run's callbacks are called. Compare with ``is`` while
    holding the object (a held object's identity cannot pass to a later one). None outside a script run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return None
    if not hasattr(ctx, "cursors"):
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__}: ScriptRunContext has no 'cursors'")
    return ctx.cursors


def session_id() -> str | None:
    """The id of the browser session whose script runs in this thread (Streamlit's ``ScriptRunContext``), the one
    ``Runtime.is_active_session`` takes; None outside a script run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return None
    if not isinstance(getattr(ctx, "session_id", None), str):
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__}: ScriptRunContext has no 'session_id'")
    return ctx.session_id


def cache_theme_messages() -> None:
    """Build each theme section of the message that starts every script run once per process, not at every run.

    Streamlit fills the six theme sections of each run's ``new_session`` message (a fragment's run too) by
    scanning every config option for each section: on a key press that was about 10% of a bare app's CPU. Theme
    options are read from the config files and the command line at start-up (the source watcher is off, and a
    page cannot set a theme option), so one process's sections never change; the first run's are copied into
    every later message. ``_THEME_SECTIONS.clear()`` forgets them (tests)."""
    try:
        from streamlit.runtime import app_session
    except ImportError as exc:
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__} has no app_session ({exc})") from None
    original = getattr(app_session, "_populate_theme_msg", None)
    if original is None:
        raise StreamlitInternalsChanged(f"Streamlit {streamlit.__version__}: app_session has no '_populate_theme_msg'")
    if getattr(original, "_assess_patched", False):
        return

    def populate(msg, section: str = "theme") -> None:
        built = _THEME_SECTIONS.get(section)
        if built is None:
            built = type(msg)()
            original(built, section)
            _THEME_SECTIONS[section] = built
        if built.ListFields():  # merging even an empty message would mark the section as set: a custom theme,
            msg.MergeFrom(built)  # and the browser would stop following the system's light or dark setting

    populate._assess_patched = True
    populate._assess_original = original
    app_session._populate_theme_msg = populate


_THEME_SECTIONS: dict[str, object] = {}
"""Each theme section's part of the run message, as Streamlit built it for this process's first run."""
