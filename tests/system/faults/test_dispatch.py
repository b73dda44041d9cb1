"""Lambda Invoke throttled (429 TooManyRequestsException) or failing (500 ServiceException), and
Step Functions StartExecution throttled: retried by the SDK; past the retries the run is FAILED
with the error and counted in ``DispatchErrors``. The claims are on DynamoDB Local, the targets on
moto."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_scheduler import metrics as m
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import RunStatus
from tests.system.faults.conftest import (
    FLOW,
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
    LAMBDA_SERVICE,
    LAMBDA_TOO_MANY_REQUESTS,
    SFN_THROTTLING,
    Fault,
    sdk_attempts,
)

pytestmark = pytest.mark.dynamodb_local

LAMBDA_FAULTS = [LAMBDA_TOO_MANY_REQUESTS, LAMBDA_SERVICE]
FIRING = "report@2026-11-30T14:00:00Z"
EXECUTION = "report@2026-11-30T14-00-00Z"
MINUTE = timedelta(minutes=1)


def _code(fault: Fault) -> str:
    return fault.code


@pytest.mark.parametrize("fault", LAMBDA_FAULTS, ids=_code)
def test_an_invoke_refused_within_the_retries_is_retried_with_backoff_and_dispatched_once(
    cloud: Cloud, retry_sleeps: RetrySleeps, fault: Fault, capsys: pytest.CaptureFixture[str]
) -> None:
    ticker = started(cloud, every_minute("report"))
    retries = sdk_attempts("lambda") - 1
    cloud.faults.inject("lambda.Invoke", fault, times=retries)
    retry_sleeps.clear()

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 1 and answer["counts"]["errors"] == 0
    assert cloud.faults.attempts["lambda.Invoke"] == retries + 1
    assert retry_sleeps.backoff == backoff_ceilings(fault.code, fault.status, retries, "lambda")
    run = cloud.store().run(FIRING)
    assert run is not None and run.status is RunStatus.DISPATCHED
    show(capsys, figures("lambda.Invoke", fault.code, cloud, retry_sleeps) + ": dispatched")


@pytest.mark.parametrize("fault", LAMBDA_FAULTS, ids=_code)
def test_an_invoke_refused_past_the_retries_is_failed_with_the_error_and_counted(
    cloud: Cloud, fault: Fault, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = RecordingMetrics()
    ticker = started(cloud, every_minute("report"), metrics=metrics)
    cloud.faults.inject("lambda.Invoke", fault)

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["errors"] == 1 and answer["counts"]["dispatched"] == 0
    assert cloud.faults.attempts["lambda.Invoke"] == sdk_attempts("lambda")
    assert metrics.totals[m.DISPATCH_ERRORS] == 1
    run = cloud.store().run(FIRING)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.error is not None and f"{fault.code}: " in run.error
    assert "Lambda Invoke fault-target failed" in run.error
    show(
        capsys,
        f"lambda.Invoke {fault.code} past the retries: {sdk_attempts('lambda')} attempts, "
        f"DispatchErrors {metrics.totals[m.DISPATCH_ERRORS]:g}, run FAILED: {run.error}",
    )

    # The firing is recorded (FAILED), so the watermark moves on and the next tick does not
    # dispatch it again; the next minute runs as usual.
    cloud.faults.clear()
    cloud.faults.reset_counts()
    ticker.clock.set(T0 + MINUTE)  # type: ignore[attr-defined]
    again = ticker.tick(T0 + MINUTE).to_json()
    assert again["counts"]["dispatched"] == 1 and again["counts"]["misfired"] == 0
    assert cloud.faults.attempts["lambda.Invoke"] == 1
    failed = cloud.store().run(FIRING)
    assert failed is not None and failed.status is RunStatus.FAILED


def test_a_throttled_start_execution_is_retried_and_starts_one_execution(
    cloud: Cloud, retry_sleeps: RetrySleeps, capsys: pytest.CaptureFixture[str]
) -> None:
    ticker = started(cloud, every_minute("report", service=f"flow://{FLOW}"))
    retries = sdk_attempts("stepfunctions") - 1
    cloud.faults.inject("sfn.StartExecution", SFN_THROTTLING, times=retries)
    retry_sleeps.clear()

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 1 and answer["counts"]["errors"] == 0
    assert cloud.faults.attempts["sfn.StartExecution"] == retries + 1
    assert retry_sleeps.backoff == backoff_ceilings(
        SFN_THROTTLING.code, SFN_THROTTLING.status, retries, "sfn"
    )
    assert EXECUTION in cloud.executions()
    assert cloud.executions().count(EXECUTION) == 1
    run = cloud.store().run(FIRING)
    assert run is not None and run.status is RunStatus.DISPATCHED
    show(capsys, figures("sfn.StartExecution", "ThrottlingException", cloud, retry_sleeps))


def test_a_start_execution_throttled_past_the_retries_is_failed_and_starts_nothing(
    cloud: Cloud,
) -> None:
    metrics = RecordingMetrics()
    ticker = started(cloud, every_minute("report", service=f"flow://{FLOW}"), metrics=metrics)
    cloud.faults.inject("sfn.StartExecution", SFN_THROTTLING)

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["errors"] == 1 and answer["counts"]["dispatched"] == 0
    assert cloud.faults.attempts["sfn.StartExecution"] == sdk_attempts("stepfunctions")
    assert metrics.totals[m.DISPATCH_ERRORS] == 1
    assert EXECUTION not in cloud.executions()  # AWS refused every attempt: nothing started
    run = cloud.store().run(FIRING)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.error is not None and "ThrottlingException: Rate exceeded" in run.error
