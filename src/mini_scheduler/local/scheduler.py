"""``make run``: the scheduler on this machine, with moto in-process as AWS.

Run by :mod:`mini_scheduler.local.main` (``mini-scheduler local``). No AWS account or
credentials are needed and nothing leaves the process: dummy credentials and a region are set in
this process's environment only (``~/.aws`` is neither read nor written), moto answers every
AWS call, and the state table, the sample state machines and the samples' idempotency table are
created in it at start (:mod:`mini_scheduler.local.moto_aws`).

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
import logging
import threading
import time
from collections import deque
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
from mini_scheduler.local.dispatch import LocalDispatcher, LocalFlowDispatcher
from mini_scheduler.local.moto_aws import (
    ACCOUNT,
    REGION,
    SAMPLECODE,
    STATE_TABLE,
    changed_environment,
    deploy,
    local_environment,
    serialised_moto,
)
from mini_scheduler.model import RunStatus, floor_minute, iso_seconds
from mini_scheduler.wake import Wake, waker

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.recorder import Recorder
    from mini_scheduler.tick import Ticker, TickSummary

log = logging.getLogger("mini_scheduler.local")

MARK_WAIT_SECONDS: Final = 5.0  # how long a completion waits for its firing to be marked
CATCH_UP_JOIN_SECONDS: Final = 5.0  # how long a stop waits for a catch-up to notice it


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

        cron_file = self.read_cron_file()  # a file that cannot be read stops us here
        try:
            self._exit.enter_context(changed_environment(local_environment()))
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
            deploy(clients, self.samplecode, cron_file)
            self._build(clients)
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

    def _build(self, clients: Clients) -> None:
        """The recorder and the ticker, as wiring builds them in Lambda, on moto's clients."""
        from mini_scheduler.local.alerts import LogAlerts
        from mini_scheduler.wiring import build_recorder, build_ticker

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
