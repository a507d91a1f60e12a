"""Debian's Chromium, headless, driven by Playwright (playwright-core's Python binding, with our
own browser: no download), for the HTML report's tests.

Every page records its console errors, uncaught exceptions and every request it makes, so a
test can assert the report is silent and offline. Set ``LOCALEVAL_REQUIRE_CHROMIUM=1`` (CI
does) to fail instead of skip when Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# The flags the machine's notes require: without the background-networking ones Chromium
# keeps trying to reach Google's hosts, which this machine refuses.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
ARTIFACTS = Path(os.environ.get("LOCALEVAL_ARTIFACTS",
                                Path(__file__).resolve().parent / "artifacts"))


def chromium_path() -> str:
    path = os.environ.get("LOCALEVAL_CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("LOCALEVAL_REQUIRE_CHROMIUM") == "1":
        pytest.fail("chromium not found (apt-get install chromium); LOCALEVAL_REQUIRE_CHROMIUM=1")
    pytest.skip("chromium not installed (Debian: apt-get install chromium)")


def _playwright():
    """Playwright's sync_playwright: without it (the `peer` extra not installed) a browser test
    is skipped as it is without Chromium, or fails where CI requires the browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        if os.environ.get("LOCALEVAL_REQUIRE_CHROMIUM") == "1":
            pytest.fail(f"playwright not importable ({e}); LOCALEVAL_REQUIRE_CHROMIUM=1")
        pytest.skip("playwright not installed (pip install -e \".[test]\")")
    return sync_playwright


@dataclass
class Watched:
    page: object
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@contextmanager
def open_page(url: str, user_data: Path, width: int = 1400, height: int = 900,
              env: dict[str, str] | None = None):
    """The page at ``url`` in a fresh headless Chromium profile, watched; ``env`` replaces
    the browser's environment (a test's own fontconfig, say)."""
    with _playwright()() as pw:
        context = pw.chromium.launch_persistent_context(
            str(user_data), executable_path=chromium_path(), headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": width, "height": height}, env=env)
        try:
            page = context.new_page()
            watched = Watched(page)
            page.on("console", lambda m: m.type == "error" and watched.console_errors.append(m.text))
            page.on("pageerror", lambda e: watched.console_errors.append(str(e)))
            page.on("request", lambda r: watched.requests.append(r.url))
            page.goto(url, wait_until="load")
            yield watched
        finally:
            context.close()


def screenshot(page, name: str, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
