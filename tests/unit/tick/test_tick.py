"""The tick on memory stores: windows, seconds, standby, misfires, overlap, sweep, takeover."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimResult
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.model import Firing, RunStatus
from tests.unit.tick.harness import at, rig

EVERY_MINUTE = """
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "minutely-fn"
"""

EVERY_15S = """
jobs:
  - name: "quarter"
    cron: "*/15 * * * * ?"
    service: "quarter-fn"
"""


def test_a_tick_dispatches_the_firings_of_its_minute_and_answers_a_summary() -> None:
    r = rig(EVERY_MINUTE)
    answer = r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.firing_ids == ["minutely@2026-11-30T14:00:00Z"]
    assert answer["minute"] == "2026-11-30T14:00:00Z"
    assert answer["environment"] == "prod"
    assert answer["activeEnvironment"] == "prod"
    assert answer["mode"] == "active"
    assert answer["counts"]["claimed"] == 1
    assert answer["counts"]["dispatched"] == 1
    run = r.claims.run("minutely@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED
    assert run.origin == "us-east-1/prod"


def test_the_payload_names_the_firing_and_drops_underscore_parameters() -> None:
    r = rig("""
jobs:
  - name: "report"
    cron: "0 * * * * ?"
    service: "report-fn"
    parameters: {region: "east", _secret: "x"}
