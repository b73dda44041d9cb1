"""make run's sample targets: the demo's firing to each new kind arrives (read back from moto's
queues, received by the local webhook), an ECS task is closed by its simulated STOPPED event,
and the banner and the log say where each arrival shows."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.clock import SystemClock
from mini_scheduler.dispatch.base import Answer
from mini_scheduler.dispatch.ecs import FIRING_VARIABLE, STARTED_BY_PREFIX, started_by
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import Target
from mini_scheduler.local import main as local_run
from mini_scheduler.local.scheduler import LocalScheduler
from mini_scheduler.local.targets import (
    BUS,
    BUS_QUEUE,
    CLUSTER,
    QUEUE,
    TOPIC,
    TOPIC_QUEUE,
    Arrival,
    SampleWebhook,
    firing_of,
)
from mini_scheduler.local.tasks import LocalTaskDispatcher, task_stopped_event
from mini_scheduler.model import RunStatus, floor_minute, iso_seconds
from tests.conftest import ROOT
from tests.unit.local.test_local import SAMPLE, START, StoppingClock

WAIT = 10.0  # the most any test here waits for something to arrive (seconds)
KINDS = ("demo-queue", "demo-topic", "demo-bus", "demo-task", "demo-webhook")


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine has configured, these tests never reach AWS."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def demo() -> Iterator[LocalScheduler]:
    """Two minutes of the sample cron file and the demo, 13:59 to 14:01 UTC, on a fixed clock;
    a sample ECS task stops 50 ms (of the wall clock) after it starts."""
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=2), stop)
    with LocalScheduler(SAMPLE, clock=clock, stop=stop, demo=True, task_seconds=0.05) as run:
        run.run()
        assert run.settle(WAIT)
        yield run


def firings(scheduler: LocalScheduler, job: str) -> list[tuple[str, RunStatus, str | None]]:
    return [(run.firing_id, run.status, run.error) for run in scheduler.history(job)]


def test_each_sample_target_receives_its_demo_firing_every_minute(
    demo: LocalScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    # the start was 13:59:00: the first firings are 6 to 18 s after 13:59:01, then each minute
    seconds = {"demo-queue": 7, "demo-topic": 10, "demo-bus": 13, "demo-task": 16}
    seconds["demo-webhook"] = 19
    expected = {
        job: [f"{job}@2026-11-30T{m}:{s:02d}Z" for m in ("14:00", "13:59")]
        for job, s in seconds.items()
    }
    for job in KINDS:
        assert firings(demo, job) == [(f, RunStatus.SUCCEEDED, None) for f in expected[job]]
    samples = demo.home.samples
    wanted = {Arrival(QUEUE, firing, None) for firing in expected["demo-queue"]} | {
        Arrival(TOPIC_QUEUE, firing, f"topic {TOPIC}") for firing in expected["demo-topic"]
    }
    wanted |= {Arrival(BUS_QUEUE, firing, f"bus {BUS}") for firing in expected["demo-bus"]}
    assert samples.wait_for(lambda arrived: wanted <= set(arrived), WAIT), samples.arrivals
    assert len(samples.arrivals) == len(wanted)  # each once: read back, then deleted
    logged = caplog.get_records("setup") + caplog.get_records("call")
    said = {record.getMessage() for record in logged}
    assert f"Queue {QUEUE} received firing demo-queue@2026-11-30T13:59:07Z" in said
    assert (
        f"Queue {TOPIC_QUEUE} received firing demo-topic@2026-11-30T13:59:10Z from topic {TOPIC}"
        in said
    )
    assert f"Queue {BUS_QUEUE} received firing demo-bus@2026-11-30T13:59:13Z from bus {BUS}" in said


def test_the_webhook_gets_the_input_shaped_body_with_the_idempotency_key(
    demo: LocalScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    hook = demo.home.samples.webhook
    assert hook.wait_for(lambda got: len(got) >= 2, WAIT), hook.received
    first = hook.received[0]
    firing = "demo-webhook@2026-11-30T13:59:19Z"
    assert (first["method"], first["path"], first["key"]) == ("POST", "/hook", firing)
    assert json.loads(first["body"]) == {
        "event": "demo-webhook",
        "firing": firing,
        "when": "2026-11-30T13:59:19Z",
        "greeting": "hello from make run",
    }
    assert any(
        record.getMessage().startswith(
            f"Webhook received POST /hook - Idempotency-Key {firing}, body {{"
        )
        for record in caplog.get_records("setup")
    )


def test_the_ecs_task_runs_in_moto_and_its_stopped_event_closes_the_run(
    demo: LocalScheduler,
) -> None:
    ecs = demo.clients("ecs")
    arns = ecs.list_tasks(cluster=CLUSTER, desiredStatus="STOPPED")["taskArns"]
    tasks = ecs.describe_tasks(cluster=CLUSTER, tasks=arns)["tasks"]
    found = [task["startedBy"] for task in tasks]
    wanted = {started_by(f"demo-task@2026-11-30T{m}:16Z") for m in ("13:59", "14:00")}
    buffering = {started_by(f"demo-buffer@2026-11-30T14:00:{s:02d}Z") for s in (3, 4, 5)}
    buffering |= {started_by(f"demo-cap@2026-11-30T14:00:{s:02d}Z") for s in (7, 8, 9)}
    assert wanted <= set(found) <= wanted | buffering and len(found) == len(set(found))
    assert {task["lastStatus"] for task in tasks} == {"STOPPED"}
    runs = demo.history("demo-task")
    assert len(runs) == 2
    for run in runs:  # closed by the event, not before the start
        assert run.status is RunStatus.SUCCEEDED and run.ended_at is not None
        assert run.started_at is not None and run.ended_at >= run.started_at


class ShiftedClock(SystemClock):
    """The real clock (its waits are real: make run wakes its ticker for catch-ups on it), set
    at its first reading (make run's start, moments before its demo's) to ``at`` seconds into
    a minute."""

    def __init__(self, at: float) -> None:
        self._at = timedelta(seconds=at)
        self._shift: timedelta | None = None

    def now(self) -> datetime:
        real = super().now()
        if self._shift is None:
            self._shift = real.replace(second=0, microsecond=0) + self._at - real
        return real + self._shift


def _demo_buffer_ran(run: LocalScheduler, ids: list[str], job: str = "demo-buffer") -> bool:
    """Whether the demo's buffering (or capped) job's three firings have their end."""
    runs = {found.firing_id: found for found in run.history(job)}
    return all(i in runs and not runs[i].status.open for i in ids)


def test_demo_buffer_starts_one_firing_keeps_one_waiting_and_skips_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On the real clock, started at :57 (the demo's buffering job fires at :00, :01 and :02 of
    the next minute): the first firing starts a task, the second waits and starts as that task
    stops (its end wakes the ticker: a catch-up), the third is skipped. No catch-up claims the
    tick's firings again: nothing said of a slot released as stale or a firing due twice."""
    stop = threading.Event()
    caplog.set_level(logging.INFO)
    with LocalScheduler(SAMPLE, clock=ShiftedClock(57.5), stop=stop, demo=True) as run:
        minute = floor_minute(run.clock.now()) + timedelta(minutes=1)
        ids = [f"demo-buffer@{iso_seconds(minute + timedelta(seconds=s))}" for s in (0, 1, 2)]
        capped = [f"demo-cap@{iso_seconds(minute + timedelta(seconds=s))}" for s in (4, 5, 6)]
        runner = threading.Thread(target=run.run, daemon=True)
        runner.start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                _demo_buffer_ran(run, ids) and _demo_buffer_ran(run, capped, "demo-cap")
            ):
                time.sleep(0.1)
            runs = {found.firing_id: found for found in run.history("demo-buffer")}
            caps = {found.firing_id: found for found in run.history("demo-cap")}
        finally:
            stop.set()
            runner.join(WAIT)
    ended = [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED, RunStatus.SKIPPED]
    assert [runs[i].status for i in ids] == ended, runs
    first, waited = runs[ids[0]], runs[ids[1]]
    assert first.ended_at is not None and waited.started_at is not None
    assert waited.started_at >= first.ended_at  # one run at a time
    said = [record.getMessage() for record in caplog.records]
    lines = [
        f"Job demo-buffer - firing {ids[1]} waits: its previous run has not ended",
        f"Job demo-buffer skipped - firing {ids[2]} (a firing is already waiting",
        f"Job demo-buffer - firing {ids[1]} starts: its previous run has ended",
    ]
    for line in lines:
        assert any(message.startswith(line) for message in said), line
    assert not [m for m in said if "released: its run has ended" in m or "due twice" in m]
    # demo-cap: two tasks at once (max_running 2), the third firing skipped saying why
    assert [caps[i].status for i in capped] == ended, caps
    assert caps[capped[2]].reason == (
        "as many runs are open as its caps allow: max_running 2; overlap skip"
    )
    second = caps[capped[1]]
    assert second.started_at is not None and caps[capped[0]].ended_at is not None
    assert second.started_at < caps[capped[0]].ended_at  # the two ran at once


