"""The browser tier's fixtures, so its modules use them without importing them: one Chromium per module
(``browser``) and pages in fresh contexts (``new_page``), from tests/browser_support.py."""

import contextlib

import pytest

# Without Chromium or Playwright the modules that need them skip on their own import of tests.browser_support;
# the others here (test_shutdown.py, test_st_client.py) still run.
with contextlib.suppress(pytest.skip.Exception):
    from tests.browser_support import browser, new_page  # noqa: F401  (fixtures)
