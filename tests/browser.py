"""Headless Chromium for the report pages' tests and benchmark: Debian's ``chromium`` (``./run test`` installs it
where it can) driven by Playwright's Python package, with none of Chromium's background connections (this network
refuses them)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
from collections.abc import Iterator
from typing import Any

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str | None:
    """Chromium's executable: ``$SHARDKIT_CHROMIUM``, else ``chromium`` on the PATH (Debian's package)."""
    return os.environ.get("SHARDKIT_CHROMIUM") or shutil.which("chromium")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright's Python package is not installed (the test extra has it: pip install -e '.[test]')"
    if chromium() is None:
        return (
            "no Chromium: ./run test installs Debian's chromium with apt-get where it runs as root; "
            "elsewhere set SHARDKIT_CHROMIUM"
        )
    return None


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``) for the block's duration."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def opened(browser: Any, path: str, *, width: int = 1400, height: int = 900) -> Iterator[tuple[Any, list[str]]]:
    """``path`` open in a new page once it has drawn itself (``body[data-ready]``), with the console errors and
    uncaught exceptions it reports."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def offline(route: Any) -> None:  # the page must fetch nothing: anything but the file itself is an error
        if route.request.url.startswith(("file:", "data:", "about:")):
            route.continue_()
        else:
            errors.append(f"network request: {route.request.url}")
            route.abort()

    page.route("**/*", offline)
    try:
        page.goto(f"file://{os.path.abspath(path)}")
        try:
            page.wait_for_selector("body[data-ready=true]", timeout=10_000)
        except Exception as e:  # say why the page never drew itself
            raise AssertionError(f"{path} did not draw itself: {errors or e}") from None
        yield page, errors
    finally:
        page.close()
