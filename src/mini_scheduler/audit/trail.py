"""How the operator path writes its audit record: after the action succeeded, one record with
who asked (:class:`Asking`: the reason, the identity the caller told, who writes), what, the
state before and after, and where (the region, the stack).

A record that cannot be written does not undo the action (it is done: undoing it could fail
too, and a retry would do it twice): the failure is logged as an error and said in the action's
answer as ``auditError``, which the CLI prints on stderr with exit code 1 and the console
shows.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from mini_scheduler.audit.base import AuditLog, AuditRecord, check_identity, check_reason
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing

if TYPE_CHECKING:
    from mini_scheduler.clock import Clock
    from mini_scheduler.environment.base import EnvironmentStore

log = logging.getLogger("mini_scheduler.audit")


@dataclass(frozen=True, slots=True)
class Asking:
    """Who asks, besides the operator's name: why (``reason``), the caller's identity as told,
    and who writes the record (``via``: cli, console, local, a function's ARN)."""

    reason: str | None = None
    identity: str | None = None
    via: str | None = None

    @classmethod
    def of(cls, reason: Any = None, identity: Any = None, via: str | None = None) -> Asking:
        """Checked: EventError naming ``reason`` or ``identity`` when one is not text."""
        return cls(check_reason(reason), check_identity(identity), via)

    def event(self, reason: Any = None) -> dict[str, str]:
        """What an event to a ticker carries for its record: ``reason`` (checked) and this
        caller's ``identity``, those that are set."""
        said = {"reason": check_reason(reason), "identity": self.identity}
        return {key: value for key, value in said.items() if value is not None}


def run_state(answer: Mapping[str, Any]) -> dict[str, Any]:
    """A manual run's state after it, for its record: its firing id, status and mode."""
    return {k: answer[k] for k in ("firingId", "status", "mode") if k in answer}


class Trail:
    """The audit records of one region's operator path, written to ``log``."""

    def __init__(self, log_: AuditLog, *, region: str, stack: str | None, via: str) -> None:
        self.log = log_
        self.region = region
        self.stack = stack
        self.via = via

    def write(
        self,
        *,
        at: datetime,
        action: str,
        operator: str,
        asking: Asking,
        job: str | None = None,
        subject: str | None = None,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Write the record; None when it was kept, else why not (logged as an error)."""
        record = AuditRecord(
            at=at,
            action=action,
            operator=operator,
            region=self.region,
            stack=self.stack,
            identity=asking.identity,
            via=asking.via or self.via,
            job=job,
            subject=subject,
            before=before,
            after=after,
            reason=asking.reason,
        )
        try:
            self.log.append(record)
        except Exception as exc:  # the action is done: say so, never undo it
            log.error(
                "Audit record NOT written - %s by %s was done but is not in the audit trail %s: %s",
                action,
                operator,
                self.log.name,
                exc,
            )
            return f"{action} done, but its audit record was not written to {self.log.name}: {exc}"
        return None


class Audited:
    """The operator path's side of the audit trail: a request's :class:`Asking`, a manual
    firing that keeps its reason, and the record written after an action."""

    audit: Trail | None = None
    clock: Clock
    _asking: Asking = Asking()

    def asked(self, reason: Any = None, identity: Any = None, via: str | None = None) -> Self:
        """This operator path for one request: its reason, the identity its caller told and
        who writes its audit record (EventError naming a bad reason or identity)."""
        asked = copy.copy(self)
        asked._asking = Asking.of(reason, identity, via)
        return asked

    @property
    def asking(self) -> Asking:
        """Who asks through this operator path (the console's: its identity)."""
        return self._asking

    def because(self, reason: Any) -> Self:
        """This operator path for one request with ``reason``, the caller kept."""
        asking = self._asking
        return self.asked(reason, asking.identity, asking.via)

    def manual_firing(
        self, job: str, operator: str, parameters: Mapping[str, Any], reruns: str | None = None
    ) -> Firing:
        """A manual run asked now, with the request's reason (kept on its run record)."""
        reason = self._asking.reason
        now = self.clock.now()
        return Firing.manual_run(
            job, now, operator, parameters, reruns=reruns, operator_reason=reason
        )

    def _audited(
        self, answer: dict[str, Any], action: str, operator: str, **fields: Any
    ) -> dict[str, Any]:
        """``answer``, after the action's audit record was written (``auditError`` when not)."""
        if self.audit is not None:
            at = self.clock.now()
            error = self.audit.write(
                at=at, action=action, operator=operator, asking=self._asking, **fields
            )
            if error is not None:
                answer["auditError"] = error
        return answer


def stored_active(store: EnvironmentStore) -> str | None:
    """The active environment a store holds before it is written, for the record (None: none,
    or unread: the write still goes ahead)."""
    with suppress(StoreError):
        return store.get()
    return None
