"""The work that follows a started target to its end, on threads of its own: the local run
watches a flow's execution, and stops an ECS task and tells the recorder, as AWS would. At most
a few at once, counted until they end (the local run waits for them), and left as they are at
close."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Followers:
    """``name`` names the threads; ``initializer`` runs on each (the region it works for)."""

    def __init__(
        self,
        name: str,
        *,
        workers: int = 4,
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        self.closing = threading.Event()
        self._pool = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix=name,
            initializer=initializer,
            initargs=initargs,
        )
        self._lock = threading.Lock()
        self._running: set[Future[None]] = set()

    def follow(self, task: Callable[..., None], *args: object) -> bool:
        """Run ``task(*args)`` on a follower; False when they are closing (nothing runs)."""
        try:
            future = self._pool.submit(task, *args)
        except RuntimeError:
            return False
        with self._lock:
            self._running.add(future)
        future.add_done_callback(self._forget)
        return True

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._running.discard(future)

    def pending(self) -> int:
        """The targets followed that have not ended yet."""
        with self._lock:
            return len(self._running)

    def close(self) -> None:
        """Follow no more: what has not ended stays as it is."""
        self.closing.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
