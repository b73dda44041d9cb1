"""The tick's lanes and its marks (:mod:`mini_scheduler.tick.work`): a claimed batch's marks go
in one write as soon as its dispatches have answered, not when the tick ends; a dispatch that
answers late, or a tick that failed half-way, still gets its firing marked."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from mini_scheduler.claims.base import MarkRequest
from mini_scheduler.claims.records import JobStart
from mini_scheduler.model import Firing
from mini_scheduler.tick.work import BATCH, Marks, Work

HANG = 10  # seconds: a bound on what should take a fraction of one (a hang fails, not blocks)
AT = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _mark(n: int) -> MarkRequest:
    return MarkRequest(Firing(f"job-{n}", AT), AT, JobStart("job-target", "0 * * * * ?", {}))


class Written:
    """The mark writes, as the store would get them."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()
        self.event = threading.Event()

    def __call__(self, marks: Sequence[MarkRequest]) -> None:
        with self.lock:
            self.batches.append([m.firing.job for m in marks])
        self.event.set()


def test_drain_waits_for_the_tasks_a_running_task_adds() -> None:
    dispatched = threading.Event()
    release = threading.Event()

    with ThreadPoolExecutor(max_workers=4) as pool:
        work = Work(pool)

        def dispatch() -> None:
            release.wait(timeout=30)
            dispatched.set()

        def claimed_batch() -> None:
            work.submit(dispatch)  # as _fire_batch submits each dispatch

        work.submit(claimed_batch)
        threading.Timer(0.2, release.set).start()
        work.drain()
        assert dispatched.is_set()  # not only the batch: the dispatch it added


def test_a_batch_is_marked_in_one_write_when_its_last_dispatch_answers() -> None:
    written = Written()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        marks = Marks(work, written)
        batch = marks.expect(3)
        batch.done(_mark(1))
        batch.done(None)  # a dispatch that failed: nothing to mark
        assert not written.event.is_set()  # one still to answer: nothing written yet
        batch.done(_mark(3))
        assert written.event.wait(HANG)
        work.wait()
    assert written.batches == [["job-1", "job-3"]]


def test_batches_are_marked_apart_and_before_the_tick_ends() -> None:
    """The first batch's marks do not wait for the second batch's dispatches."""
    written = Written()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        marks = Marks(work, written)
        first, second = marks.expect(1), marks.expect(1)
        first.done(_mark(1))
        assert written.event.wait(HANG)
        assert written.batches == [["job-1"]]
        second.done(_mark(2))
        work.wait()
    assert written.batches == [["job-1"], ["job-2"]]


def test_a_long_batch_goes_every_batch_size_marks() -> None:
    written = Written()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        marks = Marks(work, written)
        batch = marks.expect(BATCH + 2)
        for n in range(BATCH + 2):
            batch.done(_mark(n))
        work.wait()
    assert [len(b) for b in written.batches] == [BATCH, 2]


def test_flush_writes_what_a_failed_tick_holds_and_a_late_mark_still_goes() -> None:
    written = Written()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        marks = Marks(work, written)
        batch = marks.expect(3)
        batch.done(_mark(1))
        marks.flush()  # the tick failed with two dispatches unanswered
        work.drain()
        assert written.batches == [["job-1"]]
        batch.done(_mark(2))  # one answers after all: marked at once, never held
        work.wait()
    assert written.batches == [["job-1"], ["job-2"]]


def test_a_batch_with_nothing_to_dispatch_writes_nothing() -> None:
    written = Written()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        marks = Marks(work, written)
        marks.expect(0)
        marks.flush()
        work.wait()
    assert written.batches == []


def test_settle_gives_up_at_its_timeout() -> None:
    """A task that never ends holds ``settle`` for its timeout, and no longer: settle returns
    (within a bound far above the timeout) while the task still runs, not before the timeout."""
    stuck, ended, returned = threading.Event(), threading.Event(), threading.Event()

    def never_ends() -> None:
        stuck.wait(3 * HANG)  # ends by itself only long after settle must have returned
        ended.set()

    with ThreadPoolExecutor(max_workers=2) as pool:
        work = Work(pool)
        work.submit(never_ends)
        settled = threading.Thread(target=lambda: (work.settle(timeout=0.2), returned.set()))
        started = time.monotonic()
        settled.start()
        try:
            assert returned.wait(HANG), "settle went on waiting past its timeout"
            assert time.monotonic() - started >= 0.2, "settle returned before its timeout"
            assert not ended.is_set()  # it gave up on the task: the task did not end
        finally:
            stuck.set()
            settled.join(HANG)
