"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

from tests import browser as browser_


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (Playwright's sync API runs one per process)."""
    with browser_.launched() as b:
        yield b
