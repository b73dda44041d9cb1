"""The rig of the fault tests: the scheduler built as in Lambda (``wiring.build_ticker``) on a
boto3 Session whose requests go to AWS's DynamoDB Local (the state table) and moto (SSM,
Lambda, Step Functions, S3), with faults injected at the HTTP level (``injection.Faults``).

No test here really sleeps: botocore's back-off between attempts (``time.sleep`` in
``botocore.endpoint``) and the adaptive mode's token bucket (``botocore.retries.bucket``) are
recorded instead, on a virtual clock. The jitter of the back-off is pinned to its upper bound, so
each recorded delay is the exponential back-off's ceiling for its attempt, exactly.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.config import Config
from botocore.retries import bucket, standard
from moto import mock_aws

from mini_scheduler.aws import Clients
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.tick import Ticker
from mini_scheduler.wiring import build_ticker
from tests.fakeaws import create_targets, make_role, use_test_credentials
from tests.system.faults.injection import Faults

ACCOUNT = "123456789012"
REGION = "us-east-1"
FUNCTION = "fault-target"
FLOW = "fault-flow"
BUCKET = "mini-scheduler-config"
PARAMETER = "/mini-scheduler/active-environment"
T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


@dataclass
class RetrySleeps:
    """What botocore would have slept: ``backoff`` between attempts, ``bucket`` in the adaptive
    mode's client-side rate limiter (its token bucket)."""

    backoff: list[float] = field(default_factory=list)
    bucket: list[float] = field(default_factory=list)
    offset: float = 0.0  # how far the virtual clock of the token bucket has moved
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.backoff.clear()
            self.bucket.clear()


