"""The operator console's page in headless Chromium, over ``make run``'s in-process scheduler:
what the page shows, what its buttons do, and what the stores then hold.

The console is served over a local scheduler (moto in this process: one at a time per xdist
worker) on the sample cron file, ticked for six minutes of a fixed clock (13:58 to 14:03 UTC on
30 November 2026: 24 heartbeats, the morning report at 09:00 New York time; the hourly cleanup's
first firing, 14:15, is still to come), on a free port of 127.0.0.1, its page reading every
second. The clock lets the handlers in flight end before it moves, so every run starts and ends at
its firing's second whatever the threads' speed: the pictures saved in docs/console/ are the same
on every run.

The tests that only read (:class:`TestReading`) share one such console per worker, and its
teardown checks that they wrote nothing; each test that acts gets a fresh one (``console``).

Every test also checks that the page raised no JavaScript error, logged no console error and had
no request refused or failed (:func:`watch`).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from mini_scheduler.audit.base import MAX_REASON
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import DEFAULT_PARAMETER
from mini_scheduler.console.app import CSRF_HEADER, create_app
from mini_scheduler.console.local import local_console
from mini_scheduler.console.server import ConsoleServer
from mini_scheduler.local.scheduler import LocalScheduler
from mini_scheduler.model import RunStatus
from tests.browser.conftest import PHONE, Screenshot
from tests.conftest import ROOT

SAMPLE = ROOT / "samplecode" / "cron.yaml"
START = datetime(2026, 11, 30, 13, 58, tzinfo=UTC)  # 09:00 New York (EST) is 14:00 UTC
MINUTES = 6  # ticked before the page opens: 24 heartbeats, more than a page of history (20)
SEEN_AT = 50  # the second of the last ticked minute the clock is left at (no firing then)
OPERATOR = "jane.doe"
JOBS = ["morning-report", "hourly-cleanup", "heartbeat"]
WAIT_MS = 5000  # how long the page may take to show a change (it reads every second)


class SettlingClock(FixedClock):
    """A fixed clock that lets the handlers in flight end (``settle``) before it moves: a run
    then starts and ends at its firing's second, however fast the handler threads are."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.settle: Callable[[], object] | None = None

    def sleep(self, seconds: float) -> None:
        if self.settle is not None:
            self.settle()
        super().sleep(seconds)


@dataclass
class Console:
    """A started local scheduler, its clock, and the console served over it."""

    scheduler: LocalScheduler
    clock: SettlingClock
    url: str = ""
    minute: datetime = START  # the next minute to tick

    def tick(self) -> None:
        """Tick the next minute, let its runs end, and leave the clock at its SEEN_AT second."""
        minute = self.minute
        self.clock.set(max(self.clock.now(), minute))
        self.scheduler.tick(minute)
        assert self.scheduler.settle()
        self.clock.set(minute + timedelta(seconds=SEEN_AT))
        self.minute = minute + timedelta(minutes=1)

    @property
    def claims(self) -> Any:
        return self.scheduler.ticker.claims

    def paused(self) -> dict[str, Any]:
        return dict(self.claims.control(self.scheduler.settings.origin).paused)

    def active(self) -> str | None:
        """The SSM parameter's active environment; None before anyone set one."""
        ssm = self.scheduler.clients("ssm")
        try:
            value: str = ssm.get_parameter(Name=DEFAULT_PARAMETER)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            return None
        return value