""")
    r.tick("2026-11-30T14:00:00Z")
    payload = r.dispatcher.calls[0][2]
    assert payload == {
        "job": "report",
        "firingId": "report@2026-11-30T14:00:00Z",
        "attempt": 1,  # always: 2 and on are retries of the same firingId
        "scheduledTime": "2026-11-30T14:00:00Z",
        "origin": "us-east-1/prod",
        "manual": False,
        "parameters": {"region": "east"},
    }
    state = r.claims.job_state("report")
    assert state is not None and state.parameters == {"region": "east", "_origin": "us-east-1/prod"}
    assert state.schedule == "0 * * * * ? @UTC"


def test_firings_with_seconds_are_dispatched_at_their_second() -> None:
    r = rig(EVERY_15S)
    r.tick("2026-11-30T14:00:00Z")
    # The fixed clock jumps while a worker dispatches, so a dispatch is seen at or after its
    # second, never before it; and the tick slept until each second.
    for _, firing_id, _, when in r.dispatcher.calls:
        assert when is not None and when >= at(firing_id.partition("@")[2])
    assert sorted(r.dispatcher.firing_ids) == [
        f"quarter@2026-11-30T14:00:{s:02d}Z" for s in (0, 15, 30, 45)
    ]
    assert r.clock.slept == [15, 15, 15]


def test_a_tick_of_minute_aligned_jobs_does_not_wait() -> None:
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T14:00:00Z")
    assert sum(r.clock.slept) == 0


def test_a_late_tick_dispatches_past_due_firings_at_once() -> None:
    r = rig(EVERY_15S, start="2026-11-30T14:00:20Z")
    r.ticker.tick(at("2026-11-30T14:00:00Z"))
    assert len(r.dispatcher.calls) == 4
    assert sum(r.clock.slept) == pytest.approx(25)


def test_a_duplicate_tick_dispatches_nothing_again() -> None:
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T14:00:00Z")
    again = r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.counts()["minutely@2026-11-30T14:00:00Z"] == 1
    assert "already handled" in again["note"]


def test_a_retried_tick_before_the_watermark_moved_loses_the_claim() -> None:
    first = rig(EVERY_MINUTE)
    second = rig(EVERY_MINUTE, claims=first.claims, dispatcher=first.dispatcher)
    first.tick("2026-11-30T14:00:00Z")
    # the same minute, seen by a ticker that started before the first moved the watermark
    first.claims._watermarks.clear()
    answer = second.tick("2026-11-30T14:00:00Z")
    assert first.dispatcher.counts()["minutely@2026-11-30T14:00:00Z"] == 1
    assert answer["counts"]["skipped"] == {"lost_claim": 1}


def test_a_region_s_first_tick_treats_nothing_before_it_as_a_misfire() -> None:
    r = rig(EVERY_MINUTE)
    answer = r.tick("2026-11-30T14:00:00Z")
    assert answer["counts"]["misfired"] == 0


def test_standby_dispatches_nothing_logs_each_job_and_moves_the_watermark(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(EVERY_MINUTE, environment="DR")
    with caplog.at_level(logging.INFO):
        answer = r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.calls == []
    assert answer["mode"] == "standby"
    assert answer["counts"]["skipped"] == {"standby": 1}
    assert (
        "Standby: job minutely skipped - the active environment is prod, this instance is DR"
        in caplog.messages
    )
    assert r.claims.control("us-east-1/DR").watermark == at("2026-11-30T14:01:00Z")
    assert r.claims.history("minutely") == []  # nothing written per firing


def test_standby_summarises_more_than_twenty_jobs_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = "".join(
        f'\n  - name: "job{i}"\n    cron: "0 * * * * ?"\n    service: "fn{i}"' for i in range(25)
    )
    r = rig("jobs:" + jobs, environment="DR")
    with caplog.at_level(logging.INFO):
        r.tick("2026-11-30T14:00:00Z")
    info = [
        rec.getMessage()
        for rec in caplog.records
        if rec.levelno == logging.INFO and rec.getMessage().startswith("Standby")
    ]
    assert info == [
        "Standby: 25 jobs skipped - the active environment is prod, this instance is DR"
    ]


def test_the_active_environment_is_compared_without_regard_to_case() -> None:
    r = rig(EVERY_MINUTE, environment="DR", active="dr")
    assert r.tick("2026-11-30T14:00:00Z")["mode"] == "active"


def test_a_failover_between_two_ticks_moves_every_firing_to_the_new_region() -> None:
    prod = rig(EVERY_MINUTE, environment="prod")
    dr = rig(
        EVERY_MINUTE, environment="DR", region="us-west-2", claims=prod.claims, store=prod.store
    )
    for minute in ("2026-11-30T14:00:00Z", "2026-11-30T14:01:00Z"):
        prod.tick(minute)
        dr.tick(minute)
    prod.store.value = "DR"  # aws ssm put-parameter --value DR --overwrite
    for minute in ("2026-11-30T14:02:00Z", "2026-11-30T14:03:00Z"):
        prod.tick(minute)
        dr.tick(minute)
    assert prod.dispatcher.firing_ids == [
        "minutely@2026-11-30T14:00:00Z",
        "minutely@2026-11-30T14:01:00Z",
    ]
    assert dr.dispatcher.firing_ids == [
        "minutely@2026-11-30T14:02:00Z",
        "minutely@2026-11-30T14:03:00Z",
    ]
    assert dr.claims.run("minutely@2026-11-30T14:02:00Z").origin == "us-west-2/DR"  # type: ignore[union-attr]


def test_the_environment_is_read_at_every_tick() -> None:
    r = rig(EVERY_MINUTE)
    for minute in range(3):
        r.tick(f"2026-11-30T14:0{minute}:00Z")
    assert r.store.reads == 3


def test_an_unreadable_store_on_a_cold_container_fails_closed_and_keeps_the_watermark() -> None:
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T13:59:00Z")
    cold = rig(
        EVERY_MINUTE,
        claims=r.claims,
        dispatcher=r.dispatcher,
        store=r.store,
        start="2026-11-30T14:00:00Z",
    )
    r.store.failing = RuntimeError("ThrottlingException")
    answer = cold.tick("2026-11-30T14:00:00Z")
    assert answer["mode"] == "standby" and answer["counts"]["errors"] == 1
    assert "failing closed" in answer["note"]
    assert r.claims.control("us-east-1/prod").watermark == at("2026-11-30T14:00:00Z")
    r.store.failing = None
    recovered = cold.tick("2026-11-30T14:01:00Z")
    # the minute missed is recovered by the misfire policy (fire_now runs it)
    assert "minutely@2026-11-30T14:00:00Z" in r.dispatcher.firing_ids
    assert recovered["counts"]["misfired"] == 1


def test_an_unreadable_store_on_a_warm_container_keeps_the_last_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T14:00:00Z")
    r.store.failing = RuntimeError("InternalServerError")
    with caplog.at_level(logging.WARNING):
        answer = r.tick("2026-11-30T14:01:00Z")
    assert answer["mode"] == "active" and answer["counts"]["dispatched"] == 1
    assert any("keeping the last value read, prod" in m for m in caplog.messages)


def test_a_stored_value_that_is_not_a_name_is_an_error_not_a_name() -> None:
    r = rig(EVERY_MINUTE, active="prod; DROP")
    answer = r.tick("2026-11-30T14:00:00Z")
    assert answer["activeEnvironment"] is None and r.dispatcher.calls == []


def test_no_stored_value_means_prod() -> None:
    assert rig(EVERY_MINUTE).tick("2026-11-30T14:00:00Z")["activeEnvironment"] == "prod"


def _outage(policy: str, extra: str = "") -> tuple[dict[str, object], object]:
    r = rig(f"""
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "minutely-fn"
    misfire: "{policy}"
{extra}
""")
    r.tick("2026-11-30T14:00:00Z")
    answer = r.tick("2026-11-30T15:31:00Z")  # the ticker was down from 14:01 to 15:30
    return answer, r


def test_a_90_minute_outage_with_fire_now_runs_the_latest_and_skips_the_rest() -> None:
    answer, r = _outage("fire_now")
    assert answer["counts"]["misfired"] == 90  # type: ignore[index]
    ids = r.dispatcher.firing_ids  # type: ignore[attr-defined]
    assert ids == [
        "minutely@2026-11-30T14:00:00Z",
        "minutely@2026-11-30T15:30:00Z",
        "minutely@2026-11-30T15:31:00Z",
    ]
    # within the hour's grace: one record per skipped firing; older: one range
    assert answer["counts"]["skipped"] == {"misfire": 59, "misfire_grace": 30}  # type: ignore[index]
    run = r.claims.run("minutely@2026-11-30T14:31:00Z")  # type: ignore[attr-defined]
    assert run.status is RunStatus.SKIPPED and run.reason == "misfire"


def test_a_90_minute_outage_with_fire_all_runs_every_missed_firing_in_grace_oldest_first() -> None:
    answer, r = _outage("fire_all")
    ids = r.dispatcher.firing_ids  # type: ignore[attr-defined]
    assert len(ids) == 1 + 60 + 1
    misfires = [
        i
        for i in ids
        if i not in ("minutely@2026-11-30T14:00:00Z", "minutely@2026-11-30T15:31:00Z")
    ]
    assert misfires[0] == "minutely@2026-11-30T14:31:00Z"
    assert misfires == sorted(misfires)
    assert answer["counts"]["skipped"] == {"misfire_grace": 30}  # type: ignore[index]


def test_fire_all_is_bounded_by_misfire_max() -> None:
    answer, r = _outage("fire_all", "misfire.max: 10")
    assert answer["counts"]["dispatched"] == 11  # type: ignore[index]
    assert answer["counts"]["skipped"] == {"misfire_max": 50, "misfire_grace": 30}  # type: ignore[index]
    assert "minutely@2026-11-30T14:31:00Z" in r.dispatcher.firing_ids  # type: ignore[attr-defined]
    assert "minutely@2026-11-30T14:41:00Z" not in r.dispatcher.firing_ids  # type: ignore[attr-defined]


def test_skip_records_every_missed_firing_skipped() -> None:
    answer, r = _outage("skip")
    assert r.dispatcher.firing_ids[-1] == "minutely@2026-11-30T15:31:00Z"  # type: ignore[attr-defined]
    assert answer["counts"]["dispatched"] == 1  # type: ignore[index]
    assert answer["counts"]["skipped"] == {"misfire": 60, "misfire_grace": 30}  # type: ignore[index]


def test_misfires_older_than_the_grace_are_one_skipped_range() -> None:
    answer, r = _outage("fire_all", "misfire.grace: 1800")
    assert answer["counts"]["skipped"]["misfire_grace"] == 60  # type: ignore[index]
    history = r.claims.history("minutely", limit=200)  # type: ignore[attr-defined]
    ranges = [h for h in history if h.skipped_count]
    assert len(ranges) == 1 and ranges[0].skipped_count == 60
    assert ranges[0].scheduled_time == "2026-11-30T14:01:00Z"
    assert ranges[0].skipped_until == "2026-11-30T15:00:00Z"


def test_a_late_tick_cannot_run_firings_already_handled() -> None:
    _answer, r = _outage("skip")
    late = r.tick("2026-11-30T15:00:00Z")  # type: ignore[attr-defined]
    assert "already handled" in late["note"]
    assert r.claims.run("minutely@2026-11-30T15:00:00Z").status is RunStatus.SKIPPED  # type: ignore[attr-defined,union-attr]
    assert r.dispatcher.counts()["minutely@2026-11-30T15:00:00Z"] == 0  # type: ignore[attr-defined]


def test_a_firing_a_tick_failed_to_claim_is_handled_by_the_next_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mini_scheduler.errors import StoreError

    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T13:59:00Z")
    real = r.claims.claim

    def throttled(*args: object, **kwargs: object) -> ClaimResult:
        raise StoreError("DynamoDB PutItem (claim) failed - ProvisionedThroughputExceeded")

    monkeypatch.setattr(r.claims, "claim", throttled)
    failed = r.tick("2026-11-30T14:00:00Z")
    assert failed["counts"]["errors"] == 1
    assert r.claims.control("us-east-1/prod").watermark == at("2026-11-30T14:00:00Z")
    monkeypatch.setattr(r.claims, "claim", real)
    r.tick("2026-11-30T14:01:00Z")
    assert "minutely@2026-11-30T14:00:00Z" in r.dispatcher.firing_ids  # fire_now: the latest


def test_a_tick_out_of_time_leaves_its_last_firings_to_the_next_tick() -> None:
    """Past the handler's deadline nothing is claimed: the firings left are held, the watermark
    stops at the first, and the next tick runs them under their misfire policy (fire_now: the
    latest) instead of Lambda ending the tick in the middle of a claim."""
    r = rig(EVERY_15S)
    r.tick("2026-11-30T13:59:00Z")
    before = len(r.dispatcher.firing_ids)
    answer = r.tick("2026-11-30T14:00:00Z", deadline=at("2026-11-30T14:00:20Z"))
    # (sorted: the fake clock's sleep is instant, so the two seconds' batches run side by side)
    assert sorted(r.dispatcher.firing_ids[before:]) == [
        "quarter@2026-11-30T14:00:00Z",
        "quarter@2026-11-30T14:00:15Z",
    ]
    assert answer["counts"]["held"] == 2 and answer["counts"]["errors"] == 0
    assert r.metrics.totals["FiringsHeld"] == 2
    assert r.claims.control("us-east-1/prod").watermark == at("2026-11-30T14:00:30Z")
    assert r.clock.now() < at("2026-11-30T14:00:20Z"), "it did not wait for what it cannot run"
    assert r.claims.run("quarter@2026-11-30T14:00:30Z") is None
    r.tick("2026-11-30T14:01:00Z")
    ran = r.dispatcher.counts()
    assert ran["quarter@2026-11-30T14:00:45Z"] == 1 and ran["quarter@2026-11-30T14:00:30Z"] == 0
    assert all(n == 1 for n in ran.values())


def test_a_tick_without_a_deadline_holds_nothing() -> None:
    r = rig(EVERY_15S)
    assert r.tick("2026-11-30T14:00:00Z")["counts"]["held"] == 0


def test_overlap_skip_skips_a_firing_while_the_previous_run_is_open() -> None:
    r = rig("""
