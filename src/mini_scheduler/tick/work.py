"""The tick's workers, in three lanes so that no kind of write waits behind another: the claims
(a few workers: each claim is a batch of :data:`BATCH`), the dispatches (``DISPATCH_WORKERS``:
each firing's ``Invoke``), and the marks (a few workers). A claimed batch's winners go to the
dispatch lane as soon as its answer is in, and the batch's marks go in one write as soon as its
dispatches have answered: a tick's first ``Invoke`` leaves after its first claim batch, not
after every claim batch queued before it, and its marks are written while it dispatches, not
after its last ``Invoke``.

Tasks may add tasks while the tick waits for them all (a claimed batch submits its dispatches,
a batch's last dispatch its marks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from mini_scheduler.claims.base import MarkRequest

BATCH = 25  # claims or marks in one store request (DynamoDB's BatchExecuteStatement limit)
STORE_WORKERS = 4
"""Workers of the claim lane, and of the mark lane: a batch of 25 a request (an ``overlap: skip``
batch takes its slots first: two or three requests), four in flight keep ahead of
``DISPATCH_WORKERS`` dispatches (measured: two left a tick of skip jobs waiting on its claims;
more only add contention for the GIL)."""


class Work:
    """The futures of one tick's writes on its lanes (``pool`` the dispatches'; ``claims`` and
    ``marks`` default to it); tasks may add more while it waits for them all."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        *,
        claims: ThreadPoolExecutor | None = None,
        marks: ThreadPoolExecutor | None = None,
    ) -> None:
        self._pool = pool
        self._claims = claims or pool
        self._marks = marks or pool
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []

    def submit(self, task: Callable[..., None], *args: object) -> None:
        """``task`` on the dispatch lane."""
        self._add(self._pool.submit(task, *args))

    def claim(self, task: Callable[..., None], *args: object) -> None:
        """``task`` on the claim lane."""
        self._add(self._claims.submit(task, *args))

    def mark(self, task: Callable[..., None], *args: object) -> None:
        """``task`` on the mark lane."""
        self._add(self._marks.submit(task, *args))

    def _add(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.append(future)

    def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds (real time) until no task runs, counting those the
        running ones add meanwhile (a claimed batch's dispatches, their marks). Errors are
        :meth:`wait`'s."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            left = end - time.monotonic()
            if not pending or left <= 0:
                return
            wait(pending, timeout=left)

    def drain(self) -> None:
        """Wait for every task, those added meanwhile too; their errors are :meth:`wait`'s."""
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            if not pending:
                return
            wait(pending)

    def wait(self) -> None:
        """Wait for every task, those added meanwhile too; the first error raised is raised."""
        self.drain()
        for future in self._futures:
            future.result()


class Marks:
    """The marks of dispatched firings, written a claimed batch at a time on the mark lane:
    :meth:`expect` a batch's dispatches, and each one tells its :class:`Awaited` its mark
    (None: nothing to mark). :meth:`flush` writes whatever is left, whatever went wrong."""

    def __init__(self, work: Work, write: Callable[[Sequence[MarkRequest]], None]) -> None:
        self.work = work
        self._write = write
        self._lock = threading.Lock()
        self._open: list[Awaited] = []

    def expect(self, count: int) -> Awaited:
        """A batch of ``count`` dispatches to come."""
        awaited = Awaited(self, count)
        if count > 0:
            with self._lock:
                self._open.append(awaited)
        return awaited

    def _send(self, awaited: Awaited, marks: list[MarkRequest], *, last: bool) -> None:
        if last:
            with self._lock:
                if awaited in self._open:
                    self._open.remove(awaited)
        if marks:
            self.work.mark(self._write, marks)

    def flush(self) -> None:
        """Write the marks of every batch not yet written (a batch whose dispatches did not
        all answer: the tick failed), so that no firing dispatched goes unmarked."""
        with self._lock:
            left, self._open = self._open, []
        for awaited in left:
            awaited.close()


class Awaited:
    """One batch's dispatches, counted down; its marks go when the last one answers (or
    :data:`BATCH` of them are in: a long run of a job's missed firings)."""

    def __init__(self, marks: Marks, count: int) -> None:
        self._marks = marks
        self._left = count
        self._lock = threading.Lock()
        self._held: list[MarkRequest] = []
        self._closed = count <= 0

    def done(self, mark: MarkRequest | None) -> None:
        """One dispatch answered: its mark (None: it failed, or was never sent). A mark that
        comes after :meth:`close` goes at once: no dispatched firing is left unmarked."""
        with self._lock:
            if mark is not None:
                self._held.append(mark)
            self._left -= 1
            last = self._left <= 0 and not self._closed
            if not (last or self._closed or len(self._held) >= BATCH):
                return
            batch, self._held = self._held, []
            self._closed = True if last else self._closed
        self._marks._send(self, batch, last=last)

    def close(self) -> None:
        """Write what is held now, whatever is still to answer (a failed tick's last word)."""
        with self._lock:
            batch, self._held = self._held, []
            self._closed = True
        self._marks._send(self, batch, last=True)
