"""Issue 29 in the tick: a queue's, a topic's or a bus's firings go to their target a batch at a
time (never two targets in one batch), and a dispatch whose answer is the run's end closes the
run: SUCCEEDED, or FAILED with its retry deferred; an entry of a batch that failed fails alone.
A job's ``input`` is what its target receives, filled in from the firing."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from mini_scheduler.alerts import RecordingAlerts
from mini_scheduler.alerts.base import DEAD_LETTER
from mini_scheduler.dispatch.base import Answer, BatchDispatcher, Ended
from mini_scheduler.errors import DispatchError, StoreError
from mini_scheduler.jobs import Target
from mini_scheduler.model import RunStatus
from mini_scheduler.tick.dispatch import logged
from tests.unit.tick.harness import FakeDispatcher, rig

MINUTE = "2026-11-30T14:01:00Z"


class Batched(FakeDispatcher):
    """A queue's dispatcher: ten firings a request, each answered as its run's end. A firing id
    in ``refused`` fails alone; a target in ``answering`` ends its runs FAILED."""

    batch_size = 10

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[str, list[str]]] = []
        self.refused: set[str] = set()
        self.answering: set[str] = set()
        self._batch_lock = threading.Lock()

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        (answer,) = self.dispatch_batch(target, [(firing_id, payload)])
        if isinstance(answer, DispatchError):
            raise answer
        return answer

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        with self._batch_lock:
            self.batches.append((target.name, [firing_id for firing_id, _ in firings]))
        answers: list[Answer | DispatchError] = []
        for firing_id, payload in firings:
            if firing_id in self.refused:
                answers.append(DispatchError(f"SQS SendMessageBatch {target.name}: refused"))
                continue
            super().dispatch(target, firing_id, payload)
            if target.name in self.answering:
                answers.append(Ended(f"hook:{firing_id}", RunStatus.FAILED, "HTTP 503: busy"))
            else:
                answers.append(Ended(f"sqs:{target.name}:{firing_id}"))
        return answers


def _cron(*entries: str) -> str:
    return "jobs:\n" + "".join(f"  - {entry}\n" for entry in entries)


def _queue_jobs(count: int, queue: str = "jobs", prefix: str = "q") -> list[str]:
    return [
        f'{{name: "{prefix}-{i:02d}", cron: "0 * * * * ?", service: "sqs://{queue}"}}'
        for i in range(count)
    ]


def test_the_fake_is_a_batch_dispatcher() -> None:
    assert isinstance(Batched(), BatchDispatcher)


def test_a_queues_firings_go_ten_to_a_request_and_their_runs_end_succeeded() -> None:
    dispatcher = Batched()
    r = rig(_cron(*_queue_jobs(25)), dispatcher=dispatcher)
    summary = r.tick(MINUTE)
    assert summary["counts"]["dispatched"] == 25
    assert sorted(len(ids) for _, ids in dispatcher.batches) == [5, 10, 10]
    for firing_id in dispatcher.firing_ids:
        run = r.claims.run(firing_id)
        assert run is not None and run.status is RunStatus.SUCCEEDED
        assert run.started_at is not None and run.ended_at is not None
    assert r.metrics.totals["RunsSucceeded"] == 25


def test_two_queues_never_share_a_batch() -> None:
    dispatcher = Batched()
    r = rig(_cron(*_queue_jobs(6, "a", "a"), *_queue_jobs(6, "b", "b")), dispatcher=dispatcher)
    r.tick(MINUTE)
    for queue, ids in dispatcher.batches:
        assert {firing_id.split("-")[0] for firing_id in ids} == {queue}
    assert sum(len(ids) for _, ids in dispatcher.batches) == 12


def test_an_entry_that_failed_fails_alone_and_its_retry_is_deferred() -> None:
    dispatcher = Batched()
    dispatcher.refused = {"q-03@2026-11-30T14:01:00Z"}
    entries = _queue_jobs(5)
    entries[3] = entries[3].replace("}", ", retry: {retries: 2, backoff: 60}}")
    r = rig(_cron(*entries), dispatcher=dispatcher)
    summary = r.tick(MINUTE)
    assert summary["counts"]["dispatched"] == 4 and summary["counts"]["errors"] == 1
    failed = r.claims.run("q-03@2026-11-30T14:01:00Z")
    assert failed is not None and failed.status is RunStatus.FAILED
    assert "refused" in (failed.error or "")
    assert [d.firing.id for d in r.claims.pending_deferred("retry")] == [
        "q-03@2026-11-30T14:01:00Z#2"
    ]
    others = [r.claims.run(f"q-{i:02d}@2026-11-30T14:01:00Z") for i in (0, 1, 2, 4)]
    assert all(run is not None and run.status is RunStatus.SUCCEEDED for run in others)


def test_an_answer_that_is_a_failure_ends_the_run_failed_with_its_retry() -> None:
    dispatcher = Batched()
    dispatcher.answering = {"hooks"}
    r = rig(
        _cron(
            '{name: "hook", cron: "0 * * * * ?", service: "events://hooks", '
            "retry: {retries: 1, backoff: 30}}"
        ),
        dispatcher=dispatcher,
    )
    r.tick(MINUTE)
    run = r.claims.run("hook@2026-11-30T14:01:00Z")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.error == "HTTP 503: busy"
    assert [d.firing.id for d in r.claims.pending_deferred("retry")] == [
        "hook@2026-11-30T14:01:00Z#2"
    ]
    assert r.metrics.totals["RunsFailed"] == 1


def test_a_jobs_input_is_what_its_target_receives() -> None:
    dispatcher = Batched()
    r = rig(
        _cron(
            '{name: "shaped", cron: "0 * * * * ?", service: "sns://alerts", '
            "parameters: {team: ops}, input: {kind: nightly, id: '<firingId>', "
            "team: '<parameters.team>', try: '<attempt>', text: 'run <job> at <scheduledTime>'}}"
        ),
        dispatcher=dispatcher,
    )
    r.tick(MINUTE)
    ((_, _, body, _),) = dispatcher.calls
    assert body == {
        "kind": "nightly",
        "id": "shaped@2026-11-30T14:01:00Z",
        "team": "ops",
        "try": 1,
        "text": "run shaped at 2026-11-30T14:01:00Z",
    }


def test_a_final_failure_leaves_a_letter_on_the_jobs_dead_letter_queue() -> None:
    dispatcher = Batched()
    dispatcher.refused = {"export@2026-11-30T14:01:00Z"}
    alerts = RecordingAlerts()
    r = rig(
        _cron(
            '{name: "export", cron: "0 * * * * ?", service: "sqs://work", '
            "parameters: {day: today}, dead_letter: 'sqs://work-dlq'}",
            '{name: "calm", cron: "0 * * * * ?", service: "sqs://work", '
            "dead_letter: 'sqs://work-dlq'}",
        ),
        dispatcher=dispatcher,
        alerts=alerts,
    )
    r.tick(MINUTE)
    (letter,) = alerts.of(DEAD_LETTER)
    assert letter["queue"] == "sqs://work-dlq"
    assert letter["firingId"] == "export@2026-11-30T14:01:00Z"
    assert letter["status"] == "FAILED" and "refused" in letter["error"]
    assert letter["parameters"] == {"day": "today"}


def test_an_exclusive_queue_job_releases_its_slot_when_its_message_is_taken() -> None:
    """``overlap: skip`` holds the job's slot, which the store's close releases: the next
    minute's firing runs, it is not skipped for an overlap."""
    dispatcher = Batched()
    r = rig(
        _cron('{name: "solo", cron: "0 * * * * ?", service: "sqs://work", overlap: skip}'),
        dispatcher=dispatcher,
    )
    r.tick(MINUTE)
    summary = r.tick("2026-11-30T14:02:00Z")
    assert summary["counts"]["dispatched"] == 1, summary
    for minute in ("14:01", "14:02"):
        run = r.claims.run(f"solo@2026-11-30T{minute}:00Z")
        assert run is not None and run.status is RunStatus.SUCCEEDED
    state = r.claims.job_state("solo")
    assert state is not None and state.open_firing is None


