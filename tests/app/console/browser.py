"""Playwright driving Debian's Chromium (never a downloaded browser) for the console tests.

``PLAYWRIGHT_BROWSERS_PATH`` is not used: the browser is ``executable_path``, Debian's
``chromium`` package, which ``.ci/run`` installs. Pages are seen at a fixed window size,
so the screenshots in ``docs/console/`` are comparable run to run; they are written there
only with ``CPERSONA_WRITE_SCREENSHOTS=1`` (like the schema snapshot), else under the
test's own directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from playwright.async_api import Browser, Page, ViewportSize, async_playwright

from tests.app.oauth.browser import chromium_path

WINDOW: Final = ViewportSize(width=1280, height=800)
AXE: Final = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
AXE_SHA256: Final = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
DOCS: Final = Path(__file__).parents[3] / "docs" / "console"
TAB_LIMIT: Final = 60


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            await browser.close()


def screenshot_dir(tmp_path: Path) -> Path:
    return DOCS if os.environ.get("CPERSONA_WRITE_SCREENSHOTS") == "1" else tmp_path


def axe_source() -> str:
    """The vendored axe-core, checked against its pinned hash."""
    data = AXE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == AXE_SHA256, "the vendored axe-core changed"
    return data.decode()


async def tab_to(page: Page, text: str) -> None:
    """Press Tab until the focused element's text or label is ``text`` (keyboard only)."""
    for _ in range(TAB_LIMIT):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            "() => { const e = document.activeElement;"
            " return e ? (e.innerText || e.value || e.getAttribute('aria-label') || e.id || '')"
            ".trim() : ''; }"
        )
        if focused == text:
            return
    raise AssertionError(f"no focusable element {text!r} within {TAB_LIMIT} tabs")
