"""The one patch of Streamlit's private API (assess.ui.internals): it must still find what it patches,
and it must still work, after every Streamlit upgrade. A failure here names the version and the piece."""

from __future__ import annotations

import streamlit


def _pages_manager():
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError as exc:  # pragma: no cover - only after an incompatible upgrade
        raise AssertionError(
            f"Streamlit {streamlit.__version__} moved streamlit.runtime.pages_manager.PagesManager ({exc}); "
            "update assess/ui/internals.py"
        ) from None
    assert hasattr(PagesManager, "uses_pages_directory"), (
        f"Streamlit {streamlit.__version__}: PagesManager has no attribute 'uses_pages_directory'; "
        "update assess/ui/internals.py"
    )
    return PagesManager


def test_streamlit_still_has_what_the_patch_needs():
    _pages_manager()


def test_a_pages_folder_no_longer_switches_on_the_legacy_mode(tmp_path):
    from assess.ui.internals import legacy_pages_off

    manager = _pages_manager()
    (tmp_path / "pages").mkdir()
    script = tmp_path / "app.py"
    script.write_text("")
    saved = manager.uses_pages_directory
    try:
        legacy_pages_off()
        manager.uses_pages_directory = None  # as on a fresh server, before any manager decided
        manager(str(script))
        assert manager.uses_pages_directory is False, (
            f"Streamlit {streamlit.__version__}: a pages/ folder still turns on the legacy multipage mode "
            "despite assess.ui.internals.legacy_pages_off"
        )
        legacy_pages_off()  # a second call keeps one patch
        assert manager.uses_pages_directory is False
    finally:
        manager.uses_pages_directory = saved


def test_without_the_patch_streamlit_would_use_the_pages_folder(tmp_path):
    """Proves the test above tests something: Streamlit's own rule reads a pages/ folder as legacy mode."""
    manager = _pages_manager()
    (tmp_path / "pages").mkdir()
    saved = manager.uses_pages_directory
    try:
        manager.uses_pages_directory = None
        init = getattr(manager.__init__, "_assess_original", manager.__init__)  # Streamlit's own rule
        instance = object.__new__(manager)
        init(instance, str(tmp_path / "app.py"))
        assert manager.uses_pages_directory is True, (
            f"Streamlit {streamlit.__version__} no longer derives the legacy mode from a pages/ folder; "
            "assess/ui/internals.py may be unnecessary"
        )
    finally:
        manager.uses_pages_directory = saved


def test_theme_sections_are_built_once_and_equal_streamlits_own():
    """The run message's theme sections come from a per-process copy (assess.ui.internals.cache_theme_messages)
    that equals what Streamlit builds, with and without theme options set; the copy is built once."""
    from streamlit import config
    from streamlit.proto.NewSession_pb2 import CustomThemeConfig, NewSession
    from streamlit.runtime import app_session

    from assess.ui import internals

    internals.cache_theme_messages()
    patched = app_session._populate_theme_msg
    assert getattr(patched, "_assess_patched", False), (
        f"Streamlit {streamlit.__version__}: the theme message patch is not in place; update assess/ui/internals.py"
    )
    original = patched._assess_original
    sections = ["theme", "theme.light", "theme.dark", "theme.sidebar", "theme.light.sidebar", "theme.dark.sidebar"]
    saved = config.get_option("theme.primaryColor")
    try:
        for color in (None, "#aa3311"):
            config.set_option("theme.primaryColor", color)
            internals._THEME_SECTIONS.clear()
            for section in sections:
                ours, theirs = CustomThemeConfig(), CustomThemeConfig()
                patched(ours, section)
                original(theirs, section)
                assert ours == theirs, section
            # in the run message itself: an unset theme stays unset (the browser then follows the system's
            # light or dark setting), a set one is set
            ours, theirs = NewSession(), NewSession()
            patched(ours.custom_theme)
            original(theirs.custom_theme)
            assert ours.HasField("custom_theme") == theirs.HasField("custom_theme") == (color is not None)
            built = dict(internals._THEME_SECTIONS)
            patched(CustomThemeConfig(), "theme")
            assert internals._THEME_SECTIONS["theme"] is built["theme"]  # not built again
        assert internals._THEME_SECTIONS["theme"].primary_color == "#aa3311"
    finally:
        config.set_option("theme.primaryColor", saved)
        internals._THEME_SECTIONS.clear()


def test_streamlit_never_looks_up_the_external_ip(monkeypatch):
    """assess.ui.internals.external_ip_off: the lookup Streamlit makes for its banner and for a cross-origin
    websocket's origin check returns None without touching the network, and the origin check still works."""
    import socket

    from streamlit import net_util
    from streamlit.web.server import server_util

    from assess.ui.internals import external_ip_off

    assert callable(getattr(net_util, "get_external_ip", None)), (
        f"Streamlit {streamlit.__version__} has no streamlit.net_util.get_external_ip; update assess/ui/internals.py"
    )
    saved = net_util.get_external_ip

    def no_network(*args, **kwargs):
        raise AssertionError(f"network use: {args!r}")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(net_util, "_external_ip", None)
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: None)
    try:
        external_ip_off()
        external_ip_off()  # a second call keeps one patch
        assert net_util.get_external_ip() is None
        assert net_util.get_external_ip._assess_original is not net_util.get_external_ip
        assert server_util.is_url_from_allowed_origins("http://localhost:8501")
        assert not server_util.is_url_from_allowed_origins("https://elsewhere.example")
    finally:
        net_util.get_external_ip = saved
