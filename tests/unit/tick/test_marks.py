"""Before a tick waits for a later firing's second, the firings in flight are let finish and
their marks go: the wait counts the dispatches a claimed batch submits while it is waited for
(their marks were left for the next wait, up to a minute later, before)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from mini_scheduler.tick.execute import _Work


def test_settle_waits_for_the_tasks_a_running_task_adds() -> None:
    dispatched = threading.Event()
    release = threading.Event()

    with ThreadPoolExecutor(max_workers=4) as pool:
        work = _Work(pool)

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
    stuck = threading.Event()
    with ThreadPoolExecutor(max_workers=2) as pool:
        work = _Work(pool)
        work.submit(stuck.wait, 30)
        work.settle(timeout=0.05)
        assert not stuck.is_set()
        stuck.set()