def test_a_stopped_event_reads_as_the_recorder_reads_ecs_s() -> None:
    firing = "demo-task@2026-11-30T13:59:16Z"
    task = {
        "taskArn": f"arn:aws:ecs:us-east-1:123456789012:task/{CLUSTER}/abc",
        "clusterArn": f"arn:aws:ecs:us-east-1:123456789012:cluster/{CLUSTER}",
        "startedBy": started_by(firing),
        "overrides": {
            "containerOverrides": [
                {"name": "app", "environment": [{"name": FIRING_VARIABLE, "value": firing}]}
            ]
        },
        "containers": [{"name": "app", "lastStatus": "PENDING"}],
    }
    at = START + timedelta(seconds=20)
    event = task_stopped_event(task, region="us-east-1", account="123456789012", at=at)
    template = json.loads((ROOT / "events" / "ecs-task-stopped.json").read_text())
    assert event.keys() == template.keys() and event["detail-type"] == template["detail-type"]
    assert event["detail"]["startedBy"].startswith(STARTED_BY_PREFIX)
    completion = completion_from_event(event, None)
    assert completion is not None
    assert (completion.firing_id, completion.status, completion.error) == (
        firing,
        RunStatus.SUCCEEDED,
        None,
    )
    assert completion.ended_at == at


