"""The cron file on S3 cannot be read (503 SlowDown, 503 ServiceUnavailable, 403 AccessDenied).
A warm container keeps the last good file it read, with a warning; a cold one has no file to
keep, so the tick raises a clear error naming the file and the cause (the invocation fails),
nothing is written, and the next tick that reads the file recovers the minute."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_scheduler.errors import CronFileUnreadableError
from mini_scheduler.model import RunStatus
from tests.system.faults.conftest import (
    BUCKET,
    T0,
    Cloud,
    RetrySleeps,
    backoff_ceilings,
    every_minute,
    figures,
    show,
    started,
)
from tests.system.faults.injection import (
    S3_ACCESS_DENIED,
    S3_SLOW_DOWN,
    S3_UNAVAILABLE,
    Fault,
    sdk_attempts,
)

pytestmark = pytest.mark.dynamodb_local

S3_FAULTS = [S3_SLOW_DOWN, S3_UNAVAILABLE, S3_ACCESS_DENIED]
MINUTE = timedelta(minutes=1)
LOCATION = f"s3://{BUCKET}/cron.yaml"


def _code(fault: Fault) -> str:
    return fault.code


def _attempts(fault: Fault) -> int:
    """A 5xx is retried by the SDK; AccessDenied is not."""
    return sdk_attempts("s3") if fault.status >= 500 else 1


@pytest.mark.parametrize("fault", S3_FAULTS, ids=_code)
def test_a_warm_container_keeps_its_last_good_file_with_a_warning(
    cloud: Cloud,
    fault: Fault,
    caplog: pytest.LogCaptureFixture,
    retry_sleeps: RetrySleeps,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ticker = started(cloud, every_minute("report"), s3=True)
    cloud.faults.inject("s3.GetObject", fault)

    answer = ticker.tick(T0).to_json()

    assert cloud.faults.attempts["s3.GetObject"] == _attempts(fault)
    assert answer["counts"]["dispatched"] == 1 and answer["mode"] == "active"
    warnings = [r for r in caplog.records if "keeping the last good file read" in r.message]
    assert warnings and warnings[0].levelname == "WARNING"
    assert LOCATION in warnings[0].getMessage() and fault.code in warnings[0].getMessage()
    if fault.status >= 500:  # SlowDown is a throttling code: 1 s; ServiceUnavailable 50 ms
        retries = _attempts(fault) - 1
        assert retry_sleeps.backoff == backoff_ceilings(fault.code, fault.status, retries, "s3")
    show(capsys, figures("s3.GetObject", fault.code, cloud, retry_sleeps) + ": file kept")


@pytest.mark.parametrize("fault", S3_FAULTS, ids=_code)
def test_a_cold_container_answers_a_clear_error_and_the_next_tick_recovers_the_minute(
    cloud: Cloud, fault: Fault
) -> None:
    started(cloud, every_minute("report"), s3=True)
    cold = cloud.ticker(LOCATION)  # a new container: no file read yet
    cloud.faults.inject("s3.GetObject", fault)

    with pytest.raises(CronFileUnreadableError) as raised:
        cold.tick(T0)

    assert str(raised.value).startswith(f"Cron file {LOCATION} cannot be read: {fault.code} ")
    assert cloud.faults.attempts["s3.GetObject"] == _attempts(fault)
    store = cloud.store()
    assert store.control("us-east-1/prod").watermark == T0
    assert store.run("report@2026-11-30T14:00:00Z") is None
    assert cloud.faults.attempts["lambda.Invoke"] == 0

    cloud.faults.clear()
    cold.clock.set(T0 + MINUTE)  # type: ignore[attr-defined]
    cold.tick(T0 + MINUTE)
    run = store.run("report@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED  # fire_now: run late
    assert cloud.faults.attempts["lambda.Invoke"] == 2