def _wait_until_served(url: str, timeout: float = 10.0) -> None:
    """The server thread listens a moment after it starts: wait until it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "api/csrf", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):  # not answering yet
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@contextmanager
def served() -> Iterator[Console]:
    """Six minutes of the sample cron file on a fixed clock, and the console over them."""
    clock = SettlingClock(START)
    scheduler = LocalScheduler(SAMPLE, clock=clock, stop=threading.Event(), demo=False)
    with scheduler:
        clock.settle = scheduler.settle
        console = Console(scheduler, clock)
        for _ in range(MINUTES):
            console.tick()
        server = ConsoleServer(0)
        server.start(create_app(local_console(scheduler), refresh=1))
        try:
            console.url = server.url
            _wait_until_served(server.url)
            yield console
        finally:
            server.stop()


@pytest.fixture
def console() -> Iterator[Console]:
    """A fresh console for a test that acts: the pictures must not depend on what the tests
    before it on the same worker did."""
    with served() as fresh:
        yield fresh


def watch(page: Page) -> list[str]:
    """What went wrong on ``page`` from now on: uncaught errors, console errors, requests that
    failed or were answered 400 or more (a favicon's 404 too)."""
    seen: list[str] = []

    def console_message(message: Any) -> None:
        if message.type == "error":
            seen.append(f"console error: {message.text}")

    def response(answer: Any) -> None:
        if answer.status >= 400:
            seen.append(f"HTTP {answer.status}: {answer.request.method} {answer.url}")

    page.on("pageerror", lambda error: seen.append(f"uncaught: {error}"))
    page.on("console", console_message)
    page.on("requestfailed", lambda request: seen.append(f"failed: {request.url}"))
    page.on("response", response)
    return seen


def open_console(page: Page, console: Console, *, still: bool = False) -> list[str]:
    """The console's page, once it has drawn the jobs, the regions and the timeline; what goes
    wrong on it from the start (:func:`watch`).

    ``still``: the page's timers wait (Playwright's clock, paused) until ``page.clock.resume()``,
    so the page is drawn once, by its first reads, for a picture: after a refresh Chromium
    rasterises again only what was redrawn, and a rounded corner's edge then differs by a shade
    from one run to the next."""
    errors = watch(page)
    if still:
        page.clock.install(time=START)
        page.clock.pause_at(START + timedelta(seconds=1))
    page.goto(console.url)
    expect(page.locator("tr[data-job]")).to_have_count(len(JOBS))
    expect(page.locator("li[data-region]")).to_have_count(1)
    expect(page.locator("#timeline-body .lane[data-job]")).to_have_count(len(JOBS))
    return errors


def job_row(page: Page, job: str) -> Any:
    return page.locator(f'tr[data-job="{job}"]')


def confirm(page: Page, operator: str = OPERATOR, target: str | None = None) -> None:
    """Answer the confirmation dialog: the operator's name (and the environment), Confirm."""
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    if target is not None:
        page.locator("#confirm-target").select_option(target)
    page.locator("#confirm-operator").fill(operator)
    page.locator("#confirm-ok").click()
    expect(dialog).to_be_hidden()


def posts(page: Page) -> list[str]:
    """The paths of the page's POST requests from now on."""
    sent: list[str] = []
    page.on(
        "request",
        lambda request: (
            sent.append(request.url.split("/", 3)[3]) if request.method == "POST" else None
        ),
    )
    return sent


def next_refresh_begins(page: Page) -> None:
    """Wait until the page's next refresh sends its first read (``/api/schedule``). Refreshes
    never overlap, and each sends everything it reads (a history's newest page too) before it
    ends: once the next one begins, whatever the page did before has sent its requests. The
    positive signal a negative check waits on, rather than a fixed time."""
    with page.expect_request(lambda request: request.url.endswith("/api/schedule")):
        pass


def console_runs(console: Console, job: str) -> list[tuple[str, str]]:
    """``job``'s runs in the store, newest first: (firing, status)."""
    assert console.scheduler.settle()
    return [(run.firing_id, str(run.status)) for run in console.scheduler.history(job)]


# -- reading: one console per worker ---------------------------------------------------------------


@pytest.fixture(scope="class")
def unchanged_console() -> Iterator[Console]:
    """One console for a class of tests that write nothing: checked at its end."""
    with served() as shared:
        before = {job: console_runs(shared, job) for job in JOBS}
        yield shared
        assert {job: console_runs(shared, job) for job in JOBS} == before
        assert shared.paused() == {} and shared.active() is None


class TestReading:
    """The tests that only read (or whose actions must be refused) share one console per worker
    (pytest ends it after the class's last test there, before a fresh one starts): its end
    checks that the stores hold what they held before."""

    @pytest.fixture
    def console(self, unchanged_console: Console) -> Console:
        return unchanged_console

    def test_the_job_list_regions_and_timeline(
        self, page: Page, console: Console, screenshot: Screenshot
    ) -> None:
        errors = open_console(page, console, still=True)
        assert (
            page.locator("tr[data-job]").evaluate_all("rows => rows.map(r => r.dataset.job)")
            == JOBS
        )
        words = {"morning-report": "At 09:00", "hourly-cleanup": "At 15 minutes past the hour"}
        words["heartbeat"] = "Every 15 seconds"
        zones = {"morning-report": "America/New_York", "hourly-cleanup": "UTC", "heartbeat": "UTC"}
        for job in JOBS:
            row = job_row(page, job)
            expect(row.locator(".words")).to_have_text(words[job])
            expect(row.locator(".zone")).to_have_text(zones[job])
            expect(row.locator("ol.next > li")).to_have_count(3)
            expect(row.locator(".badge")).to_have_text("scheduled")
            for act in ("run", "pause", "history"):
                expect(row.locator(f'button[data-act="{act}"]').last).to_be_visible()
        report = job_row(page, "morning-report")
        expect(report.locator("ol.next .local")).to_have_text(
            [
                "Tue 2026-12-01 09:00:00 EST",
                "Wed 2026-12-02 09:00:00 EST",
                "Thu 2026-12-03 09:00:00 EST",
            ]
        )
        expect(report.locator("ol.next .utc")).to_have_text(
            ["2026-12-01 14:00:00Z", "2026-12-02 14:00:00Z", "2026-12-03 14:00:00Z"]
        )
        expect(job_row(page, "heartbeat").locator("ol.next .utc")).to_have_text(
            ["2026-11-30 14:04:00Z", "2026-11-30 14:04:15Z", "2026-11-30 14:04:30Z"]
        )
        # the last runs, as the store holds them
        for job in ("morning-report", "heartbeat"):
            state = console.claims.job_state(job)
            assert state is not None and state.last_status is RunStatus.SUCCEEDED
            badge = job_row(page, job).locator(".last .status")
            expect(badge).to_have_text("SUCCEEDED")
            expect(badge).to_have_class("status status-succeeded")
        expect(job_row(page, "morning-report").locator(".last")).to_contain_text(
            "us-east-1, 3m ago"
        )
        expect(job_row(page, "heartbeat").locator(".last")).to_contain_text("us-east-1, 5s ago")
        assert console.claims.job_state("hourly-cleanup") is None
        expect(job_row(page, "hourly-cleanup").locator("td[data-label='Last run']")).to_have_text(
            "no run yet"
        )
        expect(page.locator("#job-count")).to_have_text("3 jobs")
        expect(page.locator("#updated")).to_have_text(
            "as of 2026-11-30 14:03:50Z - refreshes every 1 s"
        )
        # the region
        region = page.locator('li[data-region="us-east-1"]')
        expect(region).to_have_class("region region-active")
        expect(region.locator(".mode")).to_have_text("ACTIVE")
        expect(region.locator(".holds")).to_have_text("holds prod")
        expect(page.locator("#problem")).to_be_hidden()
        # the next 24 hours: a lane per job
        lanes = page.locator("#timeline-body .lane[data-job]")
        assert lanes.evaluate_all("lanes => lanes.map(l => l.dataset.job)") == JOBS
        expect(page.locator('.lane[data-job="morning-report"] .mark')).to_have_count(1)
        expect(page.locator('.lane[data-job="hourly-cleanup"] .mark')).to_have_count(24)
        heartbeat = page.locator('.lane[data-job="heartbeat"]')
        assert heartbeat.locator(".mark").count() + heartbeat.locator(".band").count() > 0
        screenshot(page, "jobs")
        assert errors == []

    def test_a_job_s_history_newest_first_a_page_at_a_time(
        self, page: Page, console: Console, screenshot: Screenshot
    ) -> None:
        errors = open_console(page, console, still=True)
        stored = console.scheduler.history("heartbeat")
        assert len(stored) == 4 * MINUTES
        job_row(page, "heartbeat").get_by_role("button", name="History").click()
        panel = page.locator("#history")
        expect(panel).to_be_visible()
        expect(page.locator("#history-title")).to_have_text("History of heartbeat")
        rows = page.locator("#run-rows tr[data-firing]")
        expect(rows).to_have_count(20)
        shown = rows.evaluate_all("rows => rows.map(r => r.dataset.firing)")
        assert shown == [run.firing_id for run in stored[:20]]
        assert shown[0] == "heartbeat@2026-11-30T14:03:45Z"
        expect(rows.first.locator("td").nth(0)).to_have_text("2026-11-30 14:03:45Z")
        expect(rows.locator(".status")).to_have_text(["SUCCEEDED"] * 20)
        expect(rows.locator("td[data-label='Took']")).to_have_text(["0 ms"] * 20)
        expect(rows.locator("td[data-label='Region']")).to_have_text(["us-east-1"] * 20)
        more = page.locator("#history-more")
        expect(more).to_be_visible()
        expect(page.locator("#history-overlap")).to_contain_text("Overlap allow:")
        # the page scrolls (smoothly) to the panel: picture it once it is at the top
        page.wait_for_function(
            "() => Math.abs(document.getElementById('history').getBoundingClientRect().top) < 1"
        )
        screenshot(page, "history")

        more.click()
        expect(rows).to_have_count(4 * MINUTES)
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.firing)") == [
            run.firing_id for run in stored
        ]
        expect(more).to_be_hidden()
        # the page's own reads (every second) keep the older runs shown: two of them, and no
        # newest page read again
        reads: list[str] = []
        page.on("request", lambda request: reads.append(request.url.split("/", 3)[3]))
        page.clock.resume()
        for _ in range(2):
            with page.expect_response(lambda answer: answer.url.endswith("/api/schedule")):
                pass
        next_refresh_begins(page)  # the second's history read, if any, is sent by now
        assert not [path for path in reads if "/history" in path], reads
        expect(rows).to_have_count(4 * MINUTES)
        expect(more).to_be_hidden()
        page.locator("#history-close").click()
        expect(panel).to_be_hidden()
        assert errors == []

    def test_a_phone_shows_the_jobs_without_scrolling_sideways(
        self, phone_page: Page, console: Console, screenshot: Screenshot
    ) -> None:
        errors = open_console(phone_page, console, still=True)
        sizes = phone_page.evaluate(
            "() => ({scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,"
            " viewport: window.innerWidth})"
        )
        # a wider document would widen a mobile browser's layout viewport past the screen
        width = PHONE["width"]
        assert sizes["viewport"] == width, sizes
        assert sizes["scroll"] <= width + 1 and sizes["body"] <= width + 1, sizes
        for job in JOBS:
            row = job_row(phone_page, job)
            for name in ("Run now", "Pause", "History"):
                button = row.get_by_role("button", name=name, exact=True)
                expect(button).to_be_visible()
                box = button.bounding_box()
                assert box is not None, (job, name)
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, (job, name, box)
        expect(phone_page.locator("#failover")).to_be_visible()
        screenshot(phone_page, "phone")
        assert errors == []

    def test_the_page_has_no_request_of_its_own_that_fails(
        self, page: Page, console: Console
    ) -> None:
        """No favicon request (the page names an inline icon), no script or style refused."""
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        errors = open_console(page, console)
        paths = {url.split("/", 3)[3].split("?")[0] for url in requested}
        assert "favicon.ico" not in paths
        assert {"", "static/console.css", "static/console.js"} <= paths
        headers = json.loads(
            page.evaluate("async () => JSON.stringify([...(await fetch('/')).headers])")
        )
        assert "content-security-policy" in dict(headers)
        assert errors == []

    def test_a_post_without_the_csrf_header_is_refused(self, page: Page, console: Console) -> None:
        errors = open_console(page, console)
        answers = page.evaluate(
            """async () => {
              const send = async (headers) => {
                const answer = await fetch('/api/schedule/heartbeat/pause', {
                  method: 'POST', headers: {'Content-Type': 'application/json', ...headers},
                  body: JSON.stringify({operator: 'mallory'}),
                });
                return [answer.status, await answer.json()];
              };
              return [await send({}), await send({'X-CSRF-Token': 'guessed'})];
            }"""
        )
        refusal = {"error": f"missing or wrong {CSRF_HEADER}: reload the page"}
        assert answers == [[403, refusal], [403, refusal]]
        assert console.paused() == {}
        expect(job_row(page, "heartbeat").locator(".badge")).to_have_text("scheduled")
        # with the page's own token the request gets past the guard (to the body's check: no
        # operator, so nothing is written either)
        answer = page.evaluate(
            """async () => {
              const answer = await fetch('/api/schedule/heartbeat/pause', {
                method: 'POST', body: '{}',
                headers: {'Content-Type': 'application/json',
                          'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content},
              });
              return [answer.status, await answer.json()];
            }"""
        )
        assert answer == [422, {"error": "operator: Field required"}]
        assert console.paused() == {}
        # the three refusals are the only errors the page saw (Chromium logs each one)
        url = f"{console.url}api/schedule/heartbeat/pause"
        logged = "console error: Failed to load resource: the server responded with a status of"
        assert errors == [
            *[f"HTTP 403: POST {url}", f"{logged} 403 (Forbidden)"] * 2,
            *[f"HTTP 422: POST {url}", f"{logged} 422 (Unprocessable Entity)"],
        ]

    def test_an_aws_error_is_a_message_not_a_traceback(
        self, page: Page, console: Console, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from botocore.exceptions import ClientError

        def refuse(*args: Any, **kwargs: Any) -> Any:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed here"}}
            raise ClientError(error, "UpdateItem")  # type: ignore[arg-type]

        claims = console.scheduler.ticker.operator.claims
        assert claims is not None
        monkeypatch.setattr(claims, "set_paused", refuse)
        errors = open_console(page, console)
        job_row(page, "heartbeat").get_by_role("button", name="Pause").click()
        confirm(page)
        alert = page.locator("#messages [role=alert]")
        expect(alert).to_have_count(1)
        expect(alert).to_contain_text("heartbeat not paused in us-east-1")
        expect(alert).to_contain_text("AccessDeniedException: not allowed here")
        expect(job_row(page, "heartbeat").locator(".badge")).to_have_text("scheduled")
        assert "heartbeat" not in console.paused()

        monkeypatch.setattr(claims, "history", refuse)  # a history that cannot be read
        job_row(page, "heartbeat").get_by_role("button", name="History").click()
        expect(alert).to_have_count(2)
        expect(alert.first).to_contain_text("us-east-1 could not be read: AccessDeniedException")
        expect(page.locator("#run-rows")).to_have_text("No runs yet.")
        assert "Traceback" not in page.content()
        assert "Traceback" not in page.locator("body").inner_text()
        assert errors == []


# -- acting: a fresh console each ------------------------------------------------------------------


def test_the_page_refreshes_itself(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    page.evaluate("() => { window.notReloaded = true; }")
    job_row(page, "heartbeat").get_by_role("button", name="History").click()
    first = page.locator("#run-rows tr[data-firing]").first
    expect(first).to_have_attribute("data-firing", "heartbeat@2026-11-30T14:03:45Z")
    report = job_row(page, "morning-report").locator(".last")
    expect(report).to_contain_text("3m ago")

    console.tick()  # 14:04, on the server's side only

    expect(page.locator("#updated")).to_contain_text("14:04:50Z", timeout=WAIT_MS)
    expect(report).to_contain_text("4m ago", timeout=WAIT_MS)
    expect(job_row(page, "heartbeat").locator("ol.next .utc").first).to_have_text(
        "2026-11-30 14:05:00Z", timeout=WAIT_MS
    )
    expect(first).to_have_attribute(
        "data-firing", "heartbeat@2026-11-30T14:04:45Z", timeout=WAIT_MS
    )
    assert page.evaluate("() => window.notReloaded") is True
    assert errors == []


def test_run_now_asks_for_an_operator_and_dispatches(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    sent = posts(page)
    before = console.scheduler.history("morning-report")
    run = job_row(page, "morning-report").get_by_role("button", name="Run now")

    # Cancel, and Escape, write nothing
    run.click()
    expect(page.locator("#confirm-text")).to_contain_text("Run morning-report now?")
    page.locator("#confirm-operator").fill(OPERATOR)
    page.locator("#confirm-cancel").click()
    expect(page.locator("#confirm")).to_be_hidden()
    run.click()
    expect(page.locator("#confirm")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#confirm")).to_be_hidden()
    # no operator: the dialog stays open
    run.click()
    page.locator("#confirm-operator").fill("")
    page.locator("#confirm-ok").click()
    expect(page.locator("#confirm")).to_be_visible()
    page.locator("#confirm-cancel").click()
    next_refresh_begins(page)  # two refreshes: the second began after the last cancel
    next_refresh_begins(page)
    assert sent == []
    assert console.scheduler.settle()
    assert console.scheduler.history("morning-report") == before
    expect(page.locator("#messages .message")).to_have_count(0)

    run.click()
    confirm(page)
    message = page.locator("#messages .message.ok")
    expect(message).to_contain_text(f"morning-report run by {OPERATOR}: DISPATCHED in us-east-1")
    assert sent == ["api/schedule/morning-report"]
    assert console.scheduler.settle()
    newest = console.scheduler.history("morning-report")[0]
    assert newest.manual and newest.operator == OPERATOR
    assert len(console.scheduler.history("morning-report")) == len(before) + 1
    assert newest.firing_id in message.inner_text()
    # the name is kept for the next action
    expect(page.locator("#operator")).to_have_value(OPERATOR)
    assert errors == []


def test_pause_then_resume(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    row = job_row(page, "heartbeat")
    row.get_by_role("button", name="Pause").click()
    expect(page.locator("#confirm-text")).to_contain_text("Pause heartbeat in every region?")
    confirm(page)
    expect(page.locator("#messages .message.ok")).to_contain_text(
        f"heartbeat paused by {OPERATOR} in every region"
    )
    expect(row.locator(".badge")).to_have_text(f"paused by {OPERATOR}")
    expect(row).to_have_class("is-paused")
    expect(page.locator("#job-count")).to_have_text("3 jobs, 1 paused")
    pause = console.paused()["heartbeat"]
    assert pause.operator == OPERATOR

    ran = len(console.scheduler.history("heartbeat"))
    console.tick()  # 14:04: the paused job is not dispatched
    assert len(console.scheduler.history("heartbeat")) == ran
    assert console.scheduler.history("heartbeat")[0].firing_id.endswith("14:03:45Z")
    expect(row.locator(".badge")).to_have_text(f"paused by {OPERATOR}")

    row.get_by_role("button", name="Resume").click()
    expect(page.locator("#confirm-text")).to_contain_text("Resume heartbeat in every region?")
    confirm(page)  # the name is filled in from the last action: typed again all the same
    expect(row.locator(".badge")).to_have_text("scheduled", timeout=WAIT_MS)
    expect(row.get_by_role("button", name="Pause")).to_be_visible()
    expect(page.locator("#job-count")).to_have_text("3 jobs")
    assert "heartbeat" not in console.paused()
    console.tick()  # 14:05: dispatched again
    assert console.scheduler.history("heartbeat")[0].firing_id == "heartbeat@2026-11-30T14:05:45Z"
    assert errors == []


def test_failover_and_back(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    region = page.locator('li[data-region="us-east-1"]')
    assert console.active() is None  # nobody set one yet: prod, the region's own, is active

    page.locator("#failover").click()
    expect(page.locator("#confirm-text")).to_contain_text("Now active: prod.")
    expect(page.locator("#confirm-target-label")).to_be_visible()
    options = page.locator("#confirm-target option")
    expect(options).to_have_text(["prod (us-east-1)", "DR"])
    confirm(page, target="DR")
    expect(page.locator("#messages .message.ok")).to_contain_text(
        f"Active environment DR in every region, set by {OPERATOR}."
    )
    expect(region.locator(".mode")).to_have_text("standby")
    expect(region).to_have_class("region region-standby")
    expect(region.locator(".holds")).to_have_text("holds DR")
    # no problem: DR is a known name, active in a region this console does not look at
    expect(page.locator("#problem")).to_be_hidden()
    assert console.active() == "DR"

    page.locator("#failover").click()
    expect(page.locator("#confirm-text")).to_contain_text("Now active: DR.")
    confirm(page, target="prod")
    expect(region.locator(".mode")).to_have_text("ACTIVE")
    expect(region.locator(".holds")).to_have_text("holds prod")
    expect(page.locator("#problem")).to_be_hidden()
    assert console.active() == "prod"
    assert errors == []


# -- runtime schedules, backfills and retries: what the CLI can do, from the page ------------------


def fill_form(page: Page, fields: dict[str, str], operator: str = OPERATOR) -> None:
    """Fill the open form dialog's fields (by name) and the operator's name, and send it."""
    expect(page.locator("#form")).to_be_visible()
    for name, value in fields.items():
        page.locator(f"#field-{name}").fill(value)
    page.locator("#form-operator").fill(operator)
    page.locator("#form-ok").click()


def pending(console: Console, reason: str) -> list[str]:
    """The run ids of the deferred firings the store holds for ``reason``."""
    return [item.firing.id for item in console.claims.pending_deferred(reason)]


def test_a_runtime_schedule_created_then_deleted(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    sent = posts(page)
    page.locator("#new-schedule").click()
    expect(page.locator("#form-title")).to_have_text("New runtime schedule")
    once = {
        "name": "one-off",
        "at": "2026-11-30T14:10:00Z",
        "service": "mini-scheduler-sample-heartbeat",
        "parameters": '{"day": "monday"',
    }
    # parameters that are not a JSON object: said in the form, and nothing sent
    fill_form(page, once)
    problem = page.locator("#form-error")
    expect(problem).to_contain_text("parameters is not JSON")
    next_refresh_begins(page)
    assert sent == []
    # a name of cron.yaml: the server's refusal, in the form, which stays open; nothing written
    with page.expect_response(lambda answer: answer.url.endswith("/api/schedules")) as answer:
        fill_form(page, once | {"name": "heartbeat", "parameters": '{"day": "monday"}'})
    assert answer.value.status == 400
    expect(problem).to_contain_text("name heartbeat is a job of")
    expect(page.locator("#form")).to_be_visible()
    assert pending(console, "schedule") == []

    fill_form(page, once | {"parameters": '{"day": "monday"}'})
    expect(page.locator("#form")).to_be_hidden()
    expect(page.locator("#messages .message.ok")).to_contain_text(
        f"Schedule one-off created in us-east-1 by {OPERATOR}: next firing 2026-11-30 14:10:00Z."
    )
    row = job_row(page, "one-off")
    expect(row.locator(".kind")).to_have_text("one-time", timeout=WAIT_MS)
    expect(row.get_by_role("button", name="Backfill...")).to_have_count(0)
    [schedule] = console.scheduler.ticker.operator.runtime_schedules()
    assert (schedule.name, schedule.operator) == ("one-off", OPERATOR)
    assert schedule.job.parameters == {"day": "monday"}
    assert sent == ["api/schedules"] * 2

    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#confirm-text")).to_contain_text(
        "Delete the runtime schedule one-off in us-east-1?"
    )
    confirm(page)
    deleted = f"Schedule one-off deleted from us-east-1 by {OPERATOR}."
    expect(page.locator("#messages .message.ok", has_text=deleted)).to_have_count(1)
    expect(row).to_have_count(0, timeout=WAIT_MS)
    assert pending(console, "schedule") == []
    for _ in range(7):
        console.tick()  # to 14:10: the deleted schedule does not fire
    assert console_runs(console, "one-off") == []
    # the refusal is the only error the page saw (Chromium logs it)
    logged = "console error: Failed to load resource: the server responded with a status of"
    assert errors == [f"HTTP 400: POST {console.url}api/schedules", f"{logged} 400 (Bad Request)"]


def test_a_runtime_schedule_takes_more_of_cron_yamls_keys(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    sent = posts(page)
    page.locator("#new-schedule").click()
    every = {
        "name": "guarded",
        "cron": "0 */5 * * * ?",
        "service": "mini-scheduler-sample-heartbeat",
    }
    problem = page.locator("#form-error")
    # a key the form has a field for: said in the form, and nothing sent
    fill_form(page, every | {"more": '{"service": "other"}'})
    expect(problem).to_contain_text("more keys: service has a field of its own above")
    # a bad value: the server's refusal names the key; nothing written
    with page.expect_response(lambda answer: answer.url.endswith("/api/schedules")) as answer:
        fill_form(page, every | {"more": '{"overlap": "sometimes"}'})
    assert answer.value.status == 400
    expect(problem).to_contain_text("overlap 'sometimes' is not one of")
    assert pending(console, "schedule") == []

    more = (
        '{"overlap": "skip", "timeout": 120, "retry": {"retries": 2, "backoff": 30}, '
        '"max_running": 2}'
    )
    fill_form(page, every | {"more": more})
    expect(page.locator("#form")).to_be_hidden()
    [schedule] = console.scheduler.ticker.operator.runtime_schedules()
    assert (schedule.name, schedule.job.overlap, schedule.job.timeout) == ("guarded", "skip", 120)
    assert schedule.job.retry is not None and schedule.job.retry.retries == 2
    assert schedule.job.max_running == 2
    job_row(page, "guarded").get_by_role("button", name="History").click()  # its caps, said
    expect(page.locator("#history-overlap")).to_contain_text(
        "a firing is skipped while the job's run is open; 0 waiting now; max_running 2: 0 open"
    )
    assert sent == ["api/schedules"] * 2
    assert len(errors) == 2  # the refusal, as HTTP 400 and as Chromium's resource error


def test_a_backfill_started_and_followed_to_its_end(page: Page, console: Console) -> None:
    errors = open_console(page, console)
    row = job_row(page, "hourly-cleanup")
    row.get_by_role("button", name="Backfill...").click()
    expect(page.locator("#form-title")).to_have_text("Backfill hourly-cleanup")
    window = {"from": "2026-11-30T10:00:00Z", "to": "2026-11-30T14:00:00Z", "rate": "1"}
    with page.expect_response(lambda answer: answer.url.endswith("/backfill")) as answer:
        fill_form(page, window | {"from": "yesterday"})
    assert answer.value.status == 400
    expect(page.locator("#form-error")).to_contain_text("from 'yesterday' is not an instant")
    assert pending(console, "backfill") == []

    fill_form(page, window)
    expect(page.locator("#messages .message.ok")).to_contain_text(
        f"Backfill of hourly-cleanup started in us-east-1 by {OPERATOR}: 4 firings, 1 a minute."
    )
    shown = page.locator('#backfill-list li[data-job="hourly-cleanup"]')
    expect(shown.locator(".done")).to_have_text("0 of 4 dispatched", timeout=WAIT_MS)
    expect(page.locator("#backfill-none")).to_be_hidden()
    assert len(pending(console, "backfill")) == 4

    # due one a minute from 14:03:50 on: the 14:04 tick dispatches two, each next tick one
    for done in (2, 3):
        console.tick()
        assert len(pending(console, "backfill")) == 4 - done
        expect(shown.locator(".done")).to_have_text(f"{done} of 4 dispatched", timeout=WAIT_MS)
        expect(shown.locator("progress")).to_have_attribute("value", str(done))
    console.tick()
    assert pending(console, "backfill") == []
    said = "Backfill of hourly-cleanup done: all 4 firings dispatched or found run."
    expect(page.locator("#messages .message.ok", has_text=said)).to_have_count(1, timeout=WAIT_MS)
    expect(shown).to_have_count(0)
    expect(page.locator("#backfill-none")).to_be_visible()
    ran = [firing for firing, _ in console_runs(console, "hourly-cleanup")]
    assert sorted(ran) == [f"hourly-cleanup@2026-11-30T{h}:15:00Z" for h in (10, 11, 12, 13)]
    url = f"{console.url}api/schedule/hourly-cleanup/backfill"
    logged = "console error: Failed to load resource: the server responded with a status of"
    assert errors == [f"HTTP 400: POST {url}", f"{logged} 400 (Bad Request)"]


def test_a_job_s_pending_retries_show_in_its_history(page: Page, console: Console) -> None:
    from mini_scheduler.retries import defer_retry

    policy = console.scheduler.ticker.operator.job("morning-report").failure_policy
    failed = "morning-report@2026-11-30T14:00:00Z"
    now = console.clock.now()
    defer_retry(console.claims, failed, policy, "FAILED", failed_at=now, origin="t", now=now)
    errors = open_console(page, console)
    retries = page.locator("#retries")
    # a job with none: the panel stays hidden once its retries are read
    with page.expect_response(lambda answer: answer.url.endswith("/heartbeat/retries")):
        job_row(page, "heartbeat").get_by_role("button", name="History").click()
    expect(page.locator("#run-rows tr[data-firing]")).to_have_count(20)
    expect(retries).to_be_hidden()

    job_row(page, "morning-report").get_by_role("button", name="History").click()
    expect(retries).to_be_visible()
    waiting = page.locator(f'#retry-list li[data-run="{failed}#2"]')
    expect(waiting).to_have_text(f"attempt 2 of {failed}, due 2026-11-30 14:05:50Z in us-east-1")
    console.tick()  # 14:04: not yet due
    assert pending(console, "retry") == [f"{failed}#2"]
    expect(waiting).to_be_visible()
    console.tick()  # 14:05: dispatched at 14:05:50
    assert pending(console, "retry") == []
    expect(retries).to_be_hidden(timeout=WAIT_MS)
    assert console_runs(console, "morning-report")[0] == (f"{failed}#2", "SUCCEEDED")
    assert errors == []


def test_a_phone_can_create_a_schedule_and_backfill(phone_page: Page, console: Console) -> None:
    errors = open_console(phone_page, console)
    width = PHONE["width"]

    def inside(locator: Any) -> None:
        expect(locator).to_be_visible()
        box = locator.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box

    for job in JOBS:
        inside(job_row(phone_page, job).get_by_role("button", name="Backfill..."))
    inside(phone_page.locator("#new-schedule"))
    phone_page.locator("#new-schedule").click()
    for name in ("name", "at", "cron", "timezone", "service", "parameters"):
        inside(phone_page.locator(f"#field-{name}"))
    inside(phone_page.locator("#form-ok"))
    scroll = phone_page.evaluate("() => document.documentElement.scrollWidth")
    assert scroll <= width + 1
    assert errors == []


def test_the_audit_page_shows_who_paused_and_resumed(page: Page, console: Console) -> None:
    """The Audit section (docs/audit.md) reads every region's trail: each action once, newest
    first, with the state before and after and the console's local identity."""
    errors = open_console(page, console)
    expect(page.locator("#audit-none")).to_be_visible()
    row = job_row(page, "heartbeat")
    row.get_by_role("button", name="Pause").click()
    confirm(page)
    expect(row.locator(".badge")).to_have_text(f"paused by {OPERATOR}", timeout=WAIT_MS)
    row.get_by_role("button", name="Resume").click()
    confirm(page)
    expect(row.locator(".badge")).to_have_text("scheduled", timeout=WAIT_MS)
    rows = page.locator("#audit-rows tr")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    expect(rows.nth(0)).to_have_attribute("data-audit", "resume")
    expect(rows.nth(0).locator('[data-label="Change"]')).to_have_text("paused: true -> false")
    expect(rows.nth(1)).to_have_attribute("data-audit", "pause")
    expect(rows.nth(1).locator('[data-label="Who"]')).to_have_text(OPERATOR)
    expect(rows.nth(1).locator('[data-label="Who"]')).to_have_attribute(
        "title", re.compile(r"^local:")
    )
    expect(page.locator("#audit-none")).to_be_hidden()
    assert errors == []


def audit_reason(page: Page, action: str) -> Any:
    """The Reason cell of the Audit section's one record of ``action`` (the clock stands
    still: records of one instant are ordered by action, not by when they were made)."""
    return page.locator(f'#audit-rows tr[data-audit="{action}"] [data-label="Reason"]')


def test_a_reason_given_in_a_dialog_is_read_back_from_the_audit(
    page: Page, console: Console
) -> None:
    """Each dialog asks for an optional reason (at most the CLI's ``--reason``): it goes with
    the action to the operator path, the Audit section reads it back, and a manual run's
    history says it (as ``mini-scheduler history`` does); a dialog opens with none."""
    errors = open_console(page, console)
    row = job_row(page, "heartbeat")
    row.get_by_role("button", name="Pause").click()
    reason = page.locator("#confirm-reason")
    expect(reason).to_have_value("")
    expect(reason).to_have_attribute("maxlength", str(MAX_REASON))
    reason.fill("  incident 4711: the queue is down ")
    confirm(page)
    expect(row.locator(".badge")).to_have_text(f"paused by {OPERATOR}", timeout=WAIT_MS)
    newest = page.locator("#audit-rows tr").first
    expect(newest).to_have_attribute("data-audit", "pause", timeout=WAIT_MS)
    expect(newest.locator('[data-label="Reason"]')).to_have_text("incident 4711: the queue is down")
    assert console.paused()["heartbeat"].operator == OPERATOR

    row.get_by_role("button", name="Resume").click()
    expect(reason).to_have_value("")  # a reason is one action's
    confirm(page)
    expect(audit_reason(page, "resume")).to_have_text("", timeout=WAIT_MS)

    page.locator("#new-schedule").click()
    expect(page.locator("#form-reason")).to_have_attribute("maxlength", str(MAX_REASON))
    page.locator("#form-reason").fill("the finance close")
    once = {
        "name": "one-off",
        "at": "2026-11-30T14:10:00Z",
        "service": "mini-scheduler-sample-heartbeat",
    }
    fill_form(page, once)
    expect(page.locator("#form")).to_be_hidden()
    expect(audit_reason(page, "schedule.create")).to_have_text("the finance close", timeout=WAIT_MS)

    report = job_row(page, "morning-report")
    report.get_by_role("button", name="Run now").click()
    reason.fill("a late delivery")
    confirm(page)
    expect(audit_reason(page, "run")).to_have_text("a late delivery", timeout=WAIT_MS)
    report.get_by_role("button", name="History").click()
    note = page.locator("#run-rows tr[data-firing]").first.locator('[data-label="Note"]')
    expect(note).to_have_text(f"manual run by {OPERATOR}; reason: a late delivery")
    assert console.scheduler.settle()
    assert console.scheduler.history("morning-report")[0].operator_reason == "a late delivery"
    assert errors == []


def test_an_open_job_says_its_overlap_and_the_firings_waiting(page: Page, console: Console) -> None:
    """The open job's head says its overlap policy (the list's refresh reads nothing more)."""
    errors = open_console(page, console)
    line = page.locator("#history-overlap")
    expect(line).to_be_hidden()
    job_row(page, "morning-report").get_by_role("button", name="History").click()
    expect(line).to_have_text(
        "Overlap skip: a firing is skipped while the job's run is open; 0 waiting now"
    )
    expect(line).to_have_attribute("data-waiting", "0")
    job_row(page, "heartbeat").get_by_role("button", name="History").click()
    expect(line).to_have_attribute("data-overlap", "allow")
    page.locator("#history-close").click()
    expect(line).to_be_hidden()
    # closed: the refreshes read no job's settings
    reads: list[str] = []
    page.on("request", lambda request: reads.append(request.url.split("/", 3)[3]))
    next_refresh_begins(page)
    next_refresh_begins(page)
    assert [path for path in reads if path.startswith("api/schedule/")] == [], reads
    assert errors == []
