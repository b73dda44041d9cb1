"""SSM throttled or down when the tick reads the active environment. Within the SDK's retries
the read is fresh. Past them, a warm container keeps the last value it read, with a warning; a
cold one fails closed (nothing runs, the watermark stays) and the next tick that can read the
store recovers the minute under each job's misfire policy."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_scheduler.model import RunStatus
from tests.system.faults.conftest import (
    PARAMETER,
    T0,
    Cloud,
    RetrySleeps,
    backoff_ceilings,
    every_minute,
    figures,
    show,
    started,
)
from tests.system.faults.injection import SSM_INTERNAL, SSM_THROTTLING, Fault, sdk_attempts

pytestmark = pytest.mark.dynamodb_local

SSM_FAULTS = [SSM_THROTTLING, SSM_INTERNAL]
MINUTE = timedelta(minutes=1)
SCOPE = "us-east-1/prod"


def _code(fault: Fault) -> str:
    return fault.code


@pytest.mark.parametrize("fault", SSM_FAULTS, ids=_code)
def test_a_read_refused_within_the_retries_is_retried_and_fresh(
    cloud: Cloud, retry_sleeps: RetrySleeps, fault: Fault, capsys: pytest.CaptureFixture[str]
) -> None:
    ticker = started(cloud, every_minute("report"))
    cloud.ssm.put_parameter(Name=PARAMETER, Value="DR", Type="String", Overwrite=True)
    retries = sdk_attempts("ssm") - 1
    cloud.faults.inject("ssm.GetParameter", fault, times=retries)
    retry_sleeps.clear()

    answer = ticker.tick(T0).to_json()

    assert cloud.faults.attempts["ssm.GetParameter"] == retries + 1
    assert retry_sleeps.backoff == backoff_ceilings(fault.code, fault.status, retries, "ssm")
    assert answer["activeEnvironment"] == "DR" and answer["mode"] == "standby"  # the new value
    assert cloud.faults.attempts["lambda.Invoke"] == 0
    show(capsys, figures("ssm.GetParameter", fault.code, cloud, retry_sleeps))


@pytest.mark.parametrize("fault", SSM_FAULTS, ids=_code)
def test_a_warm_container_keeps_the_last_value_it_read_with_a_warning(
    cloud: Cloud, fault: Fault, caplog: pytest.LogCaptureFixture
) -> None:
    ticker = started(cloud, every_minute("report"))  # read "prod" at its first tick
    cloud.faults.inject("ssm.GetParameter", fault)

    answer = ticker.tick(T0).to_json()

    assert cloud.faults.attempts["ssm.GetParameter"] == sdk_attempts("ssm")
    assert answer["mode"] == "active" and answer["counts"]["dispatched"] == 1
    warnings = [r for r in caplog.records if "keeping the last value read, prod" in r.message]
    assert warnings and warnings[0].levelname == "WARNING"
    assert fault.code in warnings[0].getMessage()


@pytest.mark.parametrize("fault", SSM_FAULTS, ids=_code)
def test_a_cold_container_fails_closed_and_the_next_tick_recovers_the_minute(
    cloud: Cloud, fault: Fault, caplog: pytest.LogCaptureFixture
) -> None:
    started(cloud, every_minute("now") + every_minute("later", misfire="skip")[len("jobs:\n") :])
    cold = cloud.ticker(f"file:{cloud.cron_path}")  # a new container: no value read yet
    cloud.faults.inject("ssm.GetParameter", fault)

    closed = cold.tick(T0).to_json()

    assert closed["mode"] == "standby" and "failing closed" in closed["note"]
    assert closed["error"] is not None and fault.code in closed["error"]
    assert closed["counts"]["dispatched"] == 0 and closed["counts"]["errors"] == 1
    assert any("failing closed" in r.message and r.levelname == "ERROR" for r in caplog.records)
    store = cloud.store()
    assert store.control(SCOPE).watermark == T0  # not moved: the minute is still owed
    assert store.run("now@2026-11-30T14:00:00Z") is None  # and nothing was written for it
    assert cloud.faults.attempts["lambda.Invoke"] == 0

    cloud.faults.clear()
    cold.clock.set(T0 + MINUTE)  # type: ignore[attr-defined]
    recovered = cold.tick(T0 + MINUTE).to_json()

    assert recovered["mode"] == "active" and recovered["counts"]["misfired"] == 2
    now = store.run("now@2026-11-30T14:00:00Z")
    assert now is not None and now.status is RunStatus.DISPATCHED  # fire_now: run late
    later = store.run("later@2026-11-30T14:00:00Z")
    assert later is not None and later.status is RunStatus.SKIPPED and later.reason == "misfire"
    assert cloud.faults.attempts["lambda.Invoke"] == 3  # now@T0, now@T0+1, later@T0+1
    assert store.control(SCOPE).watermark == T0 + 2 * MINUTE
