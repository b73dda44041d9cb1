"""Dispatch: the winner of a claim hands the firing to its target.

Contract: ``dispatch`` returns once the target accepted the firing (a Lambda asynchronous
invoke answered 202; a Step Functions execution started, or already existed under the firing's
name; an ECS task started, or was found started by this firing), with a reference to show in
logs. For a target whose answer is the run's end (a queue, a topic or a bus accepted the
message; a webhook answered), it returns :class:`Ended`. It raises DispatchError, naming the
target and the cause, when the target refused the firing or could not be reached after the
SDK's retries.

A :class:`BatchDispatcher` also takes up to ``batch_size`` firings of one target in a request
(SendMessageBatch, PublishBatch, PutEvents), answering each firing on its own: a partly failed
batch is retried for its failed entries only, and an entry that still fails answers its
DispatchError.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from mini_scheduler.model import RunStatus


@dataclass(frozen=True, slots=True)
class Ended:
    """A dispatch whose answer ends the run: ``status`` SUCCEEDED (the message was accepted, the
    webhook answered 2xx), or FAILED with ``error`` (the webhook's status and the start of its
    body)."""

    reference: str
    status: RunStatus = RunStatus.SUCCEEDED
    error: str | None = None


Answer = str | Ended
"""What a dispatch answers: a reference to the started run, or the run's end."""


class Dispatcher(Protocol):
    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer: ...


@runtime_checkable
class BatchDispatcher(Protocol):
    batch_size: int
    """The most firings one request takes."""

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer: ...

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        """Each of ``firings`` (its firing id, its payload) dispatched to ``target``, at most
        ``batch_size``: one answer per firing, in order."""
        ...


@runtime_checkable
class Stoppable(Protocol):
    """A dispatcher whose runs can be stopped (``overlap: cancel_other``): a flow's execution,
    an ECS task."""

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """Stop the run ``firing_id`` started on ``target``, found as its dispatch made it (the
        execution's name, the task's ``startedBy``), saying ``reason``; what was stopped (the
        execution's or task's ARN, or that none was found: nothing runs). DispatchError when
        it cannot be stopped."""
        ...


class OnFirstUse:
    """A dispatcher made at its kind's first firing (``make``): a tick that starts none of its
    kind never builds its client. ``batch_size`` is the made one's; ``check`` says why a target
    may not be started (None: it may)."""

    def __init__(
        self,
        make: Callable[[], Dispatcher],
        batch_size: int = 1,
        check: Callable[[Target], str | None] | None = None,
    ) -> None:
        self._make = make
        self._check = check
        self._made: Dispatcher | None = None
        self._lock = threading.Lock()
        self.batch_size = batch_size

    def _dispatcher(self) -> Dispatcher:
        with self._lock:
            if self._made is None:
                self._made = self._make()
            return self._made

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        self._allowed(target)
        return self._dispatcher().dispatch(target, firing_id, payload)

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        try:
            self._allowed(target)
        except DispatchError as exc:
            return [exc] * len(firings)
        return Dispatchers({target.kind: self._dispatcher()}).dispatch_batch(target, firings)

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        return Dispatchers({target.kind: self._dispatcher()}).stop(target, firing_id, reason)

    def _allowed(self, target: Target) -> None:
        """Refuse a target this deployment may not start (``check``'s reason): cron.yaml's
        load refuses it already, and this holds it for a runtime schedule, a manual run and a
        webhook, which no IAM statement bounds."""
        problem = self._check(target) if self._check is not None else None
        if problem:
            raise DispatchError(f"{target.service[:200]}: not dispatched - {problem}")


class Dispatchers:
    """Picks the dispatcher for a target's kind."""

    def __init__(self, by_kind: Mapping[str, Dispatcher]) -> None:
        self._by_kind = dict(by_kind)
        # Checked once: a runtime Protocol check walks the class's attributes every time, and
        # a target's batch size is asked a firing each.
        self._batched = {
            kind: dispatcher
            for kind, dispatcher in self._by_kind.items()
            if isinstance(dispatcher, BatchDispatcher)
        }

    def _for(self, target: Target) -> Dispatcher:
        dispatcher = self._by_kind.get(target.kind)
        if dispatcher is None:
            raise DispatchError(f"no dispatcher for {target.kind} targets ({target.service})")
        return dispatcher

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        return self._for(target).dispatch(target, firing_id, payload)

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """Stop the run of ``firing_id`` on ``target`` (:class:`Stoppable`); DispatchError for a
        kind whose runs cannot be stopped."""
        dispatcher = self._for(target)
        if not isinstance(dispatcher, Stoppable):
            raise DispatchError(f"a {target.kind} target's run cannot be stopped: {target.service}")
        return dispatcher.stop(target, firing_id, reason)

    def batch_size(self, target: Target) -> int:
        """How many firings of ``target`` go in one request (1: each on its own)."""
        batched = self._batched.get(target.kind)
        return batched.batch_size if batched is not None else 1

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        """``firings`` of ``target`` in as few requests as its kind allows, an answer each."""
        try:
            dispatcher = self._for(target)
        except DispatchError as exc:
            return [exc] * len(firings)
        batched = self._batched.get(target.kind)
        if batched is not None:
            return batched.dispatch_batch(target, firings)
        answers: list[Answer | DispatchError] = []
        for firing_id, payload in firings:
            try:
                answers.append(dispatcher.dispatch(target, firing_id, payload))
            except DispatchError as exc:
                answers.append(exc)
        return answers
