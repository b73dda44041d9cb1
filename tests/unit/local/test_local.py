"""The local scheduler: minutes of it on a fixed clock, the in-process targets, a clean stop."""

from __future__ import annotations

import io
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mini_scheduler.cli.main import main as cli_main
from mini_scheduler.clock import FixedClock, SystemClock
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import Target
from mini_scheduler.local import main as local_run
from mini_scheduler.local.dispatch import (
    LocalDispatcher,
    function_name,
    lambda_destination_record,
    step_functions_status_event,
)
from mini_scheduler.local.moto_aws import IDEMPOTENCY_TABLE
from mini_scheduler.local.scheduler import LocalScheduler, StoppableClock, Stopped
from mini_scheduler.model import RunStatus
from tests.conftest import ROOT

SAMPLE = ROOT / "samplecode" / "cron.yaml"
START = datetime(2026, 11, 30, 13, 59, tzinfo=UTC)  # 09:00 New York (EST) is 14:00 UTC


class StoppingClock(FixedClock):
    """A fixed clock that asks the loop to stop once it reaches ``until``."""

    def __init__(self, start: datetime, until: datetime, stop: threading.Event) -> None:
        super().__init__(start)
        self.until = until
        self.stop = stop

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.now() >= self.until:
            self.stop.set()


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine has configured, these tests never reach AWS."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def write(tmp_path: Path, text: str, name: str = "cron.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def minutes() -> Iterator[tuple[LocalScheduler, StoppingClock]]:
    """Three minutes of the sample cron file, 13:59 to 14:02 UTC, on a fixed clock."""
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=3), stop)
    scheduler = LocalScheduler(SAMPLE, clock=clock, stop=stop)
    with scheduler:
        scheduler.run()
        assert scheduler.settle()
        yield scheduler, clock


def test_minutes_on_a_fixed_clock_tick_dispatch_and_close_runs(
    minutes: tuple[LocalScheduler, StoppingClock],
) -> None:
    scheduler, clock = minutes
    assert scheduler.stop.is_set() and clock.now() == START + timedelta(minutes=3)
    assert [iso.minute.strftime("%H:%M") for iso in scheduler.summaries] == [
        "13:59",
        "14:00",
        "14:01",
    ]
    heartbeats = scheduler.history("heartbeat")
    assert [run.firing_id for run in heartbeats] == [
        f"heartbeat@2026-11-30T{m}:{s:02d}Z"
        for m in ("14:01", "14:00", "13:59")
        for s in (45, 30, 15, 0)
    ]
    assert {run.status for run in heartbeats} == {RunStatus.SUCCEEDED}
    assert all(run.ended_at is not None and run.started_at is not None for run in heartbeats)


def test_the_sample_report_runs_once_with_its_idempotency_table(
    minutes: tuple[LocalScheduler, StoppingClock],
) -> None:
    scheduler, _ = minutes
    [report] = scheduler.history("morning-report")
    assert report.firing_id == "morning-report@2026-11-30T14:00:00Z"
    assert report.status is RunStatus.SUCCEEDED, report.error
    dynamodb = scheduler.clients("dynamodb")
    items = dynamodb.scan(TableName=IDEMPOTENCY_TABLE)["Items"]
    assert len(items) == 1 and items[0]["status"]["S"] == "COMPLETED"
    state = scheduler.ticker.claims.job_state("morning-report")
    assert state is not None and state.last_status is RunStatus.SUCCEEDED


def test_the_local_run_leaves_the_environment_as_it_found_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://localhost:1")
    monkeypatch.setenv("AWS_PROFILE", "production")
    before = dict(os.environ)
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=1), stop)
    with LocalScheduler(SAMPLE, clock=clock, stop=stop) as scheduler:
        assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ
        assert "AWS_PROFILE" not in os.environ
        assert os.environ["AWS_CONFIG_FILE"] == os.devnull
        scheduler.run()
        assert scheduler.settle()
        assert len(scheduler.history("heartbeat")) == 4
    assert dict(os.environ) == before


FLOWS = """
jobs:
  - name: "cleanup"
    cron: "0 * * * * ?"
    service: "flow://mini-scheduler-sample-cleanup"
    parameters: {olderThanDays: 30}
  - name: "cleanup-bad"
    cron: "0 * * * * ?"
    service: "flow://mini-scheduler-sample-cleanup"
    parameters: {olderThanDays: "thirty"}
  - name: "elsewhere"
    cron: "0 * * * * ?"
    service: "flow://my-own-flow"
"""