@pytest.fixture(autouse=True)
def retry_sleeps(monkeypatch: pytest.MonkeyPatch) -> RetrySleeps:
    sleeps = RetrySleeps()

    def backoff(seconds: float) -> None:
        with sleeps.lock:
            sleeps.backoff.append(seconds)

    real_time = time

    class _Time(SimpleNamespace):
        def __getattr__(self, name: str) -> Any:
            return getattr(real_time, name)

    monkeypatch.setattr(botocore.endpoint, "time", _Time(sleep=backoff))

    class _VirtualClock(bucket.Clock):
        def sleep(self, amount: float) -> None:
            with sleeps.lock:
                sleeps.bucket.append(amount)
                sleeps.offset += amount

        def current_time(self) -> float:
            return real_time.time() + sleeps.offset

    class _Condition(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            if timeout is not None and timeout > 0:
                with sleeps.lock:
                    sleeps.bucket.append(timeout)
                    sleeps.offset += timeout
            return False

    monkeypatch.setattr(bucket, "Clock", _VirtualClock)
    monkeypatch.setattr(
        bucket, "threading", SimpleNamespace(Lock=threading.Lock, Condition=_Condition)
    )

    real_init = standard.ExponentialBackoff.__init__

    def pinned(self: standard.ExponentialBackoff, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self._random = lambda: 1.0  # type: ignore[attr-defined]

    monkeypatch.setattr(standard.ExponentialBackoff, "__init__", pinned)
    return sleeps


@dataclass
class Cloud:
    """The AWS of one test. ``session`` carries the faults; the plain clients (for setting up
    and looking) do not."""

    table: str
    session: boto3.session.Session
    faults: Faults
    dynamodb: Any
    ssm: Any
    sfn: Any
    s3: Any
    flow_arn: str
    cron_path: Path

    def store(self) -> DynamoDBClaimStore:
        return DynamoDBClaimStore(self.table, self.dynamodb)

    def write_cron(self, text: str, *, s3: bool = False) -> str:
        """Put the cron file in place; answer its CRON_FILE location."""
        if s3:
            self.s3.put_object(Bucket=BUCKET, Key="cron.yaml", Body=text.encode())
            return f"s3://{BUCKET}/cron.yaml"
        self.cron_path.write_text(text)
        return f"file:{self.cron_path}"

    def ticker(
        self,
        cron_file: str,
        *,
        clock: FixedClock | None = None,
        metrics: RecordingMetrics | None = None,
        dispatch: Dispatchers | None = None,
        **settings: Any,
    ) -> Ticker:
        """A new container: its own clients (and so its own retry state) on the session."""
        config = Settings(
            state_table=self.table,
            cron_file=cron_file,
            region=REGION,
            dispatch_workers=8,
            **settings,
        )
        return build_ticker(
            config,
            clients=Clients(REGION, session=self.session, pool=8),
            clock=clock or FixedClock(T0),
            metrics=metrics if metrics is not None else RecordingMetrics(),
            account=ACCOUNT,
            dispatch=dispatch,
        )

    def executions(self) -> list[str]:
        answer = self.sfn.list_executions(stateMachineArn=self.flow_arn)
        return sorted(str(e["name"]) for e in answer["executions"])


@pytest.fixture
def cloud(
    monkeypatch: pytest.MonkeyPatch, dynamodb_local_endpoint: str, tmp_path: Path
) -> Iterator[Cloud]:
    use_test_credentials(monkeypatch, REGION, dynamodb=dynamodb_local_endpoint)
    table = f"faults-{uuid.uuid4().hex[:12]}"
    with mock_aws(config={"lambda": {"use_docker": False}}):
        plain = boto3.session.Session()
        dynamodb = plain.client("dynamodb", config=Config(retries={"total_max_attempts": 1}))
        create_state_table(dynamodb, table)
        sfn = plain.client("stepfunctions")
        role = make_role(plain.client("iam"), "fault-role")
        flow_arn = create_targets(plain.client("lambda"), sfn, role, [FUNCTION], FLOW)
        assert flow_arn is not None
        s3 = plain.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        ssm = plain.client("ssm")
        ssm.put_parameter(Name=PARAMETER, Value="prod", Type="String")
        session = boto3.session.Session()
        yield Cloud(
            table,
            session,
            Faults(session),
            dynamodb,
            ssm,
            sfn,
            s3,
            flow_arn,
            tmp_path / "cron.yaml",
        )


def backoff_ceilings(code: str, status: int, retries: int, service: str) -> list[float]:
    """botocore's exponential back-off at its ceiling for each retry: base 1 s for a throttling
    error (botocore's own list of codes, or a 429), else 50 ms (25 ms for DynamoDB); doubling,
    at most 20 s (botocore.retries.standard.ExponentialBackoff)."""
    throttled = standard.ThrottledRetryableChecker._THROTTLED_ERROR_CODES  # type: ignore[attr-defined]
    other = 0.025 if service == "dynamodb" else 0.05
    base = 1.0 if code in throttled or status == 429 else other
    return [min(base * 2**attempt, 20.0) for attempt in range(retries)]


def started(
    cloud: Cloud,
    cron: str,
    *,
    s3: bool = False,
    metrics: RecordingMetrics | None = None,
    dispatch: Dispatchers | None = None,
) -> Ticker:
    """A warm ticker whose region has had its first tick (the minute before T0); its clock is
    at T0 and the fault counts are cleared."""
    clock = FixedClock(T0 - timedelta(minutes=1))
    ticker = cloud.ticker(
        cloud.write_cron(cron, s3=s3), clock=clock, metrics=metrics, dispatch=dispatch
    )
    ticker.tick(T0 - timedelta(minutes=1))
    clock.set(T0)
    cloud.faults.reset_counts()
    return ticker


def show(capsys: pytest.CaptureFixture[str], text: str) -> None:
    """Print a figure of the run past pytest's capture."""
    with capsys.disabled():
        print(f"\n  {text}", end="")


def figures(operation: str, fault: str, cloud: Cloud, sleeps: RetrySleeps) -> str:
    attempts = cloud.faults.attempts[operation]
    injected = cloud.faults.injected[operation]
    backoff = ", ".join(f"{delay:g}" for delay in sleeps.backoff)
    waits = f", token bucket {sum(sleeps.bucket):.1f} s" if sleeps.bucket else ""
    return (
        f"{operation} {fault}: {attempts} attempts ({injected} refused), "
        f"back-off [{backoff}] s{waits}"
    )


def every_minute(*names: str, service: str = FUNCTION, **keys: str) -> str:
    """A cron file of jobs firing at second 0 of every minute."""
    lines = ["jobs:"]
    for name in names:
        lines += [f'  - name: "{name}"', '    cron: "0 * * * * ?"', f'    service: "{service}"']
        lines += [f'    {key}: "{value}"' for key, value in keys.items()]
    return "\n".join(lines) + "\n"
