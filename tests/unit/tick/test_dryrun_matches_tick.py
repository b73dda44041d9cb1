"""The dry run (``mini-scheduler tick``) says what the tick does, firing by firing.

Each case builds a random minute on a memory store by running the scheduler itself up to it:
earlier ticks (some of whose dispatches fail, so retries wait), completions that came and
others that did not (runs still open, some past their timeout), a ticker that died between
claim and dispatch, a peer region that recorded firings of the window, pauses, disabled jobs,
one-time and runtime schedules, a backfill, a gap of missed minutes (within or beyond
``misfire.grace``, under each misfire policy), a standby region, a minute already ticked, jobs
that start or end inside the minute, and minutes around the New York DST changes. The state is
then copied: the dry run runs on one copy, the real tick on the other, and both must agree on
every firing dispatched (and when), skipped (and why), recorded as a skipped range, timed out,
taken over or failed, on the watermark and on the counts; and the dry run's copy must be as it
was, with every write refused outright (:class:`_ReadOnly`).
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import BUFFER, DEFERRED_REASONS, ClaimStore
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import EventError
from mini_scheduler.model import Firing, RunStatus, iso_seconds
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.tick.dryrun import dry_run
from tests.contract.claims.conftest import new_table_name
from tests.unit.tick.harness import Rig, rig

MINUTES = 300  # the default run; the slow one runs five times as many
BASE = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
FALL_BACK = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)  # 02:00 EDT -> 01:00 EST in New York
SPRING_FORWARD = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # 02:00 EST -> 03:00 EDT

JOBS = [  # name, statement, zone
    ("beat", "0/15 * * * * ?", None),
    ("minutely", "0 * * * * ?", None),
    ("five", "0 0/5 * * * ?", None),
    ("twenty", "0/20 * * * * ?", None),
    ("ny", "0 0/30 1-3 * * ?", "America/New_York"),
    ("ny-beat", "30 * 1-3 * * ?", "America/New_York"),
]

WRITES = frozenset(
    {
        "claim",
        "claim_many",
        "watch",
        "take_over",
        "mark_dispatched",
        "mark_many",
        "fail",
        "record_skipped",
        "record_skipped_range",
        "close",
        "redrive",
        "time_out",
        "advance_watermark",
        "set_paused",
        "defer",
        "drop_deferred",
        "advance_schedule",
        "buffer",
    }
)


class _ReadOnly:
    """The store the dry run is given: its reads pass, any write fails the test."""

    def __init__(self, inner: MemoryClaimStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in WRITES:
            raise AssertionError(f"the dry run called {name} on the real store")
        return getattr(self._inner, name)


@dataclass
class Case:
    seed: int
    rig: Rig
    minute: datetime
    now: datetime


def _job_yaml(
    rnd: random.Random, name: str, statement: str, zone: str | None, minute: datetime
) -> str:
    overlap = rnd.choice(["allow", "skip", "skip", "buffer_one", "buffer_all"])
    fields = [
        f'name: "{name}"',
        f'cron: "{statement}"',
        f'service: "fn-{name}"',
        f'misfire: "{rnd.choice(["fire_now", "fire_all", "skip"])}"',
        f'overlap: "{overlap}"',
        f"timeout: {rnd.choice([30, 90, 900])}",
    ]
    if overlap != "allow" and rnd.random() < 0.3:  # capped: several runs, a shared pool
        fields.append(rnd.choice(["max_running: 2", 'pool: "shared"', 'pool: "single"']))
    if zone:
        fields.append(f'timezone: "{zone}"')
    if rnd.random() < 0.3:
        fields.append(f"retry: {{retries: 2, backoff: {rnd.choice([0, 10, 60])}}}")
    if rnd.random() < 0.08:
        fields.append("enabled: false")
    if rnd.random() < 0.15:
        edge = iso_seconds(minute + timedelta(seconds=rnd.choice([-60, 0, 20, 30, 45, 60])))
        fields.append(f'{rnd.choice(["start", "end"])}: "{edge}"')
    if rnd.random() < 0.2:  # started later than its instant, maybe in a later minute
        fields.append(rnd.choice(["jitter: 45", "jitter: 300", "window: 3"]))
    return "  - {" + ", ".join(fields) + "}"


def _cron_yaml(rnd: random.Random, minute: datetime) -> str:
    lines = [
        f"misfire.grace: {rnd.choice([120, 600, 3600])}",
        f"misfire.max: {rnd.choice([3, 100])}",
        "pools: {shared: 2, single: 1}",
    ]
    if rnd.random() < 0.1:
        lines.append("deferred.start: true")
    lines.append("jobs:")
    for name, statement, zone in rnd.sample(JOBS, k=rnd.randint(2, len(JOBS))):
        lines.append(_job_yaml(rnd, name, statement, zone, minute))
    return "\n".join(lines) + "\n"


def _minute(rnd: random.Random) -> datetime:
    kind = rnd.random()
    if kind < 0.6:
        return BASE + timedelta(minutes=rnd.randrange(0, 180))
    around = FALL_BACK if kind < 0.85 else SPRING_FORWARD
    return around + timedelta(minutes=rnd.choice([-31, -30, -2, -1, 0, 1, 29, 30, 31]))


def build(seed: int, claims: ClaimStore | None = None) -> Case:
    """A random minute, reached by running the scheduler up to it (on ``claims``, or a memory
    store)."""
    rnd = random.Random(seed)
    minute = _minute(rnd)
    gap = rnd.choice([0, 0, 1, 2, 3, 10, 30, 90])  # minutes missed before it
    earlier = rnd.choice([0, 1, 2, 3])  # ticks before the gap (0: the region's first tick)
    first = minute - timedelta(minutes=gap + earlier)
    start = iso_seconds(first - timedelta(minutes=5))
    r = rig(_cron_yaml(rnd, minute), start=start, claims=claims)
    cron = r.ticker.cron_file()
    jobs = [job for job in cron.jobs if job.enabled]
    recorder = Recorder(r.claims, r.clock)
    if jobs and rnd.random() < 0.3:
        r.dispatcher.failing.add(rnd.choice(jobs).target.name)
    if jobs and rnd.random() < 0.2:
        _try(
            lambda: r.ticker.operator.backfill(
                rnd.choice(jobs).name,
                iso_seconds(first - timedelta(minutes=rnd.choice([3, 20]))),
                iso_seconds(first),
                rnd.choice([1, 5, 100]),
                "jane.doe",
            )
        )
    for n in range(earlier):
        r.tick(iso_seconds(first + timedelta(minutes=n)))
        _complete_some(rnd, r, recorder)
    r.dispatcher.failing.clear()
    r.clock.set(max(r.clock.now(), minute - timedelta(seconds=rnd.choice([1, 20, 50]))))
    _schedules(rnd, r, minute)
    if jobs and rnd.random() < 0.25:
        _dead_ticker(rnd, r, rnd.choice(jobs).name, minute)
    if jobs and rnd.random() < 0.25:
        _peer(rnd, r, rnd.choice(jobs), minute, first)
    if jobs and rnd.random() < 0.2:
        r.ticker.operator.set_paused(rnd.choice(jobs).name, True, "jane.doe")
    if rnd.random() < 0.1:
        r.tick(iso_seconds(minute))  # a repeated tick: the minute was ticked already
    if rnd.random() < 0.12:
        r.store.set("DR", operator="jane.doe", now=r.clock.now())  # prod is on standby
    now = minute + timedelta(seconds=rnd.choice([0, 0, 2, 7, 30, 59, 75]))
    r.clock.set(max(r.clock.now(), now))
    return Case(seed, r, minute, r.clock.now())


def _try(action: Any) -> None:
    with contextlib.suppress(EventError):  # a window with no firing, an instant just past
        action()


def _complete_some(rnd: random.Random, r: Rig, recorder: Recorder) -> None:
    """Some of the dispatched runs end (some failing: their retries wait); others stay open."""
    r.clock.advance(rnd.choice([5, 20, 40]))
    for run in _runs(r):
        if run.status is RunStatus.DISPATCHED and rnd.random() < 0.5:
            status = RunStatus.FAILED if rnd.random() < 0.4 else RunStatus.SUCCEEDED
            recorder.record(Completion(run.firing_id, status, r.clock.now(), None, "lambda"))


def _schedules(rnd: random.Random, r: Rig, minute: datetime) -> None:
    if rnd.random() < 0.2:
        when = minute + timedelta(seconds=rnd.choice([0, 10, 45, 70]))
        entry = {"name": "once", "at": iso_seconds(when), "service": "fn-once"}
        _try(lambda: r.ticker.operator.create_schedules(entry, "jane.doe"))
    if rnd.random() < 0.2:
        r.ticker.operator.create_schedules(
            {"name": "every-20s", "cron": "0/20 * * * * ?", "service": "fn-rt"}, "jane.doe"
        )


def _dead_ticker(rnd: random.Random, r: Rig, job: str, minute: datetime) -> None:
    """A ticker that claimed a firing and died before dispatching it."""
    scheduled = minute - timedelta(minutes=rnd.choice([1, 3, 30, 120]))
    firing = Firing(job, scheduled)
    claimed = minute - timedelta(seconds=rnd.choice([30, 200]))
    lease = claimed + timedelta(seconds=r.settings.claim_lease_seconds)
    r.claims.watch([firing.id], lease)
    r.claims.claim(firing, now=claimed, lease_until=lease, origin="us-west-2/prod")


def _peer(rnd: random.Random, r: Rig, job: Any, minute: datetime, first: datetime) -> None:
    """Another ticker recorded some of the job's firings, in the window or missed before it."""
    for at in list(job.firings(first, minute + timedelta(minutes=1)))[-rnd.randint(1, 4) :]:
        firing = Firing(job.name, at)
        if rnd.random() < 0.5:
            r.claims.record_skipped(firing, now=at, reason="misfire", origin="us-west-2/prod")
        else:
            lease = at + timedelta(minutes=2)
            r.claims.claim(firing, now=at, lease_until=lease, origin="us-west-2/prod")
            r.claims.close(firing.id, RunStatus.SUCCEEDED, now=at)


