"""How the operator path writes its audit record: after the action succeeded, one record with
who asked (:class:`Asking`: the reason, the identity the caller told, who writes), what, the
state before and after, and where (the region, the stack).

A record that cannot be written does not undo the action (it is done: undoing it could fail
too, and a retry would do it twice): the failure is logged as an error and said in the action's
answer as ``auditError``, which the CLI prints on stderr with exit code 1 and the console
shows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mini_scheduler.audit.base import AuditLog, AuditRecord, check_identity, check_reason

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
