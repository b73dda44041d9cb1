"""The tick and ``jitter``/``window`` (issue 30, item 3): a spread firing is run by the tick of
the minute it is planned in, at its planned instant, once; a late tick misses it by that
instant; a firing not claimed holds the watermark there; the envelope says both instants. The
claim path on every claim store the ticker meets (memory, DynamoDB Local, mongomock)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.errors import EventError, StoreError
from mini_scheduler.handlers.ticker import route
from mini_scheduler.jobs import Job, load
from mini_scheduler.jobs.spread import planned
from mini_scheduler.model import RunStatus
from mini_scheduler.tick.dryrun import dry_run
from tests.contract.claims.conftest import open_claim_store
from tests.unit.tick.harness import at, rig

BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]

SPREAD = """
jobs:
  - name: "hourly"
    cron: "0 0 * * * ?"
    service: "hourly-fn"
    window: 30
  - name: "late-second"
    cron: "50 * * * * ?"
    service: "late-fn"
    jitter: 45
  - name: "plain"
    cron: "0 * * * * ?"
    service: "plain-fn"
"""
LATE_ONLY = """
jobs:
  - name: "late-second"
    cron: "50 * * * * ?"
    service: "late-fn"
    jitter: 45
"""
T0 = at("2026-11-30T14:00:00Z")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    with open_claim_store(request.param, request) as claims:
        yield claims


def jobs(text: str = SPREAD) -> dict[str, Job]:
    return {job.name: job for job in load(text).jobs}


def minute(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:00Z")


def expected(text: str, begin: datetime, end: datetime) -> dict[str, datetime]:
    """Each firing planned in ``[begin, end)``: its id -> its planned instant."""
    found = {}
    for job in jobs(text).values():
        back = timedelta(seconds=job.spread_seconds)
        for nominal in job.firings(begin - back, end):
            start = planned(job, nominal)
            if begin <= start < end:
                found[f"{job.name}@{nominal.strftime('%Y-%m-%dT%H:%M:%SZ')}"] = start
    return found


def test_each_firing_runs_once_at_its_planned_instant_in_that_minute_s_tick(
    store: ClaimStore,
) -> None:
    r = rig(SPREAD, start="2026-11-30T13:59:00Z", claims=store)
    r.tick("2026-11-30T13:59:00Z")  # the region's first tick
    first = len(r.dispatcher.calls)
    by_tick: dict[str, str] = {}
    for i in range(40):
        tick = T0 + timedelta(minutes=i)
        before = len(r.dispatcher.calls)
        r.tick(minute(tick))
        for call in r.dispatcher.calls[before:]:
            by_tick[call[1]] = minute(tick)
    want = expected(SPREAD, T0, T0 + timedelta(minutes=40))
    calls = r.dispatcher.calls[first:]
    assert Counter(c[1] for c in calls) == Counter(set(want))  # each once, none missing
    crossed = 0
    for _target, firing_id, body, sent in calls:
        start = want[firing_id]
        assert sent == start  # at its planned instant, not its own
        assert by_tick[firing_id] == minute(start)  # by the tick of the minute it is planned in
        crossed += minute(start) != body["scheduledTime"][:17] + "00Z"
        if firing_id.startswith("plain@"):
            assert "plannedTime" not in body
        else:
            assert body["plannedTime"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")
            assert body["scheduledTime"] == firing_id.partition("@")[2]
            assert list(body)[:5] == ["job", "firingId", "attempt", "scheduledTime", "plannedTime"]
    assert crossed >= 5  # firings planned in a later minute than their own were among them
    hourly = r.claims.run("hourly@2026-11-30T14:00:00Z")
    assert hourly is not None and hourly.scheduled_time == "2026-11-30T14:00:00Z"


def test_a_tick_run_twice_or_by_two_tickers_runs_nothing_again(store: ClaimStore) -> None:
    r = rig(SPREAD, start="2026-11-30T13:59:00Z", claims=store)
    r.tick("2026-11-30T13:59:00Z")
    other = rig(SPREAD, start="2026-11-30T13:59:00Z", claims=store, dispatcher=r.dispatcher)
    for i in range(12):
        tick = minute(T0 + timedelta(minutes=i))
        r.tick(tick)
        other.tick(tick)  # a duplicate delivery, or a second ticker, late
    counts = r.dispatcher.counts()
    assert counts and set(counts.values()) == {1}


def test_a_late_tick_misses_firings_by_their_planned_instant() -> None:
    """After an outage of 14:00-14:19, ``fire_now`` runs the latest firing *planned* before
    14:20 and records the others SKIPPED; one of 14:19:50 planned at 14:20:xx is not missed:
    the tick of 14:20 runs it at its instant."""
    text = SPREAD.replace('service: "late-fn"', 'service: "late-fn"\n    misfire: fire_now')
    late = jobs(text)["late-second"]
    r = rig(text, start="2026-11-30T13:59:00Z")
    r.tick("2026-11-30T13:59:00Z")
    before = len(r.dispatcher.calls)
    r.clock.set(at("2026-11-30T14:20:00Z"))
    r.tick("2026-11-30T14:20:00Z")
    missed = [
        n
        for n in late.firings(T0 - timedelta(minutes=1), at("2026-11-30T14:20:00Z"))
        if T0 <= planned(late, n) < at("2026-11-30T14:20:00Z")
    ]
    ran = [c[1] for c in r.dispatcher.calls[before:] if c[0] == "late-fn"]
    latest = f"late-second@{missed[-1].strftime('%Y-%m-%dT%H:%M:%SZ')}"
    assert latest in ran
    for nominal in missed[:-1]:
        run = r.claims.run(f"late-second@{nominal.strftime('%Y-%m-%dT%H:%M:%SZ')}")
        assert run is not None and run.status is RunStatus.SKIPPED
    in_window = expected(text, at("2026-11-30T14:20:00Z"), at("2026-11-30T14:21:00Z"))
    assert {f for f in in_window if f.startswith("late-second@")} <= set(ran)
    assert Counter(ran)[latest] == 1 and set(Counter(ran).values()) == {1}


def test_a_firing_not_claimed_holds_the_watermark_at_its_planned_instant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = SPREAD.split('  - name: "late-second"')[0]  # hourly only
    hourly = jobs(text)["hourly"]
    start = planned(hourly, T0)
    r = rig(text, start="2026-11-30T13:59:00Z")
    r.tick("2026-11-30T13:59:00Z")
    for i in range(30):
        tick = T0 + timedelta(minutes=i)
        if tick.replace(second=0) == start.replace(second=0):
            break
        r.tick(minute(tick))
    real = r.claims.claim_many

    def throttled(*args: object, **kwargs: object) -> list[StoreError]:
        raise StoreError("DynamoDB BatchExecuteStatement (claims) failed - throttled")

    monkeypatch.setattr(r.claims, "claim_many", throttled)
    answer = r.tick(minute(start))
    assert answer["counts"]["held"] == 1
    assert r.claims.control("us-east-1/prod").watermark == start  # not 14:00, its own instant
    monkeypatch.setattr(r.claims, "claim_many", real)
    r.tick(minute(start + timedelta(minutes=1)))
    assert r.dispatcher.counts()["hourly@2026-11-30T14:00:00Z"] == 1


def test_a_tick_out_of_time_holds_what_is_planned_after_its_deadline() -> None:
    text = LATE_ONLY
    late = jobs(text)["late-second"]
    for i in range(60):  # the first minute with a firing planned after its first second
        low = T0 + timedelta(minutes=i)
        found = [
            (n, planned(late, n))
            for n in late.firings(low - timedelta(minutes=1), low + timedelta(minutes=1))
            if low < planned(late, n) < low + timedelta(minutes=1)
        ]
        if found:
            break
    ((nominal, start),) = found
    r = rig(text, start="2026-11-30T13:59:00Z")
    for j in range(-1, i):
        r.tick(minute(T0 + timedelta(minutes=j)))
    answer = r.tick(minute(start), deadline=start)
    assert answer["counts"]["held"] == 1
    assert r.claims.control("us-east-1/prod").watermark == start
    held = f"late-second@{nominal.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    assert held not in r.dispatcher.firing_ids
    r.tick(minute(start + timedelta(minutes=1)))  # fire_now: the next tick runs it
    assert r.dispatcher.counts()[held] == 1
    assert set(r.dispatcher.counts().values()) == {1}


def test_retries_keep_their_backoff_and_the_envelope_its_planned_time() -> None:
    text = SPREAD.replace("window: 30", "window: 30\n    retry: {retries: 1, backoff: 60}")
    hourly = jobs(text)["hourly"]
    start = planned(hourly, T0)
    r = rig(text, start="2026-11-30T13:59:00Z")
    r.dispatcher.failing.add("hourly-fn")
    for i in range(40):
        r.tick(minute(T0 + timedelta(minutes=i - 1)))
        if r.claims.run("hourly@2026-11-30T14:00:00Z") is not None:
            break
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert retry.due == start + timedelta(seconds=60)  # its own backoff, from the failure
    r.dispatcher.failing.clear()
    r.tick(minute(retry.due))
    (call,) = [c for c in r.dispatcher.calls if c[0] == "hourly-fn"]
    assert call[2]["attempt"] == 2 and call[3] == retry.due
    assert call[2]["plannedTime"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_manual_run_starts_at_once_and_a_rerun_says_its_firing_s_planned_time() -> None:
    hourly = jobs()["hourly"]
    r = rig(SPREAD, start="2026-11-30T14:40:00Z")
    route(r.ticker, {"job": "hourly", "operator": "jane.doe"})
    ((_, _, body, sent),) = r.dispatcher.calls
    assert sent == at("2026-11-30T14:40:00Z") and "plannedTime" not in body
    route(r.ticker, {"rerun": "hourly@2026-11-30T14:00:00Z", "operator": "jane.doe"})
    _, _, again, sent = r.dispatcher.calls[1]
    assert sent == at("2026-11-30T14:40:00Z")
    assert again["plannedTime"] == planned(hourly, T0).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_dry_run_predicts_the_planned_instant() -> None:
    hourly = jobs()["hourly"]
    start = planned(hourly, T0)
    r = rig(SPREAD, start="2026-11-30T13:59:00Z")
    r.tick(minute(start - timedelta(minutes=1)))
    report = dry_run(
        at(minute(start)),
        settings=r.settings,
        cron=r.ticker.cron_file,
        claims=r.claims,
        environment=r.store,
        now=at(minute(start)),
    )
    (action,) = [a for a in report.actions if a.job == "hourly"]
    assert (action.kind, action.scheduled, action.at) == ("dispatch", T0, start)
    assert not action.misfire
    assert action.reason is not None and "window 30 min" in action.reason
    assert r.claims.run("hourly@2026-11-30T14:00:00Z") is None  # nothing written


def test_a_runtime_schedule_takes_the_keys_and_runs_each_firing_once_at_its_planned_instant(
    store: ClaimStore,
) -> None:
    r = rig(SPREAD, start="2026-11-30T13:59:00Z", claims=store)
    r.tick("2026-11-30T13:59:00Z")
    entries = [
        {"name": "thrice", "cron": "*/20 * * * * ?", "service": "thrice-fn", "jitter": 45},
        {"name": "even", "cron": "0 */2 * * * ?", "service": "even-fn", "window": 3},
    ]
    created = r.clock.now()
    r.ticker.operator.create_schedules(entries, "jane.doe")
    with pytest.raises(EventError, match="jitter must be a whole number of seconds"):
        r.ticker.operator.create_schedules(
            {"name": "bad", "cron": "0 * * * * ?", "service": "fn", "jitter": 7200}, "jane.doe"
        )
    first = len(r.dispatcher.calls)
    for i in range(10):
        r.tick(minute(T0 + timedelta(minutes=i)))
    text = "jobs:\n" + "".join(
        f'  - {{name: "{e["name"]}", cron: "{e["cron"]}", service: "{e["service"]}", '
        + ("jitter: 45}\n" if "jitter" in e else "window: 3}\n")
        for e in entries
    )
    want = {
        firing_id: start
        for firing_id, start in expected(text, created, T0 + timedelta(minutes=10)).items()
        if at(firing_id.partition("@")[2]) > created  # a schedule's first firing: after then
    }
    calls = [c for c in r.dispatcher.calls[first:] if c[0] in ("thrice-fn", "even-fn")]
    assert Counter(c[1] for c in calls) == Counter(set(want))
    for _target, firing_id, body, sent in calls:
        assert sent == want[firing_id]
        assert body["plannedTime"] == want[firing_id].strftime("%Y-%m-%dT%H:%M:%SZ")