def _runs(r: Rig) -> list[RunRecord]:
    return list(snapshot(r.claims)["runs"].values())


# -- the state, copied and compared --------------------------------------------------------------


NAMES = [name for name, _, _ in JOBS] + ["once", "every-20s", "a", "b"]  # every job a case has
SCOPE = "us-east-1/prod"
CAPS = ["pool:shared", "pool:single", *(f"job:{name}" for name in NAMES)]


def snapshot(store: ClaimStore) -> dict[str, Any]:
    """Every record of ``store`` a case can have, read through the protocol (any backend)."""
    if isinstance(store, MemoryClaimStore):  # a job missing from NAMES would go unseen
        assert {job for job, _ in store._runs} <= set(NAMES)
    control = store.control(SCOPE)
    return {
        "runs": {run.firing_id: run for job in NAMES for run in store.history(job, limit=1000)},
        "jobs": {job: store.job_state(job) for job in NAMES},
        "watermarks": {**control.watermarks, SCOPE: control.watermark},
        "paused": dict(control.paused),
        "deferred": {reason: list(store.pending_deferred(reason)) for reason in DEFERRED_REASONS},
        "caps": {key: dict(store.holders(key)) for key in CAPS},
    }


def copy_of(store: MemoryClaimStore) -> MemoryClaimStore:
    copy = MemoryClaimStore()
    copy._runs, copy._jobs = dict(store._runs), dict(store._jobs)
    copy._watermarks, copy._paused = dict(store._watermarks), dict(store._paused)
    copy._deferred = dict(store._deferred)
    copy._places = {key: dict(holders) for key, holders in store._places.items()}
    return copy