@contextmanager
def run_minutes(
    cron_file: Path, count: int = 1, samplecode: Path | None = None
) -> Iterator[LocalScheduler]:
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=count), stop)
    with LocalScheduler(cron_file, clock=clock, stop=stop, samplecode=samplecode) as scheduler:
        scheduler.run()
        assert scheduler.settle()
        yield scheduler


def test_flows_run_in_moto_and_their_end_closes_the_run(tmp_path: Path) -> None:
    with run_minutes(write(tmp_path, FLOWS)) as scheduler:
        [good] = scheduler.history("cleanup")
        [bad] = scheduler.history("cleanup-bad")
        [other] = scheduler.history("elsewhere")
        assert good.status is RunStatus.SUCCEEDED, good.error
        assert bad.status is RunStatus.FAILED
        assert bad.error is not None and bad.error.startswith("InvalidInput: expected")
        assert other.status is RunStatus.SUCCEEDED  # a Pass state stands in for it


TARGETS = """
jobs:
  - name: "boom"
    cron: "0 * * * * ?"
    service: "mini-scheduler-sample-boom"
  - name: "missing"
    cron: "0 * * * * ?"
    service: "mini-scheduler-sample-missing"
  - name: "theirs"
    cron: "0 * * * * ?"
    service: "arn:aws:lambda:us-east-1:123456789012:function:their-function:live"
"""


def test_a_handler_that_raises_fails_its_run_and_stand_ins_log_the_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    functions = tmp_path / "samples" / "functions" / "boom"
    functions.mkdir(parents=True)
    (functions / "app.py").write_text(
        "def handler(event, context):\n    raise ConnectionError('report database unreachable')\n"
    )
    caplog.set_level("INFO")
    with run_minutes(write(tmp_path, TARGETS), samplecode=tmp_path / "samples") as scheduler:
        [boom] = scheduler.history("boom")
        assert boom.status is RunStatus.FAILED
        assert boom.error == "ConnectionError: report database unreachable"
        for job in ("missing", "theirs"):
            [run] = scheduler.history(job)
            assert run.status is RunStatus.SUCCEEDED
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        m.startswith("Function their-function has no code here (not a mini-scheduler-sample-")
        and '"firingId":"theirs@2026-11-30T13:59:00Z"' in m
        for m in messages
    )
    assert any(
        "Function mini-scheduler-sample-missing has no code here (no " in m for m in messages
    )


def test_the_local_run_starts_from_its_start_instant(tmp_path: Path) -> None:
    """Started at 13:59:20, the minute's earlier firings are not dispatched late at once."""
    stop = threading.Event()
    start = START + timedelta(seconds=20)
    clock = StoppingClock(start, START + timedelta(minutes=1), stop)
    with LocalScheduler(SAMPLE, clock=clock, stop=stop) as scheduler:
        scheduler.run()
        assert scheduler.settle()
        assert [run.firing_id[-9:] for run in scheduler.history("heartbeat")] == [
            "13:59:45Z",
            "13:59:30Z",
        ]
        assert scheduler.summaries[0].counts["misfired"] == 0


class WatchedStop(threading.Event):
    """A stop event that notes each wait on it: the timeout asked for, and whether the wait
    ended because the event was set (True) or because its time ran out (False)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()  # set when a wait begins
        self.waits: list[tuple[float | None, bool]] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        ended = super().wait(timeout)
        self.waits.append((timeout, ended))
        return ended


class FrozenRealClock(SystemClock):
    """The real clock's kind (its waits are waits on the stop event), at a fixed instant."""

    def __init__(self, now: datetime) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now


HANG = 60.0  # seconds before a test that waits on a thread calls it hung


def test_a_stop_request_ends_the_wait_in_progress_on_the_real_clock() -> None:
    """At 13:59:00 the tick dispatches that second's heartbeat and waits 15 s for the next; the
    stop ends that wait (it returns because the event is set, not because its time ran out),
    and the loop with it."""
    stop = WatchedStop()
    scheduler = LocalScheduler(SAMPLE, clock=FrozenRealClock(START), stop=stop)
    scheduler.start()
    try:
        runner = threading.Thread(target=scheduler.run, daemon=True)
        runner.start()
        assert stop.waiting.wait(HANG)
        stop.set()
        runner.join(HANG)
        assert not runner.is_alive()
        assert [run.firing_id for run in scheduler.history("heartbeat")] == [
            "heartbeat@2026-11-30T13:59:00Z"
        ]
    finally:
        scheduler.close()
    assert stop.waits == [(15.0, True)]