def test_a_queue_firing_costs_its_claim_and_one_mark_no_close() -> None:
    """The end rides in the mark: the store is asked to close no run."""
    dispatcher = Batched()
    r = rig(_cron(*_queue_jobs(30)), dispatcher=dispatcher)
    closes: list[str] = []
    close = r.claims.close

    def counted(firing_id: str, *args: Any, **kwargs: Any) -> Any:
        closes.append(firing_id)
        return close(firing_id, *args, **kwargs)

    r.claims.close = counted  # type: ignore[method-assign]
    r.tick(MINUTE)
    assert closes == []
    assert all(
        (run := r.claims.run(f"q-{i:02d}@{MINUTE}")) is not None
        and run.status is RunStatus.SUCCEEDED
        for i in range(30)
    )


def test_one_entrys_trouble_never_costs_the_batchs_other_firings_their_marks() -> None:
    """A refused entry whose FAILED record raises (a bug, a store gone wrong): the queue took
    the other four, and they are ended, not left CLAIMED for a takeover to send again."""
    dispatcher = Batched()
    dispatcher.refused = {f"q-02@{MINUTE}"}
    r = rig(_cron(*_queue_jobs(5)), dispatcher=dispatcher)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the store went wrong")

    r.claims.fail = broken  # type: ignore[method-assign]
    summary = r.tick(MINUTE)
    assert summary["counts"]["errors"] >= 1
    for i in (0, 1, 3, 4):
        run = r.claims.run(f"q-{i:02d}@{MINUTE}")
        assert run is not None and run.status is RunStatus.SUCCEEDED, (i, run)


