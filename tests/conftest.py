"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

from tests import browser as browser_


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (Playwright's sync API runs one per process); a test that asks for it
    is skipped, saying why, where there is none."""
    if browser_.missing() is not None:
        pytest.skip(browser_.missing())
    with browser_.launched() as b:
        yield b