def _sleep_in_a_thread(clock: StoppableClock, seconds: float) -> list[BaseException]:
    """``clock.sleep(seconds)`` on a thread, what it raised (nothing: an empty list)."""
    raised: list[BaseException] = []

    def sleep() -> None:
        try:
            clock.sleep(seconds)
        except BaseException as exc:  # handed back to the test
            raised.append(exc)

    sleeper = threading.Thread(target=sleep, daemon=True)  # a hung one must not hold pytest
    sleeper.start()
    assert isinstance(clock.stop, WatchedStop) and clock.stop.waiting.wait(HANG)
    clock.stop.set()
    sleeper.join(HANG)
    assert not sleeper.is_alive()
    return raised


def test_stoppable_clock_raises_when_stopped() -> None:
    stop = threading.Event()
    fixed = FixedClock(START)
    clock = StoppableClock(fixed, stop)
    clock.sleep(5)
    assert fixed.now() == START + timedelta(seconds=5)
    stop.set()
    with pytest.raises(Stopped):
        clock.sleep(5)
    assert fixed.now() == START + timedelta(seconds=5)  # a stopped clock does not sleep


def test_on_the_real_clock_a_stop_ends_a_wait_at_once() -> None:
    """A wait on the real clock is a wait on the stop event: set while it waits an hour, the
    wait returns at once (woken by the event) and raises Stopped; already set, nothing waits."""
    stop = WatchedStop()
    raised = _sleep_in_a_thread(StoppableClock(SystemClock(), stop), 3600)
    assert [type(exc) for exc in raised] == [Stopped]
    assert stop.waits == [(3600, True)]
    with pytest.raises(Stopped):
        StoppableClock(SystemClock(), stop).sleep(3600)
    assert len(stop.waits) == 1
    unstopped = WatchedStop()
    StoppableClock(SystemClock(), unstopped).sleep(0.01)
    assert unstopped.waits == [(0.01, False)]


