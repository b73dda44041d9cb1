"""A ticker on memory stores with a fake dispatcher and a fixed clock: the unit-test rig."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mini_scheduler.alerts import Alerts
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.memory import MemoryEnvironmentStore
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import CronFile, Target, load
from mini_scheduler.jobs.model import TARGET_KINDS
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.tick import Ticker
from mini_scheduler.wake import Wake


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


class FakeDispatcher:
    """Records every dispatch; ``failing`` names targets that refuse."""

    def __init__(self, clock: FixedClock | None = None) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], datetime | None]] = []
        self.failing: set[str] = set()
        self._clock = clock
        self._lock = threading.Lock()

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        if target.name in self.failing:
            raise DispatchError(f"Lambda Invoke {target.name} failed - TooManyRequestsException")
        with self._lock:
            self.calls.append(
                (target.name, firing_id, dict(payload), self._clock.now() if self._clock else None)
            )
        return f"fake:{firing_id}"

    @property
    def firing_ids(self) -> list[str]:
        return [c[1] for c in self.calls]

    def counts(self) -> Counter[str]:
        return Counter(self.firing_ids)


@dataclass
class Rig:
    ticker: Ticker
    clock: FixedClock
    claims: ClaimStore
    store: MemoryEnvironmentStore
    dispatcher: FakeDispatcher
    metrics: RecordingMetrics
    settings: Settings
    cron_text: list[str] = field(default_factory=list)
    pending: list[tuple[datetime, Callable[[], None]]] = field(default_factory=list)

    def tick(self, minute: str, **kwargs: Any) -> dict[str, Any]:
        moment = at(minute)
        if self.clock.now() < moment:
            self.clock.set(moment)
        return self.ticker.tick(moment, **kwargs).to_json()

    def meanwhile(self, moment: str, action: Callable[[], None]) -> None:
        """Run ``action`` at ``moment``, once a wait (a tick's, a catch-up's) passes it: what a
        recorder or a catch-up on another machine does while the tick waits. Actions run in
        the order of their moments, each on the clock set to its own."""
        if not self.pending:
            self.clock.sleep = self._sleeping(self.clock.sleep)  # type: ignore[method-assign]
        self.pending.append((at(moment), action))
        self.pending.sort(key=lambda pending: pending[0])

    def _sleeping(self, sleep: Callable[[float], None]) -> Callable[[float], None]:
        def sleeping(seconds: float) -> None:
            end = self.clock.now() + timedelta(seconds=seconds)
            while self.pending and self.pending[0][0] <= end:
                when, action = self.pending.pop(0)
                self.clock.set(max(when, self.clock.now()))
                action()
            sleep(max(0.0, (end - self.clock.now()).total_seconds()))

        return sleeping


def rig(
    cron_yaml: str,
    *,
    start: str = "2026-11-30T14:00:00Z",
    environment: str = "prod",
    active: str | None = None,
    claims: ClaimStore | None = None,
    store: MemoryEnvironmentStore | None = None,
    dispatcher: FakeDispatcher | None = None,
    region: str = "us-east-1",
    alerts: Alerts | None = None,
    wake: Wake | None = None,
    **settings: Any,
) -> Rig:
    clock = FixedClock(at(start))
    claims = claims if claims is not None else MemoryClaimStore()
    store = store if store is not None else MemoryEnvironmentStore(active)
    dispatcher = dispatcher if dispatcher is not None else FakeDispatcher(clock)
    config = Settings(state_table="state", environment_name=environment, region=region, **settings)
    metrics = RecordingMetrics()
    texts = [cron_yaml]
    parsed: dict[str, CronFile] = {}

    def cron() -> CronFile:  # parsed once per text, as CronFileSource caches by version
        text = texts[0]
        if text not in parsed:
            parsed[text] = load(text, source="test.yaml")
        return parsed[text]

    ticker = Ticker(
        settings=config,
        cron=cron,
        claims=claims,
        environment=ActiveEnvironment(store, environment),
        dispatchers=Dispatchers(dict.fromkeys(TARGET_KINDS, dispatcher)),
        clock=clock,
        metrics=metrics,
        alerts=alerts,
        wake=wake,
    )
    return Rig(ticker, clock, claims, store, dispatcher, metrics, config, texts)