jobs:
  - name: "quarter"
    cron: "*/15 * * * * ?"
    service: "quarter-fn"
    overlap: "skip"
""")
    answer = r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.firing_ids == ["quarter@2026-11-30T14:00:00Z"]
    assert answer["counts"]["skipped"] == {"overlap": 3}
    r.claims.close("quarter@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, now=r.clock.now())
    r.tick("2026-11-30T14:01:00Z")
    assert "quarter@2026-11-30T14:01:00Z" in r.dispatcher.firing_ids


def test_overlap_allow_runs_every_firing() -> None:
    r = rig(EVERY_15S)
    assert r.tick("2026-11-30T14:00:00Z")["counts"]["dispatched"] == 4


def test_a_disabled_job_does_not_run() -> None:
    r = rig("""
jobs:
  - name: "off"
    cron: "0 * * * * ?"
    service: "off-fn"
    enabled: false
""")
    r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.calls == []


def test_deferred_start_delays_each_firing_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    r = rig(EVERY_MINUTE + "deferred.start: true\n")
    r.ticker._rng.seed(7)
    with caplog.at_level(logging.INFO):
        r.tick("2026-11-30T14:00:00Z")
    deferred = [m for m in caplog.messages if m.startswith("Defer execution of minutely for")]
    delay = r.dispatcher.calls[0][3] - at("2026-11-30T14:00:00Z")  # type: ignore[operator]
    if deferred:
        assert deferred == [f"Defer execution of minutely for {int(delay.total_seconds())} seconds"]
    assert 0 <= delay.total_seconds() <= 9


def test_a_paused_job_is_skipped_with_a_log_line_until_resumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(EVERY_MINUTE)
    r.ticker.set_paused("minutely", True, "jane.doe")
    with caplog.at_level(logging.INFO):
        answer = r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.calls == [] and answer["counts"]["skipped"] == {"paused": 1}
    assert "Job minutely skipped - paused by jane.doe (1 firings)" in caplog.messages
    r.ticker.set_paused("minutely", False, "jane.doe")
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids == ["minutely@2026-11-30T14:01:00Z"]


def test_a_ticker_that_died_after_claiming_is_taken_over_after_the_lease() -> None:
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T13:59:00Z")
    firing = Firing("minutely", at("2026-11-30T14:00:00Z"))
    now = at("2026-11-30T14:00:01Z")
    assert (
        r.claims.claim(
            firing, now=now, lease_until=now + timedelta(seconds=120), origin="us-east-1/prod"
        )
        is ClaimResult.WON
    )
    r.claims.advance_watermark("us-east-1/prod", at("2026-11-30T14:01:00Z"))  # it died after
    r.tick("2026-11-30T14:01:00Z")  # inside the lease: not taken over
    assert firing.id not in r.dispatcher.firing_ids
    answer = r.tick("2026-11-30T14:03:00Z")
    assert answer["counts"]["takenOver"] == 1
    assert r.dispatcher.counts()[firing.id] == 1
    r.tick("2026-11-30T14:06:00Z")
    assert r.dispatcher.counts()[firing.id] == 1
    assert r.claims.run(firing.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]


def test_the_sweep_times_out_a_run_dispatched_past_its_timeout() -> None:
    r = rig("""
