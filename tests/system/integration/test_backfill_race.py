"""A backfill's claims over SKIPPED records, raced on AWS's own DynamoDB Local (moto's
conditional writes are not atomic): 8 claimers send the same batch of a past window's firings,
some recorded SKIPPED (alone, or as a range's first), some that ran, some with no record. Each
firing that ran stays as it was; every other one is won exactly once, its skip kept on the
winner's run; an ``overlap: skip`` job's firings run one at a time."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.claims.base import ClaimOutcome, ClaimRequest, ClaimResult
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.model import Firing, RunStatus
from tests.emulators.dynamodb_local import make_client

pytestmark = pytest.mark.dynamodb_local

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
RACERS = 8
ROUNDS = 4
FIRINGS = 40  # of the allow job: two PartiQL batches of 25
LEASE = timedelta(seconds=120)


@pytest.fixture
def store(dynamodb_local_endpoint: str) -> Iterator[DynamoDBClaimStore]:
    client = make_client(dynamodb_local_endpoint)
    table = f"mini-scheduler-{uuid.uuid4().hex[:12]}"
    create_state_table(client, table)
    yield DynamoDBClaimStore(table, client, sleep=lambda _: None)
    client.delete_table(TableName=table)


def _window(job: str, count: int) -> list[Firing]:
    return [Firing(job, T0 - timedelta(hours=2) + timedelta(minutes=i)) for i in range(count)]


def _race(store: DynamoDBClaimStore, requests: list[ClaimRequest]) -> list[list[ClaimOutcome]]:
    """Each racer claims the whole batch, all let go at once."""
    barrier = threading.Barrier(RACERS)

    def one(_: int) -> list[ClaimOutcome]:
        barrier.wait()
        return store.claim_many(requests, now=T0, lease_until=T0 + LEASE, origin=ORIGIN)

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        return list(pool.map(one, range(RACERS)))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_eight_backfills_racing_one_window_win_each_skipped_firing_once(
    store: DynamoDBClaimStore, round_: int
) -> None:
    plain, solo = _window(f"plain-{round_}", FIRINGS), _window(f"solo-{round_}", 5)
    ran = set(range(0, FIRINGS, 5))  # claimed before: they ran
    skipped = {i for i in range(FIRINGS) if i % 3 == 0} - ran
    first_of_range = 7  # a range of two firings (7 and 8), keyed by its first
    for i in ran:
        assert store.claim(plain[i], now=T0, lease_until=T0 + LEASE, origin=ORIGIN) is (
            ClaimResult.WON
        )
    for i in skipped:
        assert store.record_skipped(plain[i], now=T0, reason="misfire", origin=ORIGIN)
    store.record_skipped_range(
        plain[0].job,
        plain[first_of_range].scheduled,
        plain[first_of_range + 1].scheduled,
        2,
        now=T0,
        reason="misfire_grace",
        origin=ORIGIN,
    )
    for firing in solo:
        assert store.record_skipped(firing, now=T0, reason="overlap", origin=ORIGIN)
    requests = [
        *(ClaimRequest(replace(f, backfill=True), over_skipped=True) for f in plain),
        *(ClaimRequest(replace(f, backfill=True), True, True) for f in solo),
    ]

    answers = _race(store, requests)

    per_firing = [Counter(answer[i] for answer in answers) for i in range(len(requests))]
    for i, counted in enumerate(per_firing[:FIRINGS]):
        won = 0 if i in ran else 1
        assert counted == Counter({ClaimResult.WON: won, ClaimResult.LOST: RACERS - won}), i
        run = store.run(plain[i].id)
        assert run is not None and run.status is RunStatus.CLAIMED
        assert run.backfill is (i not in ran)
    for i in skipped:
        assert store.run(plain[i].id).replaced_skip == {"reason": "misfire"}  # type: ignore[union-attr]
    ranged = store.run(plain[first_of_range].id)
    assert ranged is not None and ranged.replaced_skip == {
        "reason": "misfire_grace",
        "until": plain[first_of_range + 1].scheduled_time,
        "count": 2,
    }
    # the overlap: skip job: its first firing is won once and holds the slot; the racers
    # find its later firings OVERLAP (their skips stay for a later backfill)
    assert per_firing[FIRINGS] == Counter({ClaimResult.WON: 1, ClaimResult.LOST: RACERS - 1})
    for counted in per_firing[FIRINGS + 1 :]:
        assert counted == Counter({ClaimResult.OVERLAP: RACERS})
    state = store.job_state(solo[0].job)
    assert state is not None and state.open_firing == solo[0].id
    statuses = [store.run(f.id).status for f in solo]  # type: ignore[union-attr]
    assert statuses == [RunStatus.CLAIMED] + [RunStatus.SKIPPED] * 4