def real_outcome(case: Case, store: ClaimStore) -> tuple[set[tuple[Any, ...]], Any]:
    """What the real tick did, firing by firing, read from the store and the dispatcher."""
    r = case.rig
    seeded = rig(r.cron_text[0], start=iso_seconds(case.now), claims=store, store=r.store)
    dispatcher = seeded.dispatcher
    seeded.ticker._rng = random.Random(case.seed)  # deferred.start: the dry run's draws
    before = snapshot(store)
    summary = seeded.ticker.tick(case.minute)
    after = snapshot(store)
    done: set[tuple[Any, ...]] = set()
    for _, firing_id, _, sent in dispatcher.calls:
        run = before["runs"].get(firing_id)
        if run is not None and run.status is RunStatus.CLAIMED:
            done.add(("take-over", firing_id))
        else:
            done.add(("dispatch", firing_id, sent))
    for key, run in after["runs"].items():
        was = before["runs"].get(key)
        if run.status is RunStatus.SKIPPED and was is None:
            if run.skipped_count is not None:
                done.add(
                    (
                        "range",
                        run.job,
                        run.scheduled_time,
                        run.skipped_until,
                        run.skipped_count,
                        run.reason,
                    )
                )
            else:
                done.add(("skip", run.firing_id, run.reason))
        elif (
            was is not None
            and was.status is RunStatus.DISPATCHED
            and run.status is RunStatus.TIMED_OUT
        ):
            done.add(("time-out", run.firing_id))
        elif was is not None and was.status is RunStatus.CLAIMED and run.status is RunStatus.FAILED:
            done.add(("fail", run.firing_id))
    waited = {d.key for d in before["deferred"][BUFFER]}
    done.update(("wait", d.firing.id) for d in after["deferred"][BUFFER] if d.key not in waited)
    scope = seeded.settings.origin
    moved = after["watermarks"].get(scope)
    watermark = moved if moved != before["watermarks"].get(scope) else None
    return done, (watermark, summary.counts)


