"""``make run``: the scheduler on this machine, with moto in-process as AWS.

Run by :mod:`mini_scheduler.local.main` (``mini-scheduler local``). No AWS account or
credentials are needed and nothing leaves the process: dummy credentials and a region are set in
this process's environment only (``~/.aws`` is neither read nor written), moto answers every
AWS call, and the state table, the sample state machines and the samples' idempotency table are
created in it at start.

* The ticker and the recorder are the deployed ones (:class:`~mini_scheduler.tick.Ticker`,
  :class:`~mini_scheduler.recorder.Recorder`), built by :mod:`mini_scheduler.wiring` on moto's
  DynamoDB and SSM.
* A final failure's ``Job Run Failed`` event, and a ``Job Paused`` one, is a line of the log
  (:class:`~mini_scheduler.local.alerts.LogAlerts`): there is no bus to publish them to.
* Lambda targets run in this process (:class:`~mini_scheduler.local.dispatch.LocalDispatcher`):
  ``mini-scheduler-sample-<x>`` is ``samplecode/functions/<x>/app.py``; other functions get a
  stand-in that logs the event. Their ends reach the recorder as Lambda destination records.
* Flows start in moto's Step Functions, which runs their states (a Lambda task there answers its
  input: moto runs no Lambda code); their ends reach the recorder as status-change events.
* With ``demo``, it starts with a one-time schedule, a retry, a final failure and a backfill
  (:mod:`mini_scheduler.local.demo`), so each shows in the log within two minutes.
* It ticks on the wall clock: the current minute at start (from the start instant on: nothing
  before it is a misfire), then every minute at the minute boundary.

Ctrl-C (SIGINT) or SIGTERM stops it within a second: the wait in progress ends, the handlers
already running finish, and the process exits 0. The loop takes its clock and its stop event
from the caller, so tests run minutes of it on a fixed clock.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import threading
import time
import zipfile
from collections import deque
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.errors import SchedulerError
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import CronFile
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.local.dispatch import (
    SAMPLE_PREFIX,
    LocalDispatcher,
    LocalFlowDispatcher,
)
from mini_scheduler.model import RunStatus, floor_minute, iso_seconds
from mini_scheduler.wake import Wake, waker

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.recorder import Recorder
    from mini_scheduler.tick import Ticker, TickSummary

log = logging.getLogger("mini_scheduler.local")

REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"  # moto's default account
STATE_TABLE: Final = "mini-scheduler-local"
IDEMPOTENCY_TABLE: Final = "mini-scheduler-local-idempotency"
MOTO_CREDENTIAL: Final = "testing"
"""What the local run gives boto3 as its key, secret and token: moto takes any, and nothing
the local run calls reaches AWS (its endpoints are unset, its profile and config files are not
read)."""
ROLE_NAME: Final = "mini-scheduler-local"
MARK_WAIT_SECONDS: Final = 5.0  # how long a completion waits for its firing to be marked
CATCH_UP_JOIN_SECONDS: Final = 5.0  # how long a stop waits for a catch-up to notice it
_PLACEHOLDER: Final = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def _samplecode() -> Path:
    """The repository's ``samplecode`` (an editable install), else ``./samplecode``."""
    here = Path(__file__).resolve().parents[3] / "samplecode"
    return here if here.is_dir() else Path.cwd() / "samplecode"


SAMPLECODE: Final = _samplecode()


def local_environment() -> dict[str, str | None]:
    """What the local run sets in its own environment (None: removed): dummy credentials and a
    region, no profile or config file, and no endpoint that would send a call past moto."""
    changes: dict[str, str | None] = {
        "AWS_ACCESS_KEY_ID": MOTO_CREDENTIAL,
        "AWS_SECRET_ACCESS_KEY": MOTO_CREDENTIAL,
        "AWS_SESSION_TOKEN": MOTO_CREDENTIAL,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_PROFILE": None,
        "AWS_DEFAULT_PROFILE": None,
        "AWS_ACCOUNT_ID": None,
        "AWS_LAMBDA_FUNCTION_NAME": None,
        "IDEMPOTENCY_TABLE": IDEMPOTENCY_TABLE,
        "POWERTOOLS_METRICS_NAMESPACE": "MiniSchedulerLocal",
    }
    for key in os.environ:
        if key.startswith("AWS_ENDPOINT_URL"):
            changes[key] = None
    return changes


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in changes}
    try:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def serialised_moto() -> Iterator[None]:
    """One AWS call at a time through moto: its DynamoDB copies a table while a transaction
    runs, so a write from another thread in the meantime breaks it (the ticker dispatches on
    worker threads, and the handlers' completions arrive on others)."""
    from moto.core.models import botocore_stubber

    lock = threading.RLock()
    original = botocore_stubber.process_request

    def process_request(request: Any) -> Any:
        with lock:
            return original(request)

    setattr(botocore_stubber, "process_request", process_request)  # noqa: B010
    try:
        yield
    finally:
        vars(botocore_stubber).pop("process_request", None)