class _StartsTask:
    """A Dispatcher that answers a task ARN, as the ECS one does after RunTask."""

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        return f"arn:aws:ecs:us-east-1:123456789012:task/{target.name.split('/')[0]}/abc"


def test_a_task_not_stopped_at_close_stays_open() -> None:
    """A stop of the scheduler ends the wait at once; no event is sent (the client is never
    called: it is None)."""
    completed: list[dict[str, Any]] = []
    tasks = LocalTaskDispatcher(
        _StartsTask(),
        None,
        on_complete=completed.append,
        clock=StoppingClock(START, START, threading.Event()),
        region="us-east-1",
        account="123456789012",
        after=3600.0,
    )
    target = Target("ecs", f"{CLUSTER}/task", {})
    assert tasks.dispatch(target, "demo-task@2026-11-30T13:59:16Z", {}).endswith("/abc")
    assert tasks.pending() == 1
    tasks.close()  # returns at once: a wait of an hour would hang the test past its timeout
    assert tasks.pending() == 0 and completed == []


@pytest.mark.parametrize(
    ("message", "firing"),
    [
        ({"MessageAttributes": {"firingId": {"StringValue": "a@1"}}, "Body": "{}"}, "a@1"),
        ({"Body": '{"job": "a", "firingId": "a@2"}'}, "a@2"),
        ({"Body": '{"source": "mini-scheduler", "detail": {"firingId": "a@3"}}'}, "a@3"),
        ({"Body": "plain text"}, "(no firing id in 'plain text')"),
        ({"Body": '{"detail": "x"}'}, '(no firing id in \'{"detail": "x"}\')'),
    ],
    ids=["attribute", "raw-copy", "bus-event", "not-json", "no-id"],
)
def test_firing_of(message: dict[str, Any], firing: str) -> None:
    assert firing_of(message) == firing


def test_the_webhook_prints_each_request_and_answers_200(caplog: pytest.LogCaptureFixture) -> None:
    hook = SampleWebhook()
    hook.start()
    try:
        request = urllib.request.Request(  # loopback only
            hook.url, data=b'{"a":1}', headers={"Idempotency-Key": "k@1"}, method="PUT"
        )
        with caplog.at_level(logging.INFO, "mini_scheduler.webhook"):
            with urllib.request.urlopen(request, timeout=WAIT) as answer:  # nosec B310
                assert answer.status == 200 and json.load(answer) == {"ok": True}
            assert hook.wait_for(lambda got: len(got) == 1, WAIT)
    finally:
        hook.stop()
    assert hook.url.startswith("http://127.0.0.1:") and hook.url.endswith("/hook")
    assert [r.getMessage() for r in caplog.records if r.name == "mini_scheduler.webhook"] == [
        'Webhook received PUT /hook - Idempotency-Key k@1, body {"a":1}'
    ]


def test_the_banner_and_the_start_log_say_where_each_arrival_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stop = threading.Event()
    clock = StoppingClock(START, START + timedelta(minutes=1), stop)
    out = io.StringIO()
    assert local_run.main([], clock=clock, stop=stop, out=out) == 0, out.getvalue()
    lines = out.getvalue().splitlines()
    [targets] = [line for line in lines if line.startswith("  targets      ")]
    for shown in (f"sqs://{QUEUE}", f"sns://{TOPIC}", f"events://{BUS}", f"ecs://{CLUSTER}/"):
        assert shown in targets
    assert "'Queue ... received firing'" in targets and "webhook on 127.0.0.1" in targets
    [demo] = [line for line in lines if line.startswith("  demo         ")]
    assert "(demo-queue, demo-topic, demo-bus, demo-task, demo-webhook)" in demo
    [started] = [line for line in lines if "Sample targets: " in line]
    assert "a webhook at http://127.0.0.1:" in started
    assert "Traceback" not in out.getvalue()
