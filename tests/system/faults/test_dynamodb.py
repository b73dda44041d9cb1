"""DynamoDB throttling and 5xx on the claims, on AWS's DynamoDB Local.

Claims go 25 to a BatchExecuteStatement. A request refused as a whole (throttled, a 5xx) is
retried by botocore with exponential back-off; a statement refused inside a 200 answer (DynamoDB
throttles statements one by one) is sent again alone by the store, with back-off of its own.
While the faults last no longer than the retries, each firing is claimed and dispatched once.
When they outlast them, the tick holds its watermark at the firing, and the next tick handles
it under the job's misfire policy: never silently lost, never dispatched twice.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pytest

from mini_scheduler import metrics as m
from mini_scheduler.clock import FixedClock
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import RunStatus, iso_seconds
from tests.system.faults.conftest import (
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
    DYNAMODB_INTERNAL,
    DYNAMODB_THROTTLING,
    PROVISIONED_THROUGHPUT,
    Fault,
    claim_statement_of,
    is_claim,
    is_claim_statement,
    sdk_attempts,
)

pytestmark = pytest.mark.dynamodb_local

CLAIM_FAULTS = [PROVISIONED_THROUGHPUT, DYNAMODB_THROTTLING, DYNAMODB_INTERNAL]
MINUTE = timedelta(minutes=1)
SCOPE = "us-east-1/prod"
BATCH = "dynamodb.BatchExecuteStatement"


def _code(fault: Fault) -> str:
    return fault.code


def _fid(job: str, at: datetime) -> str:
    return f"{job}@{iso_seconds(at)}"


@pytest.mark.parametrize("fault", CLAIM_FAULTS, ids=_code)
def test_a_claim_throttled_within_the_retries_is_retried_with_backoff_and_won(
    cloud: Cloud, retry_sleeps: RetrySleeps, fault: Fault, capsys: pytest.CaptureFixture[str]
) -> None:
    ticker = started(cloud, every_minute("report"))
    retries = sdk_attempts() - 1
    cloud.faults.inject(BATCH, fault, times=retries, match=is_claim)
    retry_sleeps.clear()
    cloud.faults.sent.clear()

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 1 and answer["counts"]["errors"] == 0
    assert cloud.faults.injected[BATCH] == retries
    claims = [sent for sent in cloud.faults.sent if any(map(is_claim_statement, sent))]
    assert len(claims) == retries + 1  # the SDK retried
    assert retry_sleeps.backoff == backoff_ceilings(
        fault.code, fault.status, retries, "dynamodb"
    )  # and backed off, doubling
    if fault.status < 500:  # throttling also slows the adaptive mode's client-side rate
        assert retry_sleeps.bucket
    run = cloud.store().run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED
    assert cloud.faults.attempts["lambda.Invoke"] == 1
    show(capsys, figures(BATCH, fault.code, cloud, retry_sleeps) + ": won")


@pytest.mark.parametrize("code", ["ThrottlingError", "ProvisionedThroughputExceeded"])
def test_a_statement_throttled_inside_a_batch_is_sent_again_alone_and_won(
    cloud: Cloud, code: str
) -> None:
    """DynamoDB answers 200 with the throttled statement's error in its place: the others are
    written; the store sends that one again, alone, with back-off, and the firing is won."""
    cron = every_minute("first") + every_minute("second").removeprefix("jobs:\n")
    ticker = started(cloud, cron)
    cloud.faults.sent.clear()
    cloud.faults.refuse_statements(code, claim_statement_of("second"), times=2)

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 2 and answer["counts"]["errors"] == 0, answer
    assert cloud.faults.statements[code] == 2
    claims = [sent for sent in cloud.faults.sent if any(map(is_claim_statement, sent))]
    assert [len(sent) for sent in claims] == [2, 1, 1]  # both, then the refused one alone
    assert all(claim_statement_of("second")(sent[0]) for sent in claims[1:])
    for job in ("first", "second"):
        run = cloud.store().run(_fid(job, T0))
        assert run is not None and run.status is RunStatus.DISPATCHED
    assert cloud.faults.attempts["lambda.Invoke"] == 2


def test_a_statement_throttled_past_its_attempts_holds_that_firing_only(cloud: Cloud) -> None:
    cron = every_minute("first") + every_minute("second").removeprefix("jobs:\n")
    ticker = started(cloud, cron)
    cloud.faults.refuse_statements("ThrottlingError", claim_statement_of("second"))

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 1 and answer["counts"]["errors"] == 1, answer
    assert cloud.store().run(_fid("second", T0)) is None
    assert cloud.store().control(SCOPE).watermark == T0  # held at the firing not claimed
    cloud.faults.clear()
    ticker.clock.set(T0 + MINUTE)  # type: ignore[attr-defined]
    ticker.tick(T0 + MINUTE)
    run = cloud.store().run(_fid("second", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED  # fire_now, by default


@pytest.mark.parametrize("fault", CLAIM_FAULTS, ids=_code)
def test_claims_failing_past_the_retries_are_handled_by_the_next_tick_by_misfire_policy(
    cloud: Cloud, fault: Fault
) -> None:
    cron = (
        every_minute("now", misfire="fire_now")
        + every_minute("all", misfire="fire_all").removeprefix("jobs:\n")
        + every_minute("skip", misfire="skip").removeprefix("jobs:\n")
        + every_minute("solo", overlap="skip").removeprefix("jobs:\n")  # exclusive: its slot
    )
    metrics = RecordingMetrics()
    ticker = started(cloud, cron, metrics=metrics)
    cloud.faults.inject(BATCH, fault, match=is_claim)
    cloud.faults.sent.clear()

    failed = ticker.tick(T0).to_json()

    attempts = sdk_attempts()
    # solo's run of the first tick is still open: its slot refuses it before any claim
    assert failed["counts"]["errors"] == 3 and failed["counts"]["dispatched"] == 0
    assert failed["counts"]["skipped"] == {"overlap": 1}
    assert metrics.totals[m.CLAIM_ERRORS] == 3
    claims = [sent for sent in cloud.faults.sent if any(map(is_claim_statement, sent))]
    assert len(claims) == attempts and all(len(sent) == 3 for sent in claims)  # one batch
    assert cloud.faults.attempts["lambda.Invoke"] == 0
    store = cloud.store()
    assert store.control(SCOPE).watermark == T0  # held at the firings not claimed
    assert all(store.run(_fid(job, T0)) is None for job in ("now", "all", "skip"))

    cloud.faults.clear()
    ticker.clock.set(T0 + MINUTE)  # type: ignore[attr-defined]
    ticker.tick(T0 + MINUTE)

    status = {
        (job, at): getattr(store.run(_fid(job, at)), "status", None)
        for job in ("now", "all", "skip", "solo")
        for at in (T0, T0 + MINUTE)
    }
    assert status[("now", T0)] is RunStatus.DISPATCHED  # fire_now: the latest missed firing
    assert status[("all", T0)] is RunStatus.DISPATCHED  # fire_all
    skipped = store.run(_fid("skip", T0))
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason == "misfire"
    for at in (T0, T0 + MINUTE):  # overlap: skip, and its run of the first tick is still open
        solo = store.run(_fid("solo", at))
        assert solo is not None and solo.status is RunStatus.SKIPPED and solo.reason == "overlap"
    dispatched = sum(1 for s in status.values() if s is RunStatus.DISPATCHED)
    assert None not in status.values()  # none lost
    assert cloud.faults.attempts["lambda.Invoke"] == dispatched  # none dispatched twice
    assert store.control(SCOPE).watermark == T0 + 2 * MINUTE


@pytest.mark.parametrize("exclusive", [False, True], ids=["allow", "skip"])
def test_a_claim_written_whose_answer_was_lost_is_still_won_once(
    cloud: Cloud, exclusive: bool
) -> None:
    """The first attempt of the batch reaches the table; its answer is a 500. The SDK's retry
    then meets the claim's own write (DuplicateItem): the claim token tells it from a peer's,
    so the firing is won, not lost."""
    keys = {"overlap": "skip"} if exclusive else {}
    ticker = started(cloud, every_minute("report", **keys))
    cloud.store().close(_fid("report", T0 - MINUTE), RunStatus.SUCCEEDED, now=T0)  # slot free
    operation = BATCH
    cloud.faults.inject(operation, DYNAMODB_INTERNAL, times=1, match=is_claim, deliver=True)

    answer = ticker.tick(T0).to_json()

    assert cloud.faults.injected[operation] == 1
    assert [status for _, status, _ in cloud.faults.delivered] == [200]  # the write took
    assert answer["counts"]["dispatched"] == 1, answer
    run = cloud.store().run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED
    assert cloud.faults.attempts["lambda.Invoke"] == 1


def test_a_claim_written_but_never_acknowledged_is_taken_over_after_its_lease(
    cloud: Cloud,
) -> None:
    """Every attempt fails, but the first one's write took: the tick sees an error and holds its
    watermark; the next tick finds the firing already claimed (its own claim, under another
    token) and leaves it; once the claim's lease has passed, the sweep takes it over and
    dispatches it. Late, and once."""
    ticker = started(cloud, every_minute("report"))
    cloud.faults.inject(BATCH, DYNAMODB_INTERNAL, times=1, match=is_claim, deliver=True)
    cloud.faults.inject(BATCH, DYNAMODB_INTERNAL, match=is_claim)

    failed = ticker.tick(T0).to_json()
    assert failed["counts"]["errors"] == 1 and failed["counts"]["dispatched"] == 0
    store = cloud.store()
    run = store.run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.CLAIMED

    cloud.faults.clear()
    clock: FixedClock = ticker.clock  # type: ignore[assignment]
    dispatched_at: dict[str, datetime] = {}
    for minute in range(1, 5):
        at = T0 + minute * MINUTE
        clock.set(at)
        ticker.tick(at)
        current = store.run(_fid("report", T0))
        if current is not None and current.status is RunStatus.DISPATCHED:
            dispatched_at.setdefault("report", at)
    assert dispatched_at["report"] >= T0 + timedelta(seconds=120)  # after the claim's lease
    assert cloud.faults.attempts["lambda.Invoke"] == 5  # T0 once, and T0+1..T0+4 once each


def test_a_skipped_range_after_held_claims_leaves_no_firing_without_a_record(
    cloud: Cloud,
) -> None:
    """Regression: a skipped range is one record keyed by its first firing. A tick that held its
    watermark (one job's claim failed for good) had claimed other jobs' firings after it; when
    the ticker then came back from an outage, the range of those jobs' missed firings started
    at a firing that had a record of its own, so the range was never written, and every other
    firing in it was silently lost, while the tick counted them skipped."""
    cron = (
        every_minute("held")
        + "  - name: quarter\n"
        + '    cron: "*/15 * * * * ?"\n'
        + '    service: "fault-target"\n'
        + "misfire.max: 5\n"
    )
    ticker = started(cloud, cron)
    cloud.faults.refuse_statements("ProvisionedThroughputExceeded", claim_statement_of("held"))
    assert ticker.tick(T0).to_json()["counts"]["errors"] == 1
    cloud.faults.clear()
    back = T0 + 11 * MINUTE  # the ticker was down for ten minutes
    ticker.clock.set(back)  # type: ignore[attr-defined]
    answer = ticker.tick(back).to_json()

    history = cloud.store().history("quarter", limit=1000)
    covered: Counter[datetime] = Counter()
    for record in history:
        first = datetime.fromisoformat(record.scheduled_time.replace("Z", "+00:00"))
        last = (
            datetime.fromisoformat(record.skipped_until.replace("Z", "+00:00"))
            if record.skipped_until
            else first
        )
        at = first
        while at <= last:
            covered[at] += 1
            at += timedelta(seconds=15)
    expected = [T0 + timedelta(seconds=15 * i) for i in range(12 * 4)]
    assert [at for at in expected if not covered[at]] == []
    range_records = [r for r in history if r.skipped_count]
    assert len(range_records) == 1 and range_records[0].reason == "misfire"
    assert range_records[0].skipped_count == 39  # quarter's 44 missed, less the latest (run)
    assert answer["counts"]["skipped"]["misfire"] == 39 + 10  # and held's 10, one range too


def test_a_region_s_first_tick_whose_claim_fails_for_good_still_owes_the_firing(
    cloud: Cloud,
) -> None:
    """Regression: a region's first tick starts at its own minute. When that tick held its
    watermark at its first firing (the claim failed past the retries), it wrote no watermark at
    all, so the next tick counted itself the region's first, started at its own minute, and the
    firing was silently lost."""
    clock = FixedClock(T0)
    ticker = cloud.ticker(cloud.write_cron(every_minute("report", misfire="fire_all")), clock=clock)
    cloud.faults.inject(BATCH, PROVISIONED_THROUGHPUT, match=is_claim)
    assert ticker.tick(T0).to_json()["counts"]["errors"] == 1
    store = cloud.store()
    assert store.control(SCOPE).watermark == T0  # held at the firing, but written

    cloud.faults.clear()
    clock.set(T0 + MINUTE)
    answer = ticker.tick(T0 + MINUTE).to_json()

    assert answer["counts"]["misfired"] == 1 and answer["counts"]["dispatched"] == 2
    run = store.run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED


MARKS = "dynamodb.BatchWriteItem"


def _is_marks(request: object) -> bool:
    """A BatchWriteItem of claim batches' marks items (``MARKS#<token>``)."""
    from tests.system.faults.injection import body

    writes = [w for ws in body(request).get("RequestItems", {}).values() for w in ws]  # type: ignore[arg-type]
    return any(
        w.get("PutRequest", {}).get("Item", {}).get("pk", {}).get("S", "").startswith("MARKS#")
        for w in writes
    )


def _ticks_past_the_lease(cloud: Cloud, ticker: object) -> None:
    clock: FixedClock = ticker.clock  # type: ignore[attr-defined]
    for minute in range(1, 5):
        clock.set(T0 + minute * MINUTE)
        ticker.tick(T0 + minute * MINUTE)  # type: ignore[attr-defined]


@pytest.mark.parametrize("deliver", [False, True], ids=["refused", "written-then-errored"])
def test_a_batch_s_marks_item_that_fails_is_written_on_its_runs_and_none_runs_twice(
    cloud: Cloud, deliver: bool
) -> None:
    """The marks item of a claim batch fails past the SDK's retries (or was written, its answer
    lost): the tick marks each run on its record instead, and no sweep past the lease takes a
    dispatched run over (each job's firing of T0 is invoked once)."""
    cron = every_minute("first") + every_minute("second").removeprefix("jobs:\n")
    ticker = started(cloud, cron)
    cloud.faults.inject(MARKS, DYNAMODB_INTERNAL, match=_is_marks, deliver=deliver)

    answer = ticker.tick(T0).to_json()

    assert answer["counts"]["dispatched"] == 2 and answer["counts"]["errors"] == 0, answer
    assert cloud.faults.injected[MARKS] == sdk_attempts()  # one call, its SDK attempts
    updates = [s for sent in cloud.faults.sent for s in sent if s["Statement"].startswith("UPDATE")]
    assert len(updates) == 2  # then each run's mark on its record
    for job in ("first", "second"):
        run = cloud.store().run(_fid(job, T0))
        assert run is not None and run.status is RunStatus.DISPATCHED
    cloud.faults.clear()
    _ticks_past_the_lease(cloud, ticker)
    assert cloud.faults.attempts["lambda.Invoke"] == 2 * 5  # T0 once, and 4 minutes each


def test_a_batch_marked_in_its_item_is_not_taken_over_past_its_lease(cloud: Cloud) -> None:
    """The usual way: a run marked only in its batch's item reads DISPATCHED, and the sweep,
    reading it past its lease, leaves it to its job's timeout."""
    ticker = started(cloud, every_minute("report"))
    ticker.tick(T0)
    items = cloud.dynamodb.scan(TableName=cloud.table)["Items"]
    assert any(item["pk"]["S"].startswith("MARKS#") for item in items)
    run = cloud.store().run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED
    _ticks_past_the_lease(cloud, ticker)
    assert cloud.faults.attempts["lambda.Invoke"] == 5
    run = cloud.store().run(_fid("report", T0))
    assert run is not None and run.status is RunStatus.DISPATCHED  # no completion yet