class Stopped(Exception):
    """The local scheduler was asked to stop while it waited."""


class StoppableClock:
    """``clock`` whose waits end as soon as ``stop`` is set, raising :class:`Stopped`, so a tick
    waiting for a firing later in its minute stops at once. On the real clock a wait is a wait
    on the event; on any other clock (a FixedClock in tests) it is that clock's sleep."""

    def __init__(self, clock: Clock, stop: threading.Event) -> None:
        self.clock = clock
        self.stop = stop
        self._real = isinstance(clock, SystemClock)

    def now(self) -> datetime:
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        if self.stop.is_set():
            raise Stopped
        if self._real:
            if seconds > 0 and self.stop.wait(seconds):
                raise Stopped
            return
        self.clock.sleep(seconds)
        if self.stop.is_set():
            raise Stopped


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


class LocalScheduler:
    """The scheduler on moto, ticking ``cron_file`` on ``clock`` until ``stop`` is set.

    ``start`` brings up moto and the resources, ``run`` ticks until stopped, ``close`` lets the
    running handlers finish and takes moto down; it is also a context manager.
    """

    def __init__(
        self,
        cron_file: str | Path,
        *,
        clock: Clock | None = None,
        stop: threading.Event | None = None,
        samplecode: Path | None = None,
        console: logging.StreamHandler[Any] | None = None,
        flow_wait: float = 30.0,
        demo: bool = False,
    ) -> None:
        self.cron_path = Path(cron_file)
        self.clock: Clock = clock or SystemClock()
        self.stop = stop or threading.Event()
        self.samplecode = samplecode or SAMPLECODE
        self.console = console
        self.flow_wait = flow_wait
        self.demo = demo  # at start: the firings beyond cron.yaml's (mini_scheduler.local.demo)
        self._source = CronFileSource(f"file:{self.cron_path}", default_timezone="UTC")
        self.settings = Settings(
            state_table=STATE_TABLE,
            region=REGION,
            cron_file=f"file:{self.cron_path}",
            environment_name="prod",
            dispatch_workers=16,
            batch_writes=False,  # moto's PartiQL ignores conditions (claims/dynamodb_batch.py)
        )
        self.summaries: deque[TickSummary] = deque(maxlen=1000)  # the latest ticks' answers
        self._exit = contextlib.ExitStack()
        self._started = False
        self._ticker: Ticker | None = None
        self._recorder: Recorder | None = None
        self._lambda: LocalDispatcher | None = None
        self._flows: LocalFlowDispatcher | None = None
        self._clients: Clients | None = None
        self._catch_ups: threading.Thread | None = None  # the latest catch-up's thread
        self.cron: CronFile | None = None

    # -- start and stop --------------------------------------------------------------------

    def __enter__(self) -> LocalScheduler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def ticker(self) -> Ticker:
        if self._ticker is None:
            raise RuntimeError("start the local scheduler first")
        return self._ticker

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            raise RuntimeError("start the local scheduler first")
        return self._recorder

    @property
    def clients(self) -> Clients:
        if self._clients is None:
            raise RuntimeError("start the local scheduler first")
        return self._clients

    def read_cron_file(self) -> CronFile:
        """Read the cron file into :attr:`cron` (CronFileError when it cannot be read), with
        nothing started: :func:`main` prints its banner from it before :meth:`start` logs."""
        self.cron = self._source.load()
        return self.cron

    def start(self) -> None:
        """moto, the tables, the sample functions and flows, the ticker and the recorder."""
        if self._started:
            return
        from moto import mock_aws

        from mini_scheduler.aws import Clients
        from mini_scheduler.claims.dynamodb import create_state_table
        from mini_scheduler.local.alerts import LogAlerts
        from mini_scheduler.wiring import build_recorder, build_ticker

        cron_file = self.read_cron_file()  # a file that cannot be read stops us here
        try:
            self._exit.enter_context(_environment(local_environment()))
            self._exit.enter_context(
                mock_aws(
                    config={
                        "lambda": {"use_docker": False},
                        "stepfunctions": {"execute_state_machine": True},
                    }
                )
            )
            self._exit.enter_context(serialised_moto())
            clients = self._clients = Clients(REGION, pool=32)
            create_state_table(clients("dynamodb"), STATE_TABLE)
            self._idempotency_table(clients)
            role = clients("iam").create_role(
                RoleName=ROLE_NAME, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
            )["Role"]["Arn"]
            self._functions(clients, role)
            self._state_machines(clients, role, cron_file)
            alerts = LogAlerts()  # no bus here: each event is a line of the log
            wake = self._waker()
            self._recorder = build_recorder(
                self.settings, clients=clients, clock=self.clock, alerts=alerts, wake=wake
            )
            self._ticker = build_ticker(
                self.settings,
                alerts=alerts,
                clients=clients,
                clock=StoppableClock(self.clock, self.stop),
                dispatch=self._dispatchers(clients),
                cron=self._source.load,
                wake=wake,
            )
            # Nothing before the start is a misfire, and the current minute's firings from
            # this second on run at their second (not all at once, as a late tick would).
            self.ticker.claims.advance_watermark(
                self.settings.origin, self.clock.now().replace(microsecond=0)
            )
            if self.demo:
                from mini_scheduler.local import demo

                demo.start(self.ticker.operator, self.clock.now())
        except BaseException:
            self._exit.close()
            raise
        self._started = True

    def _dispatchers(self, clients: Clients) -> Dispatchers:
        """Lambda targets run here, flows in moto's Step Functions; their ends are recorded."""
        from mini_scheduler.dispatch.stepfunctions import ExecutionInputs, StepFunctionsDispatcher

        execution_input = ExecutionInputs(lambda: clients("stepfunctions"))

        def record(event: dict[str, Any]) -> dict[str, Any]:
            """A completion event, as the recorder function takes it."""
            return self.recorder.record(completion_from_event(event, execution_input))

        self._lambda = LocalDispatcher(
            self.samplecode / "functions",
            on_complete=record,
            clock=self.clock,
            region=REGION,
            account=ACCOUNT,
            before_complete=self._until_marked,
            console=self.console,
        )
        self._flows = LocalFlowDispatcher(
            StepFunctionsDispatcher(clients("stepfunctions"), region=REGION, account=ACCOUNT),
            clients("stepfunctions"),
            on_complete=record,
            clock=self.clock,
            region=REGION,
            account=ACCOUNT,
            before_complete=self._until_marked,
            wait=self.flow_wait,
        )
        self._exit.callback(self._flows.close)
        self._exit.callback(self._lambda.close)
        return Dispatchers({"lambda": self._lambda, "flow": self._flows})

    def close(self) -> None:
        """Let the running handlers finish, stop watching flows, take moto down."""
        self.stop.set()
        if self._catch_ups is not None:
            self._catch_ups.join(timeout=CATCH_UP_JOIN_SECONDS)
        self._exit.close()
        self._started = False

    def _waker(self) -> Wake | None:
        """On the real clock, the ticker is woken as in Lambda (:mod:`mini_scheduler.wake`):
        a catch-up runs on a thread of its own. On a test's clock none does (a thread would
        move that clock under the test): its ticks run what is due, a minute later."""
        if not isinstance(self.clock, SystemClock):
            return None
        return waker(self._catch_up_soon, self.clock, self.settings.tick_lead_seconds)

    def _catch_up_soon(self, event: dict[str, Any]) -> None:
        minute = floor_minute(datetime.fromisoformat(str(event["tick"]).replace("Z", "+00:00")))
        self._catch_ups = threading.Thread(
            target=self._catch_up, args=(minute,), name="catch-up", daemon=True
        )
        self._catch_ups.start()

    def _catch_up(self, minute: datetime) -> None:
        try:
            summary = self.ticker.catch_up(minute)
        except Stopped:
            return
        except SchedulerError as exc:
            log.error("Catch-up of minute %s failed: %s", iso_seconds(minute), exc)
            return
        dispatched = summary.counts.get("dispatched", 0)
        if dispatched:
            log.info(
                "Catch-up %s done - %d deferred firings dispatched",
                iso_seconds(summary.minute)[11:16],
                dispatched,
            )

    def _idempotency_table(self, clients: Clients) -> None:
        dynamodb = clients("dynamodb")
        dynamodb.create_table(
            TableName=IDEMPOTENCY_TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )

    def _functions(self, clients: Clients, role: str) -> None:
        """The sample functions exist in moto too (a flow's Lambda task invokes them there,
        where they answer their input); their code runs in this process."""
        folder = self.samplecode / "functions"
        names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        client = clients("lambda")
        for name in names:
            client.create_function(
                FunctionName=SAMPLE_PREFIX + name,
                Runtime="python3.13",
                Role=role,
                Handler="app.handler",
                Code={"ZipFile": _zip()},
            )

    def _state_machines(self, clients: Clients, role: str, cron_file: CronFile) -> None:
        """Every flow the cron file names: a sample's definition (``samplecode/flows/<x>.asl
        .json`` for ``mini-scheduler-sample-<x>``), else one Pass state."""
        client = clients("stepfunctions")
        names = {
            job.target.name.rsplit(":stateMachine:", 1)[-1].split(":", 1)[0]
            for job in cron_file.jobs
            if job.target.kind == "flow"
        }
        for name in sorted(names):
            definition = self._flow_definition(name)
            client.create_state_machine(name=name, definition=definition, roleArn=role)

    def _flow_definition(self, name: str) -> str:
        path = self.samplecode / "flows" / f"{name.removeprefix(SAMPLE_PREFIX)}.asl.json"
        if name.startswith(SAMPLE_PREFIX) and path.is_file():
            worker = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{SAMPLE_PREFIX}heartbeat"
            values = {
                "Partition": "aws",
                "Region": REGION,
                "AccountId": ACCOUNT,
                "WorkerFunctionArn": worker,
            }
            return _PLACEHOLDER.sub(lambda m: values.get(m[1], worker), path.read_text())
        log.info("Flow %s has no definition here: it runs one Pass state", name)
        return json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})

    def _until_marked(self, firing_id: str) -> None:
        """Wait (a little, on the real clock) until the ticker has marked the firing
        dispatched, so its end is recorded after its start."""
        claims = self.ticker.claims
        deadline = time.monotonic() + MARK_WAIT_SECONDS
        while time.monotonic() < deadline:
            run = claims.run(firing_id)
            if run is None or run.status is not RunStatus.CLAIMED:
                return
            time.sleep(0.01)

    # -- ticking ---------------------------------------------------------------------------

    def tick(self, minute: datetime) -> TickSummary:
        """One tick (raises :class:`Stopped` when a stop is asked for while it waits)."""
        summary = self.ticker.tick(minute)
        self.summaries.append(summary)
        counts = summary.counts
        skipped = sum(int(v) for v in counts.get("skipped", {}).values())
        log.info(
            "Tick %s done - %s, %d dispatched, %d skipped, %d errors",
            iso_seconds(summary.minute)[11:16],
            summary.mode,
            counts.get("dispatched", 0),
            skipped,
            counts.get("errors", 0),
        )
        return summary

    def run(self) -> None:
        """Tick the current minute, then every minute at its boundary, until stopped."""
        self.start()
        clock = StoppableClock(self.clock, self.stop)
        minute = floor_minute(self.clock.now())
        while not self.stop.is_set():
            try:
                self.tick(minute)
            except Stopped:
                break
            except SchedulerError as exc:
                log.error("Tick %s failed: %s", iso_seconds(minute), exc)
            # The next minute; after a pause (a laptop asleep), the current one: the ticker's
            # misfire policies deal with what was missed, as after an outage.
            minute = max(minute + timedelta(minutes=1), floor_minute(self.clock.now()))
            wait = (minute - self.clock.now()).total_seconds()
            try:
                if wait > 0:
                    clock.sleep(wait)
            except Stopped:
                break

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait (on the real clock) until no handler runs and no flow is watched; True when
        everything dispatched so far has reported its end or given up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = (self._lambda.pending() if self._lambda else 0) + (
                self._flows.pending() if self._flows else 0
            )
            if not busy:
                return True
            time.sleep(0.01)
        return False

    def history(self, job: str, limit: int = 100, before: str | None = None) -> list[RunRecord]:
        """A job's runs, newest first; ``before`` pages on (``ClaimStore.history``)."""
        return list(self.ticker.claims.history(job, limit, before))