jobs:
  - name: "slow"
    cron: "0 0 * * * ?"
    service: "slow-fn"
    timeout: 300
""")
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:04:00Z")
    assert r.claims.run("slow@2026-11-30T14:00:00Z").status is RunStatus.DISPATCHED  # type: ignore[union-attr]
    answer = r.tick("2026-11-30T14:06:00Z")
    assert answer["counts"]["timedOut"] == 1
    run = r.claims.run("slow@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.TIMED_OUT


CLAIM_WINDOW = 1.0  # seconds a sweep's time-out waits for a claim that must not start


class _SweepWatch(MemoryClaimStore):
    """Records whether a claim was made while the sweep was still running. The sweep's write
    (its time-out) first waits for a claim to start, up to :data:`CLAIM_WINDOW`, so that a tick
    whose claims run while it sweeps is caught every time rather than by chance: such a claim
    starts within milliseconds and ends the wait; a tick that sweeps first waits it out."""

    def __init__(self) -> None:
        super().__init__()
        self.sweeping = False
        self.claims_during_sweep: list[str] = []
        self._claim_started = threading.Event()

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        due = super().due_runs(now, limit, settle=settle)
        if due:  # the sweep has work: it ends when the time-out is written
            self.sweeping = True
            self._claim_started.clear()
        return due

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        try:
            self._claim_started.wait(CLAIM_WINDOW)
            return super().time_out(run, now=now)
        finally:
            self.sweeping = False

    def claim(self, firing: Firing, **kwargs: Any) -> ClaimResult:
        if self.sweeping:
            self.claims_during_sweep.append(firing.id)
        self._claim_started.set()
        return super().claim(firing, **kwargs)


def test_the_sweep_frees_a_hung_run_s_slot_before_the_minute_s_claims() -> None:
    claims = _SweepWatch()
    r = rig(
        """
