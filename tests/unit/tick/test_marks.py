"""Before a tick waits for a later firing's second, the firings in flight are let finish and
their marks go: the wait counts the dispatches a claimed batch submits while it is waited for
(their marks were left for the next wait, up to a minute later, before)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from mini_scheduler.tick.work import Work

HANG = 10  # seconds: a bound on what should take a fraction of one (a hang fails, not blocks)


def test_settle_waits_for_the_tasks_a_running_task_adds() -> None:
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
        work.settle(timeout=30)
        assert dispatched.is_set()  # not only the batch: the dispatch it added


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