def _handler_loggers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The functions' loggers as Powertools leaves them once the Lambda handlers were imported
    in this process: a handler of their own, not propagating."""
    for name in ("mini_scheduler.ticker", "mini_scheduler.recorder"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", [logging.StreamHandler(sys.stderr)])
        monkeypatch.setattr(logger, "propagate", False)


def test_main_prints_a_banner_logs_one_line_each_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _handler_loggers(monkeypatch)
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=2), stop)
    out = io.StringIO()
    code = local_run.main(["--cron-file", str(SAMPLE)], clock=clock, stop=stop, out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "Press Ctrl-C to stop." in text
    assert "morning-report, hourly-cleanup, heartbeat" in text
    lines = text.splitlines()
    assert any(
        line.endswith(
            "INFO    ticker      Job heartbeat dispatched to mini-scheduler-sample-heartbeat "
            "- firing heartbeat@2026-11-30T13:59:15Z"
        )
        for line in lines
    ), text
    assert any(
        "INFO    recorder    Job heartbeat ended SUCCEEDED after " in line
        and line.endswith("- firing heartbeat@2026-11-30T13:59:15Z")
        for line in lines
    )
    assert any("INFO    ticker      Scheduled job: heartbeat, service: " in line for line in lines)
    # the sample report's Powertools logger prints in the same one-line format
    assert any(
        line.endswith("INFO    report      Morning report for region east to 1 recipients")
        for line in lines
    ), text
    assert any(
        "INFO    recorder    Job morning-report ended SUCCEEDED after " in line for line in lines
    )
    assert lines[-1].endswith("INFO    local       Stopped")
    assert "Traceback" not in text


def test_main_prints_the_banner_before_any_log_line(tmp_path: Path) -> None:
    """Starting logs (a flow without a sample definition says so as moto is set up): the banner
    comes first all the same."""
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=1), stop)
    out = io.StringIO()
    code = local_run.main(
        ["--cron-file", str(write(tmp_path, FLOWS))], clock=clock, stop=stop, out=out
    )
    lines = out.getvalue().splitlines()
    assert code == 0, lines
    banner_end = lines.index(
        "Ticking every minute on the wall clock; log times are UTC. Press Ctrl-C to stop."
    )
    assert lines[0].startswith("mini-scheduler ") and banner_end == 10, lines
    assert re.fullmatch(
        r"  console      http://127\.0\.0\.1:\d+/ \(the operator page and its API; "
        r"--no-console: none\)",
        lines[8],
    ), lines
    assert re.fullmatch(
        r"  endpoint     (http://127\.0\.0\.1:\d+) \(this moto over HTTP, for the CLI: \S+ "
        r"status --local; or AWS_ENDPOINT_URL=\1 --stack mini-scheduler-local\)",
        lines[9],
    ), lines
    logged = [i for i, line in enumerate(lines) if re.match(r"\d\d:\d\d:\d\d [A-Z]+ ", line)]
    assert logged and min(logged) > banner_end, lines
    assert any(
        line.endswith("Flow my-own-flow has no definition here: it runs one Pass state")
        for line in lines[banner_end:]
    )


def test_a_cron_file_that_cannot_be_read_prints_no_banner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    assert local_run.main(["--cron-file", str(write(tmp_path, "jobs: ["))], out=out) == 1
    assert out.getvalue() == ""
    assert "is not valid YAML" in capsys.readouterr().err


def test_main_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert local_run.main(["--cron-file", str(tmp_path / "nope.yaml")]) == 2
    assert "no cron file at" in capsys.readouterr().err
    assert cli_main(["local", "--cron-file", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == (
        f"mini-scheduler local: no cron file at {tmp_path / 'nope.yaml'}: give --cron-file\n"
    )
    bad = write(tmp_path, "jobs: [")
    out = io.StringIO()
    assert local_run.main(["--cron-file", str(bad)], out=out) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mini-scheduler local: Cron file file:{bad} is not valid YAML")
    assert len(err.splitlines()) == 1


# -- the in-process dispatcher's pieces --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("mini-scheduler-sample-report", "mini-scheduler-sample-report"),
        ("report:live", "report"),
        ("123456789012:function:report", "report"),
        ("arn:aws:lambda:us-east-1:123456789012:function:report:7", "report"),
    ],
)
def test_function_name(name: str, function: str) -> None:
    assert function_name(name) == function


PAYLOAD = {
    "job": "morning-report",
    "firingId": "morning-report@2026-11-30T14:00:00Z",
    "scheduledTime": "2026-11-30T14:00:00Z",
    "origin": "us-east-1/prod",
    "manual": False,
    "parameters": {},
}
ARN = "arn:aws:lambda:us-east-1:123456789012:function:mini-scheduler-sample-report"


def test_destination_records_read_as_the_recorder_reads_lambda_s() -> None:
    at = START + timedelta(seconds=3)
    ok = lambda_destination_record(
        function_arn=ARN, request_id="r", payload=PAYLOAD, answer={"rows": 1}, error=None, at=at
    )
    failed = lambda_destination_record(
        function_arn=ARN,
        request_id="r",
        payload=PAYLOAD,
        answer=None,
        error=ConnectionError("down"),
        at=at,
    )
    success = completion_from_event(ok)
    failure = completion_from_event(failed)
    assert success is not None and success.status is RunStatus.SUCCEEDED
    assert success.ended_at == at and success.firing_id == PAYLOAD["firingId"]
    assert failure is not None and failure.status is RunStatus.FAILED
    assert failure.error == "ConnectionError: down"
    assert failed["requestContext"]["condition"] == "RetriesExhausted"


def test_status_events_read_as_the_recorder_reads_step_functions() -> None:
    description: dict[str, Any] = {
        "executionArn": "arn:aws:states:us-east-1:123456789012:execution:f:cleanup@x",
        "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:f",
        "name": "hourly-cleanup@2026-11-30T14-15-00Z",
        "status": "FAILED",
        "input": '{"firingId": "hourly-cleanup@2026-11-30T14:15:00Z"}',
        "error": "InvalidInput",
        "cause": "bad",
    }
    at = START + timedelta(minutes=16)
    event = step_functions_status_event(
        description, region="us-east-1", account="123456789012", started=at, at=at
    )
    completion = completion_from_event(event)
    assert completion is not None
    assert completion.firing_id == "hourly-cleanup@2026-11-30T14:15:00Z"
    assert completion.status is RunStatus.FAILED and completion.error == "InvalidInput: bad"
    assert completion.ended_at == at


def test_the_dispatcher_waits_for_the_mark_before_it_reports(tmp_path: Path) -> None:
    order: list[str] = []
    asked, marked = threading.Event(), threading.Event()

    def before(firing_id: str) -> None:
        asked.set()  # the function has returned; its end waits here for the mark
        marked.wait(HANG)
        order.append("marked")

    dispatcher = LocalDispatcher(
        tmp_path,
        on_complete=lambda record: order.append(record["requestContext"]["condition"]),
        clock=FixedClock(START),
        region="us-east-1",
        account="123456789012",
        before_complete=before,
    )
    try:
        reference = dispatcher.dispatch(Target("lambda", "plain"), "x@1", PAYLOAD)
        assert reference.startswith("local:plain:")
        assert asked.wait(HANG), "the end was never held for the mark"
        assert order == []  # the function ended and nothing was reported while it waits
    finally:
        marked.set()
        dispatcher.close()
    assert order == ["marked", "Success"]


# -- the real thing ----------------------------------------------------------------------------


ENTRY_POINT = Path(sys.executable).with_name("mini-scheduler")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "stop"),
    [
        ([sys.executable, "-m", "mini_scheduler.local"], signal.SIGINT),
        ([str(ENTRY_POINT), "local"], signal.SIGTERM),
    ],
    ids=["python-m-sigint", "entry-point-sigterm"],
)
def test_the_local_scheduler_dispatches_within_a_minute_and_stops_cleanly(
    tmp_path: Path, command: list[str], stop: signal.Signals
) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + 70
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            seen.append(line)
            if " dispatched to " in line:
                break
        assert any(" dispatched to " in line for line in seen), "".join(seen)
        # the console's page and API over the running scheduler, at the address the banner gives
        (url,) = (line.split()[1] for line in seen if line.startswith("  console      "))
        with urllib.request.urlopen(url, timeout=10) as answer:  # nosec B310 # loopback only
            assert "mini-scheduler" in answer.read().decode()
        with urllib.request.urlopen(url + "api/schedule", timeout=10) as answer:  # nosec B310
            listed = json.load(answer)
        names = [job["name"] for job in listed["jobs"]]
        assert names[:3] == ["morning-report", "hourly-cleanup", "heartbeat"], listed
        process.send_signal(stop)
        code = process.wait(timeout=HANG)  # how a stop ends the wait: the tests above
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=5)
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            break
        if line is not None:
            seen.append(line)
    text = "".join(seen)
    assert code == 0, text
    assert "Traceback" not in text
    assert text.splitlines()[-1].endswith("Stopped")
    assert not (tmp_path / ".aws").exists()


def test_make_run_s_demo_shows_a_schedule_a_retry_a_final_failure_and_a_backfill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What issue 14 asks make run to show, each in the log within three minutes."""
    _handler_loggers(monkeypatch)
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=3), stop)
    out = io.StringIO()
    code = local_run.main([], clock=clock, stop=stop, out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "  demo         at start: a one-time schedule (demo-once)" in text

    def logged(fragment: str) -> bool:
        return any(fragment in line for line in text.splitlines())

    assert logged("Operator make-run created runtime schedule demo-once")
    assert logged("Job demo-once ended SUCCEEDED after ")
    assert logged("Job demo-retry attempt 1 ended FAILED - firing demo-retry@2026-11-30T13:59:31Z")
    assert logged("Job demo-retry ended SUCCEEDED after ") and logged(
        "firing demo-retry@2026-11-30T13:59:31Z#2"
    )
    assert logged("Job demo-failure attempt 2 ended FAILED - firing demo-failure@")
    assert logged(
        'Event Job Run Failed: {"schemaVersion":1,"job":"demo-failure",'
        '"firingId":"demo-failure@2026-11-30T13:59:41Z#2"'
    )
    spread = [line for line in text.splitlines() if '"plannedTime"' in line]
    assert spread and all('"job": "demo-spread"' in line for line in spread), text
    assert '"scheduledTime": "2026-11-30T13:59:26Z", "plannedTime": "2026-11-30T13:59:' in text
    assert logged("Operator make-run backfills heartbeat: 8 firings from 2026-11-30T13:57:00Z")
    backfilled = [line for line in text.splitlines() if '"backfill": true' in line]
    assert len(backfilled) == 8, text
    assert "Traceback" not in text
