"""Browser tests: Debian's Chromium, driven by Playwright's sync API.

Playwright's own browser download is never used (``playwright install`` fetches from a CDN that CI
cannot reach): the tests launch the Chromium that ``make browser-tools`` installs from Debian's
``chromium`` package, or the build ``CHROMIUM=/path/to/chromium`` names. Without one they are
skipped, except when ``CI`` is set: there a missing browser fails them, so CI never passes without
running them.

Fixtures:

* ``chromium_path`` (session): the Chromium executable.
* ``browser`` (session, so one per xdist worker): that Chromium, headless.
* ``page`` (function): a fresh context and page with a laptop's viewport; ``phone_page`` the same
  with a phone's (touch, mobile viewport). Each test gets its own cookies and storage.
* ``screenshot``: ``screenshot(page, name)`` saves ``docs/console/<name>.png``, the pictures the
  docs show (``folder=`` puts it elsewhere, e.g. a test's ``tmp_path``).

A dialog (alert, confirm, prompt) that no ``page.on("dialog", ...)`` handler answers is dismissed
by Playwright. Every test that uses ``browser`` (directly or through a page) is marked ``browser``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

from tests.conftest import ROOT

DEBIAN_CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "docs" / "console"

# Playwright passes most of these itself today; they are named here so that a Playwright release
# that drops one does not change what this machine needs. --no-sandbox: Chromium's sandbox refuses
# to start as root (CI runs as root). --disable-gpu: no GPU in a container or on CI. The rest keep
# Chromium from opening connections of its own (field trials, component and extension updates,
# sync, QUIC probes): the test machines' closed network refuses them, and a test must only reach
# the server it started on 127.0.0.1. A fresh --user-data-dir is Playwright's default (a temporary
# profile per launch, removed at close); Playwright refuses one in these arguments.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

LAPTOP: ViewportSize = {"width": 1366, "height": 850}
PHONE: ViewportSize = {"width": 390, "height": 844}

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")

Screenshot = Callable[..., Path]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def find_chromium() -> str | None:
    """The Chromium to launch: ``CHROMIUM`` when set, else ``chromium`` on PATH, else Debian's
    ``/usr/bin/chromium``; None when there is none."""
    named = os.environ.get("CHROMIUM", "").strip()
    if named:
        return named
    found = shutil.which("chromium")
    if found:
        return found
    return DEBIAN_CHROMIUM if os.access(DEBIAN_CHROMIUM, os.X_OK) else None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        reason = (
            "Chromium not found (no `chromium` on PATH, no /usr/bin/chromium): `make browser-tools`"
            " installs Debian's chromium package, or set CHROMIUM=/path/to/chromium"
        )
        if _in_ci():
            pytest.fail(f"{reason}. CI is set, so the browser tests may not be skipped")
        pytest.skip(reason)
    if not os.access(path, os.X_OK):
        # Named on purpose, so a typo fails rather than skipping every browser test.
        pytest.fail(f"CHROMIUM={path} is not an executable file")
    return path


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Browser]:
    """One headless Chromium per session: under pytest-xdist each worker is its own session, so
    each worker launches its own browser (and only a worker that runs a browser test does)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=list(CHROMIUM_ARGS)
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh context, with a laptop's viewport (1366x850)."""
    context = browser.new_context(viewport=LAPTOP)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def phone_page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh context, with a phone's viewport (390x844, mobile, touch)."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        yield context.new_page()
    finally:
        context.close()


def save_screenshot(
    page: Page, name: str, *, folder: Path = SCREENSHOTS, full_page: bool = False
) -> Path:
    """``page`` as ``<folder>/<name>.png`` (the docs' pictures by default). The file is rewritten
    only when its bytes change, so a run that renders the same page leaves the work tree clean:
    render fixed data (a fixed clock, fixed names) for a picture the repository keeps."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"screenshot name {name!r}: lower-case letters, digits and dashes only")
    folder.mkdir(parents=True, exist_ok=True)
    png = page.screenshot(full_page=full_page, animations="disabled", caret="hide")
    path = folder / f"{name}.png"
    if path.is_file() and path.read_bytes() == png:
        return path
    # Written beside and renamed, so a reader (or another xdist worker) never sees half a file.
    partial = folder / f".{name}.{os.getpid()}.png.partial"
    partial.write_bytes(png)
    partial.replace(path)
    return path


@pytest.fixture
def screenshot() -> Screenshot:
    """``screenshot(page, name, *, folder=docs/console, full_page=False)`` -> the PNG's path."""
    return save_screenshot


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # By what a test uses rather than where it lives: `-m "not browser"` leaves out every test
    # that starts Chromium (through `browser`, `page` or `phone_page`), and only those.
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
