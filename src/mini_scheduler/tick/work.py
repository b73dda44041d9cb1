"""The tick's workers: tasks that add tasks while the tick waits for them (a claimed batch submits
its dispatches), and the marks of dispatched firings, sent :data:`BATCH` at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from mini_scheduler.claims.base import MarkRequest

BATCH = 25  # claims or marks in one store request (DynamoDB's BatchExecuteStatement limit)


class Work:
    """The futures of one tick's writes; tasks may add more while it waits for them all."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []

    def submit(self, task: Callable[..., None], *args: object) -> None:
        future = self._pool.submit(task, *args)
        with self._lock:
            self._futures.append(future)

    def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds (real time) until no task runs, counting those the
        running ones add meanwhile: a claimed batch submits its dispatches, whose marks must be
        in before the caller flushes them. Errors are ``wait``'s."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            left = end - time.monotonic()
            if not pending or left <= 0:
                return
            wait(pending, timeout=left)

    def wait(self) -> None:
        """Wait for every task, those added meanwhile too; the first error raised is raised."""
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            if not pending:
                break
            wait(pending)
        for future in self._futures:
            future.result()


class Marks:
    """Marks of dispatched firings, written :data:`BATCH` at a time on the tick's workers."""

    def __init__(self, work: Work, write: Callable[[Sequence[MarkRequest]], None]) -> None:
        self.work = work
        self._write = write
        self._lock = threading.Lock()
        self._waiting: list[MarkRequest] = []

    def add(self, mark: MarkRequest) -> None:
        with self._lock:
            self._waiting.append(mark)
            if len(self._waiting) < BATCH:
                return
            batch, self._waiting = self._waiting, []
        self.work.submit(self._write, batch)

    def flush(self) -> None:
        with self._lock:
            batch, self._waiting = self._waiting, []
        if batch:
            self.work.submit(self._write, batch)