jobs:
  - name: "hung"
    cron: "0 * * * * ?"
    service: "hung-fn"
    overlap: "skip"
    timeout: 300
""",
        claims=claims,
    )
    r.tick("2026-11-30T14:00:00Z")  # dispatched; no completion ever comes
    for minute in range(1, 5):
        answer = r.tick(f"2026-11-30T14:0{minute}:00Z")
        assert answer["counts"]["skipped"] == {"overlap": 1}
    answer = r.tick("2026-11-30T14:05:00Z")  # the hung run's timeout ends with this minute
    assert claims.claims_during_sweep == []
    assert answer["counts"]["timedOut"] == 1
    assert answer["counts"]["skipped"] == {}
    assert "hung@2026-11-30T14:05:00Z" in r.dispatcher.firing_ids
    run = r.claims.run("hung@2026-11-30T14:05:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED


def test_a_dispatch_the_target_refuses_is_recorded_failed_with_the_error() -> None:
    r = rig(EVERY_MINUTE)
    r.dispatcher.failing.add("minutely-fn")
    answer = r.tick("2026-11-30T14:00:00Z")
    assert answer["counts"]["errors"] == 1
    run = r.claims.run("minutely@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.FAILED
    assert "TooManyRequestsException" in (run.error or "")
    assert r.metrics.totals["DispatchErrors"] == 1


def test_tick_lead_serves_the_next_minute_and_waits_for_each_firing() -> None:
    r = rig(EVERY_15S, tick_lead_seconds=60, start="2026-11-30T14:00:02Z")
    answer = r.ticker.tick(at("2026-11-30T14:00:00Z")).to_json()
    assert answer["window"] == ["2026-11-30T14:01:00Z", "2026-11-30T14:02:00Z"]
    for _, firing_id, _, when in r.dispatcher.calls:
        assert when is not None and when >= at(firing_id.partition("@")[2])
    assert sorted(r.dispatcher.firing_ids) == [
        f"quarter@2026-11-30T14:01:{s:02d}Z" for s in (0, 15, 30, 45)
    ]


def test_a_manual_run_s_reserved_key_is_logged_on_one_short_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(EVERY_MINUTE)
    key = "_" + "x" * 500 + "\nforged line"
    with caplog.at_level(logging.WARNING, logger="mini_scheduler"):
        r.ticker.run_manual("minutely", "jane.doe", {key: 1})
    [line] = [rec.getMessage() for rec in caplog.records if "reserved" in rec.getMessage()]
    assert "\n" not in line and "forged" not in line and len(line) < 200


def test_each_tick_counts_the_cron_entries_skipped_at_load() -> None:
    """CronEntriesSkipped, once a tick and 0 too: the template's alarm reads its Maximum, so a
    job that never runs because its entry did not load is an alarm, not only a log line."""
    r = rig(EVERY_MINUTE)
    r.tick("2026-11-30T14:00:00Z")
    assert r.metrics.totals["CronEntriesSkipped"] == 0
    r.cron_text[0] = EVERY_MINUTE + '  - {name: "bad", cron: "0 0 25 * * ?", service: "x"}\n'
    r.tick("2026-11-30T14:01:00Z")
    r.tick("2026-11-30T14:02:00Z")
    assert r.metrics.totals["CronEntriesSkipped"] == 2  # one skipped entry, at each of two ticks
