"""The audit trail of operator actions: :mod:`.base` (the record and the protocol),
:mod:`.cloudwatch` and :mod:`.memory` (the backends), :mod:`.trail` (how the operator path
writes one)."""

from mini_scheduler.audit.base import (
    ACTIONS,
    AuditLog,
    AuditRecord,
    check_identity,
    check_reason,
)
from mini_scheduler.audit.memory import MemoryAuditLog

__all__ = [
    "ACTIONS",
    "AuditLog",
    "AuditRecord",
    "MemoryAuditLog",
    "check_identity",
    "check_reason",
]