def test_an_exclusive_runs_close_that_failed_once_is_tried_again() -> None:
    """The close of an ``overlap: skip`` run is what frees its job's slot: a store that refuses
    it once (throttled) does not leave the job held until the sweep's timeout."""
    dispatcher = Batched()
    r = rig(
        _cron('{name: "solo", cron: "0 * * * * ?", service: "sqs://work", overlap: skip}'),
        dispatcher=dispatcher,
    )
    close, refused = r.claims.close, []

    def flaky(firing_id: str, *args: Any, **kwargs: Any) -> Any:
        if not refused:
            refused.append(firing_id)
            raise StoreError("DynamoDB UpdateItem: ProvisionedThroughputExceededException")
        return close(firing_id, *args, **kwargs)

    r.claims.close = flaky  # type: ignore[method-assign]
    r.ticker.executor.dispatching.ends._sleep = lambda _: None
    r.tick(MINUTE)
    assert refused == [f"solo@{MINUTE}"]
    run = r.claims.run(f"solo@{MINUTE}")
    assert run is not None and run.status is RunStatus.SUCCEEDED
    state = r.claims.job_state("solo")
    assert state is not None and state.open_firing is None


def test_a_target_outside_its_prefix_is_not_dispatched_whatever_brought_it() -> None:
    """cron.yaml's load refuses it; the dispatcher holds it too, for a runtime schedule or a
    manual run (a webhook has no IAM statement to stop it)."""
    from mini_scheduler.dispatch.base import OnFirstUse
    from mini_scheduler.jobs.names import parse_service
    from mini_scheduler.jobs.targets import TargetRules

    made = Batched()
    guarded = OnFirstUse(lambda: made, 10, TargetRules({"sqs": "app-"}).problem)
    outside = parse_service("sqs://other-queue")
    assert isinstance(outside, Target)
    (answer,) = guarded.dispatch_batch(outside, [("job@2026-11-30T14:01:00Z", {})])
    assert isinstance(answer, DispatchError) and "outside TargetQueuePrefix" in str(answer)
    inside = parse_service("sqs://app-queue")
    assert isinstance(inside, Target)
    assert isinstance(guarded.dispatch(inside, "job@2026-11-30T14:01:00Z", {}), Ended)
    assert made.firing_ids == ["job@2026-11-30T14:01:00Z"]


def test_a_failed_end_whose_mark_the_store_refused_is_left_to_the_runs_new_claimer() -> None:
    """A mark refused (a peer took the run over past its lease) answers like one written: the
    FAILED end it carried was not written here, so no retry is deferred and no final failure
    published here; the peer that holds the run decides."""
    dispatcher = Batched()
    dispatcher.answering = {"hooks"}
    alerts = RecordingAlerts()
    r = rig(
        _cron(
            '{name: "hook", cron: "0 * * * * ?", service: "events://hooks", '
            "retry: {retries: 1, backoff: 30}}",
            '{name: "last", cron: "0 * * * * ?", service: "events://hooks"}',
        ),
        dispatcher=dispatcher,
        alerts=alerts,
    )

    def refused(marks: Sequence[Any], *, now: Any) -> list[None]:
        return [None] * len(marks)  # nothing written: the runs stay as a peer left them

    r.claims.mark_many = refused  # type: ignore[method-assign]
    r.tick(MINUTE)
    assert r.claims.pending_deferred("retry") == []
    assert alerts.of("Job Run Failed") == []
    assert r.metrics.totals["RunsFailed"] == 0


def test_a_dispatch_line_says_the_targets_own_id_not_what_its_message_says() -> None:
    function, queue = Target("lambda", "report"), Target("sqs", "jobs.fifo")
    flow = Target("flow", "arn:aws:states:us-east-1:1:stateMachine:etl")
    execution = "arn:aws:states:us-east-1:1:execution:etl:job-2026"

    assert logged("lambda:report:5f0c-11", function) == "5f0c-11"
    assert logged("sqs:jobs.fifo:m-1", queue) == "m-1"
    assert logged(execution, flow) == execution  # an ARN is the target's own id already
    assert logged("lambda:other:5f0c-11", function) == "lambda:other:5f0c-11"
