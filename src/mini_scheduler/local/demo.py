"""What ``make run`` does at start besides ticking: the firings beyond cron.yaml's, so a newcomer
sees each one happen in the log within two minutes. Everything goes through the operator path
(:class:`~mini_scheduler.operator.Operator`), as the CLI's ``schedule`` and ``backfill`` do,
with the operator ``make-run``:

* ``demo-once``: a one-time schedule 20 seconds after the start, on the sample heartbeat;
* ``demo-retry``: a one-time schedule whose first attempt fails on purpose (the heartbeat's
  ``failAttempts``), retried 15 seconds later, when it succeeds;
* ``demo-failure``: one whose every attempt fails: after its retry, the failure is final, and its
  ``Job Run Failed`` event is a line of the log;
* ``demo-spread``: every minute at a second 25 seconds after the start's, on the heartbeat,
  with ``jitter: 30``: each firing starts up to 29 seconds after its own instant, its payload
  saying both (``scheduledTime``, ``plannedTime``);
* a backfill of the cron file's ``heartbeat`` job over the two minutes before the start, 4
  firings a minute, each payload saying ``"backfill": true``;
* with the region's sample targets (:mod:`mini_scheduler.local.targets`), a recurring schedule
  of each, every minute at a second 6 to 18 seconds after the start's (so each arrives within
  the first minute, then every minute): ``demo-queue`` (``sqs://``), ``demo-topic``
  (``sns://``), ``demo-bus`` (``events://``), ``demo-task`` (``ecs://``) and ``demo-webhook``
  (its ``http://127.0.0.1`` URL, with ``insecure`` and ``allow_private``, and an ``input``
  that shapes the body it receives);
* ``demo-buffer``: on the sample ECS task, every minute from the next one on, at three
  seconds in a row 3 to 5 seconds after the start's, with ``overlap: buffer_one``: the first
  firing starts, the second waits for its task to stop (3 s later) and starts then, the third
  is skipped (``buffer_full``);
* ``demo-cap``: on the sample ECS task, every minute from the next one on, at three seconds in
  a row 7 to 9 seconds after the start's, with ``overlap: skip`` and ``max_running: 2``: two
  tasks run at once, the third firing is skipped (the cap's reason in its record).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.errors import SchedulerError
from mini_scheduler.local.dispatch import SAMPLE_PREFIX
from mini_scheduler.local.targets import BUS, CLUSTER, QUEUE, TASK, TOPIC
from mini_scheduler.model import floor_minute, iso_seconds
from mini_scheduler.operator import Operator

if TYPE_CHECKING:
    from mini_scheduler.local.targets import SampleTargets

log = logging.getLogger("mini_scheduler.local")

OPERATOR: Final = "make-run"
HEARTBEAT: Final = SAMPLE_PREFIX + "heartbeat"
BACKFILLED: Final = "heartbeat"  # the sample cron file's job the demo backfills


def schedules(now: datetime) -> list[dict[str, Any]]:
    """The demo's one-time schedules, seconds after ``now``, and its spread one."""
    start = now.replace(microsecond=0) + timedelta(seconds=1)

    def at(seconds: int) -> str:
        return iso_seconds(start + timedelta(seconds=seconds))

    retry = {"retries": 1, "backoff": 15}
    return [
        {"name": "demo-once", "at": at(20), "service": HEARTBEAT},
        {
            "name": "demo-retry",
            "at": at(30),
            "service": HEARTBEAT,
            "parameters": {"failAttempts": 1},
            "retry": retry,
        },
        {
            "name": "demo-failure",
            "at": at(40),
            "service": HEARTBEAT,
            "parameters": {"failAttempts": 9},
            "retry": retry,
        },
        {
            "name": "demo-spread",
            "cron": f"{(start + timedelta(seconds=25)).second} * * * * ?",
            "service": HEARTBEAT,
            "jitter": 30,
        },
    ]


def target_schedules(now: datetime, samples: SampleTargets) -> list[dict[str, Any]]:
    """A recurring schedule of each sample target, the first firings 6 to 18 seconds after
    ``now``, then every minute at the same seconds; and ``demo-buffer`` and ``demo-cap``, three
    firings a minute each on the sample task from the next minute on (a catch-up of the first
    minute, which make run starts in, reads the schedules its tick read:
    :func:`.tick.deferred.unread_by_tick`)."""
    first = now.replace(microsecond=0) + timedelta(seconds=1)

    def every_minute(offset: int, count: int = 1) -> str:
        seconds = sorted((first + timedelta(seconds=offset + i)).second for i in range(count))
        return ",".join(str(second) for second in seconds) + " * * * * ?"

    webhook = {"method": "POST", "insecure": True, "allow_private": True, "timeout": 5}
    body = {
        "event": "demo-webhook",
        "firing": "<firingId>",
        "when": "<scheduledTime>",
        "greeting": "<parameters.greeting>",
    }
    return [
        {"name": "demo-queue", "cron": every_minute(6), "service": f"sqs://{QUEUE}"},
        {"name": "demo-topic", "cron": every_minute(9), "service": f"sns://{TOPIC}"},
        {"name": "demo-bus", "cron": every_minute(12), "service": f"events://{BUS}"},
        {
            "name": "demo-task",
            "cron": every_minute(15),
            "service": f"ecs://{CLUSTER}/{TASK}",
            "ecs": samples.ecs,
        },
        {
            "name": "demo-buffer",
            "cron": every_minute(2, 3),
            "service": f"ecs://{CLUSTER}/{TASK}",
            "ecs": samples.ecs,
            "overlap": "buffer_one",
            "start": iso_seconds(floor_minute(now) + timedelta(minutes=1)),
        },
        {
            "name": "demo-cap",
            "cron": every_minute(6, 3),
            "service": f"ecs://{CLUSTER}/{TASK}",
            "ecs": samples.ecs,
            "overlap": "skip",
            "max_running": 2,
            "start": iso_seconds(floor_minute(now) + timedelta(minutes=1)),
        },
        {
            "name": "demo-webhook",
            "cron": every_minute(18),
            "service": samples.webhook.url,
            "http": webhook,
            "input": body,
            "parameters": {"greeting": "hello from make run"},
        },
    ]


def _with_parameters(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entry with a small ``parameters`` saying which demo it is, unless it has its own."""
    return [{"parameters": {"demo": entry["name"]}, **entry} for entry in entries]


def start(operator: Operator, now: datetime, samples: SampleTargets | None = None) -> None:
    """Create the demo's schedules and its backfill; a part that cannot be made is said and
    left out (a cron file without ``heartbeat`` has nothing to backfill). With ``samples``,
    a schedule of each sample target too."""
    try:
        operator.create_schedules(schedules(now), OPERATOR)
    except SchedulerError as exc:
        log.warning("Demo schedules not created: %s", exc)
    if samples is not None:
        try:
            operator.create_schedules(_with_parameters(target_schedules(now, samples)), OPERATOR)
        except SchedulerError as exc:
            log.warning("Demo schedules of the sample targets not created: %s", exc)
    end = floor_minute(now)
    try:
        operator.backfill(
            BACKFILLED, iso_seconds(end - timedelta(minutes=2)), iso_seconds(end), 4, OPERATOR
        )
    except SchedulerError as exc:
        log.info("Demo backfill left out: %s", exc)
