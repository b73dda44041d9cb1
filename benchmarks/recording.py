"""The recorder as the benchmarks run it: each dispatched firing closed from the Lambda
destination record its asynchronous invocation would send (OnSuccess), one ``record`` per run,
as the recorder Lambda does with one event.

:func:`recorder` builds it the way the handler does (``wiring.build_recorder``) on a bench's
table, on a boto3 session of the caller's (whose events the caller counts); :func:`close`
closes the runs of a minute one by one, timing each and counting what the handler would log;
:func:`close_all` closes them on a few threads, untimed (between the ticks of ``overlap: skip``
jobs, whose next firing waits for its slot).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import boto3

from benchmarks.rig import REGION, Bench, Rig, firing_ids
from mini_scheduler.aws import Clients
from mini_scheduler.config import Settings
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.model import firing_from_id, iso_millis
from mini_scheduler.recorder import Recorder
from mini_scheduler.wiring import build_recorder


def destination(firing_id: str, when: str) -> dict[str, Any]:
    """A Lambda destination record (OnSuccess) for a firing's asynchronous invocation."""
    firing = firing_from_id(firing_id)
    return {
        "version": "1.0",
        "timestamp": when,
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"arn:aws:lambda:{REGION}:123456789012:function:bench-target:$LATEST",
            "condition": "Success",
            "approximateInvokeCount": 1,
        },
        "requestPayload": {
            "job": firing.job,
            "firingId": firing_id,
            "scheduledTime": firing.scheduled_time,
            "origin": f"{REGION}/prod",
            "manual": False,
            "parameters": {"region": "east"},
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": None,
    }


def recorder(rig: Rig, bench: Bench, session: boto3.session.Session | None = None) -> Recorder:
    settings = Settings(state_table=bench.table, active_environment_store="dynamodb", region=REGION)
    return build_recorder(
        settings,
        clients=Clients(REGION, session=session or boto3.session.Session(), pool=16),
        clock=bench.clock,
        metrics=rig.metrics,
    )


@dataclass
class Closing:
    """What closing a minute's runs took: per record, and the handler's output."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    log_bytes: int = 0
    emf_bytes: int = 0


def _record(closer: Recorder, firing_id: str, when: str) -> None:
    answer = closer.record(completion_from_event(destination(firing_id, when)))
    if not answer.get("recorded"):
        raise AssertionError(f"the recorder did not close {firing_id}: {answer}")


def close(rig: Rig, closer: Recorder, ids: Iterable[str], minute: datetime) -> Closing:
    """Close the runs ``ids`` (of ``minute``) one by one, 5 s into the minute, as the recorder
    Lambda would: each its own invocation, its metrics flushed."""
    from mini_scheduler.handlers import _runtime as runtime

    when = iso_millis(minute + timedelta(seconds=5))
    out = Closing()
    rig.logs.take()
    rig.emf.take()
    for firing_id in ids:
        with contextlib.redirect_stdout(rig.emf):
            cpu, started = time.process_time(), time.perf_counter()
            _record(closer, firing_id, when)
            out.walls.append(time.perf_counter() - started)
            out.cpus.append(time.process_time() - cpu)
            runtime.flush()  # the recorder handler flushes its metrics every invocation
    out.log_bytes, out.emf_bytes = rig.logs.take()[0], rig.emf.take()[0]
    return out


def close_all(rig: Rig, closer: Recorder, bench: Bench, minute: datetime, workers: int = 8) -> None:
    """Close every run of ``minute``'s due firings on ``workers`` threads (untimed; what the
    handler logs is counted and dropped)."""
    when = iso_millis(minute + timedelta(seconds=5))
    from mini_scheduler.handlers import _runtime as runtime

    ids = sorted(firing_ids(bench.cron, minute))
    with contextlib.redirect_stdout(rig.emf):
        with ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(_record, closer, firing_id, when) for firing_id in ids]:
                future.result()
        runtime.flush()
    rig.logs.take()
    rig.emf.take()