def dry_outcome(case: Case, store: ClaimStore) -> tuple[set[tuple[Any, ...]], Any]:
    r = case.rig
    before = snapshot(store)
    seeded = rig(r.cron_text[0], start=iso_seconds(case.now), claims=store, store=r.store)
    plan = dry_run(
        case.minute,
        settings=seeded.settings,
        cron=seeded.ticker.cron_file,
        claims=_ReadOnly(store),  # type: ignore[arg-type]
        environment=r.store,
        now=case.now,
        rng=random.Random(case.seed),
    )
    assert snapshot(store) == before, "the dry run changed the store"
    done: set[tuple[Any, ...]] = set()
    for a in plan.actions:
        if a.kind == "dispatch":
            done.add(("dispatch", a.firing_id, a.at))
        elif a.kind == "skip":
            done.add(("skip", a.firing_id, str(a.reason)))
        elif a.kind == "skip-range":
            assert a.until is not None
            until = iso_seconds(a.until)
            done.add(("range", a.job, iso_seconds(a.scheduled), until, a.count, str(a.reason)))
        elif a.kind in ("time-out", "take-over", "fail"):
            done.add((a.kind, a.firing_id))
        elif a.kind == "wait" and not str(a.reason).startswith("still"):
            done.add(("wait", a.firing_id))
    return done, (plan.watermark_after, plan.summary.counts)


def disagreement(seed: int) -> str | None:
    return disagreement_of(build(seed))


def disagreement_of(case: Case) -> str | None:
    """None when the dry run and the tick agree on ``case``; else how they differ. The dry run
    runs first, and must leave the store as it was; the tick then runs on a copy of a memory
    store, or on the store itself."""
    seed = case.seed
    twin = case
    if isinstance(case.rig.claims, MemoryClaimStore):
        twin = Case(seed, replace(case.rig, claims=copy_of(case.rig.claims)), case.minute, case.now)
    dry, (dry_mark, dry_counts) = dry_outcome(case, case.rig.claims)
    real, (real_mark, real_counts) = real_outcome(twin, twin.rig.claims)
    if (dry, dry_mark, dry_counts) == (real, real_mark, real_counts):
        return None
    lines = [f"seed {seed}, minute {iso_seconds(case.minute)}, now {iso_seconds(case.now)}"]
    lines += [f"  only the dry run: {d}" for d in sorted(dry - real, key=str)]
    lines += [f"  only the tick:    {d}" for d in sorted(real - dry, key=str)]
    if dry_mark != real_mark:
        lines.append(f"  watermark: dry run {dry_mark}, tick {real_mark}")
    if dry_counts != real_counts:
        lines.append(f"  counts: dry run {dry_counts}, tick {real_counts}")
    lines.append(case.rig.cron_text[0])
    return "\n".join(lines)


def _seeds(count: int, start: int = 0) -> list[int]:
    return list(range(start, start + count))


@pytest.mark.parametrize("seed", _seeds(MINUTES))
def test_the_dry_run_is_the_tick(seed: int) -> None:
    found = disagreement(seed)
    assert found is None, found


@pytest.mark.dynamodb_local
@pytest.mark.parametrize("seed", _seeds(20))
def test_the_dry_run_is_the_tick_on_dynamodb_local(
    seed: int, request: pytest.FixtureRequest
) -> None:
    """The dry run reads DynamoDB as the tick writes it (its sweep through the watched runs, its
    batched claims' conditions): the dry run on the table first, then the tick. The runs live
    ten years: DynamoDB Local's TTL would delete the cases' 2026 runs under the test's feet."""
    client = request.getfixturevalue("dynamodb_local")
    table = new_table_name()
    create_state_table(client, table)
    store = DynamoDBClaimStore(table, client, sleep=lambda _: None, run_ttl_days=3650)
    found = disagreement_of(build(seed, store))
    assert found is None, found


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds(MINUTES * 5, start=MINUTES))
def test_the_dry_run_is_the_tick_on_many_more_minutes(seed: int) -> None:
    found = disagreement(seed)
    assert found is None, found


# -- the three kinds of disagreement issue 26 found, each pinned ---------------------------------

