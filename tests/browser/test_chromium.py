"""The browser under the console's tests works on this machine: Debian's Chromium starts headless,
loads a page from a server on 127.0.0.1, runs its JavaScript, and its confirm() dialogs are
answered through ``page.on("dialog", ...)``, both ways.

The page is served by ``http.server`` in a thread, so a failure here is the browser's or its
launch's, never the console's.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.browser.conftest import LAPTOP, PHONE, Screenshot

PAGE = b"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>smoke</title>
</head>
<body>
<p>Job heartbeat is <span id="state">running</span>.</p>
<button id="pause" type="button">Pause</button>
<form id="remove" method="post" action="/remove">
  <input type="hidden" name="job" value="heartbeat">
  <button type="submit">Remove</button>
</form>
<p id="answer"></p>
<script>
  document.getElementById("pause").addEventListener("click", () => {
    document.getElementById("state").textContent = "paused";
  });
  document.getElementById("remove").addEventListener("submit", (event) => {
    if (!confirm("Remove job heartbeat?")) {
      event.preventDefault();
      document.getElementById("answer").textContent = "kept";
    }
  });
</script>
</body>
</html>
"""


@dataclass
class Site:
    url: str
    posted: list[dict[str, list[str]]] = field(default_factory=list)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The page above on 127.0.0.1 (a free port); POST /remove records its form and answers."""
    posted: list[dict[str, list[str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/":
                self._send(200, PAGE)
            else:
                self._send(404, b"not found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = parse_qs(self.rfile.read(length).decode("ascii"))
            if self.path != "/remove":
                self._send(404, b"not found")
                return
            posted.append(form)
            job = form["job"][0].encode("ascii")
            self._send(200, b'<!doctype html><p id="result">removed ' + job + b"</p>")

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: no access log
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="smoke-site", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Site(url=f"http://{host!s}:{port}", posted=posted)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def errors(page: Page) -> list[str]:
    """The page's uncaught JavaScript errors: each test below checks that there are none."""
    seen: list[str] = []
    page.on("pageerror", lambda error: seen.append(str(error)))
    return seen


def test_a_click_runs_the_pages_javascript(page: Page, site: Site, errors: list[str]) -> None:
    page.goto(site.url + "/")
    expect(page.locator("#state")).to_have_text("running")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#state")).to_have_text("paused")
    assert errors == []


def test_an_accepted_confirm_submits_the_form(page: Page, site: Site, errors: list[str]) -> None:
    asked: list[tuple[str, str]] = []

    def accept(dialog: Dialog) -> None:
        asked.append((dialog.type, dialog.message))
        dialog.accept()

    page.on("dialog", accept)
    page.goto(site.url + "/")
    before = len(site.posted)
    page.get_by_role("button", name="Remove").click()
    expect(page.locator("#result")).to_have_text("removed heartbeat")
    assert asked == [("confirm", "Remove job heartbeat?")]
    assert site.posted[before:] == [{"job": ["heartbeat"]}]
    assert page.url == site.url + "/remove"
    assert errors == []


def test_a_dismissed_confirm_keeps_the_page(page: Page, site: Site, errors: list[str]) -> None:
    asked: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.goto(site.url + "/")
    before = len(site.posted)
    page.get_by_role("button", name="Remove").click()
    expect(page.locator("#answer")).to_have_text("kept")
    assert asked == ["Remove job heartbeat?"]
    assert site.posted[before:] == []
    assert page.url == site.url + "/"
    assert errors == []


def _viewport(page: Page) -> dict[str, object]:
    shown: dict[str, object] = page.evaluate(
        "() => ({width: innerWidth, height: innerHeight, touch: navigator.maxTouchPoints > 0,"
        " coarse: matchMedia('(pointer: coarse)').matches})"
    )
    return shown


def test_the_laptop_and_phone_pages(page: Page, phone_page: Page, site: Site) -> None:
    page.goto(site.url + "/")
    phone_page.goto(site.url + "/")
    assert _viewport(page) == {**LAPTOP, "touch": False, "coarse": False}
    assert _viewport(phone_page) == {**PHONE, "touch": True, "coarse": True}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_screenshot_is_a_png_of_the_viewport(
    page: Page, site: Site, screenshot: Screenshot, tmp_path: Path
) -> None:
    """Into tmp_path: docs/console/ holds only the console's pictures."""
    page.goto(site.url + "/")
    path = screenshot(page, "smoke", folder=tmp_path)
    assert path == tmp_path / "smoke.png"
    assert _png_size(path) == (LAPTOP["width"], LAPTOP["height"])
    written = path.stat().st_mtime_ns
    assert screenshot(page, "smoke", folder=tmp_path) == path
    assert path.stat().st_mtime_ns == written, "the same picture again rewrote the file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smoke.png"]
    with pytest.raises(ValueError, match="lower-case"):
        screenshot(page, "../escape", folder=tmp_path)
