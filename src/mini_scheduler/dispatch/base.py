"""Dispatch: the winner of a claim hands the firing to its target.

Contract: ``dispatch`` returns once the target accepted the firing (a Lambda asynchronous
invoke answered 202; a Step Functions execution started, or already existed under the firing's
name), with a reference to show in logs; it raises DispatchError, naming the target and the
cause, when the target refused it or could not be reached after the SDK's retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target


class Dispatcher(Protocol):
    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str: ...


class Dispatchers:
    """Picks the dispatcher for a target's kind (``lambda`` or ``flow``)."""

    def __init__(self, by_kind: Mapping[str, Dispatcher]) -> None:
        self._by_kind = dict(by_kind)

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        dispatcher = self._by_kind.get(target.kind)
        if dispatcher is None:
            raise DispatchError(f"no dispatcher for {target.kind} targets ({target.service})")
        return dispatcher.dispatch(target, firing_id, payload)