OVERLAP = """
misfire.grace: 120
jobs:
  - {name: "a", cron: "0 * * * * ?", service: "fn-a", overlap: "skip", timeout: 30,
     misfire: "skip", retry: {retries: 1, backoff: 0}}
"""


def _dry(case: Case) -> dict[str, Any]:
    assert isinstance(case.rig.claims, MemoryClaimStore)
    before = snapshot(case.rig.claims)
    plan = dry_run(
        case.minute,
        settings=case.rig.settings,
        cron=case.rig.ticker.cron_file,
        claims=_ReadOnly(case.rig.claims),  # type: ignore[arg-type]
        environment=case.rig.store,
        now=case.now,
    )
    assert snapshot(case.rig.claims) == before
    return {(a.kind, a.firing_id or iso_seconds(a.scheduled)): a.to_json() for a in plan.actions}


def test_a_run_the_tick_times_out_frees_its_job_s_slot_for_the_minute() -> None:
    r = rig(OVERLAP)
    r.tick("2026-11-30T14:00:00Z")  # a@14:00 dispatched; no completion comes
    case = Case(0, r, datetime(2026, 11, 30, 14, 1, tzinfo=UTC), r.clock.now())
    r.clock.set(case.minute)
    case.now = case.minute
    actions = _dry(case)
    assert ("time-out", "a@2026-11-30T14:00:00Z") in actions
    assert ("dispatch", "a@2026-11-30T14:01:00Z") in actions
    assert disagreement_of(case) is None


def test_a_skipped_range_starts_after_a_firing_that_has_a_record() -> None:
    r = rig(OVERLAP.replace('overlap: "skip"', 'overlap: "allow"'))
    r.claims.advance_watermark("us-east-1/prod", datetime(2026, 11, 30, 13, 50, tzinfo=UTC))
    peer = Firing("a", datetime(2026, 11, 30, 13, 50, tzinfo=UTC))
    r.claims.record_skipped(peer, now=peer.scheduled, reason="overlap", origin="us-west-2/prod")
    case = Case(0, r, datetime(2026, 11, 30, 14, 0, tzinfo=UTC), r.clock.now())
    actions = _dry(case)
    ranges = [a for (kind, _), a in actions.items() if kind == "skip-range"]
    assert ranges == [
        {
            "job": "a",
            "action": "skip-range",
            "scheduledTime": "2026-11-30T13:51:00Z",
            "service": "fn-a",
            "reason": "misfire_grace",
            "until": "2026-11-30T13:57:00Z",
            "count": 7,
            "misfire": True,
        }
    ]
    assert disagreement_of(case) is None


def test_a_late_retry_s_skip_is_its_attempt_s() -> None:
    r = rig(OVERLAP)
    r.tick("2026-11-30T14:00:00Z")
    r.clock.set(datetime(2026, 11, 30, 14, 0, 20, tzinfo=UTC))
    Recorder(r.claims, r.clock).record(
        Completion("a@2026-11-30T14:00:00Z", RunStatus.FAILED, r.clock.now(), "boom", "lambda")
    )
    r.clock.set(datetime(2026, 11, 30, 14, 10, 5, tzinfo=UTC))  # the retry is 10 minutes late
    case = Case(0, r, datetime(2026, 11, 30, 14, 10, tzinfo=UTC), r.clock.now())
    actions = _dry(case)
    assert ("skip", "a@2026-11-30T14:00:00Z#2") in actions
    assert ("skip", "a@2026-11-30T14:00:00Z") not in actions
    assert disagreement_of(case) is None


def test_a_tick_that_fans_out_is_shown_with_its_shards_ticks() -> None:
    r = rig(OVERLAP.replace('"a"', '"b"'), fanout_threshold=0, fanout_shards=3)
    r.claims.advance_watermark("us-east-1/prod", datetime(2026, 11, 30, 14, 0, tzinfo=UTC))
    plan = dry_run(
        datetime(2026, 11, 30, 14, 0, tzinfo=UTC),
        settings=r.settings,
        cron=r.ticker.cron_file,
        claims=_ReadOnly(r.claims),  # type: ignore[arg-type]
        environment=r.store,
        now=datetime(2026, 11, 30, 14, 0, tzinfo=UTC),
    )
    assert plan.summary.note == "1 firings due: fanned out to 3 shards"
    assert [(a.kind, a.firing_id) for a in plan.actions] == [("dispatch", "b@2026-11-30T14:00:00Z")]
    assert plan.summary.counts["dispatched"] == 1
